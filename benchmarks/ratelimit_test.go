package benchmarks

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsratelimiter "github.com/failsafe-go/failsafe-go/ratelimiter"
	uberratelimit "go.uber.org/ratelimit"
	"golang.org/x/time/rate"

	"github.com/faf87a20/resilience"
)

// The rate limiter rows measure admissions that find their token there.
// Every limiter gets a token each nanosecond, faster than any call comes,
// so no row measures a refusal or a wait: only the bookkeeping of taking
// a token.
const (
	tokensPerSecond = 1e9
	benchBurst      = 1000
)

// clockEpoch is the origin of the baselines' clock readings.
var clockEpoch = time.Now()

// allower is one library's "take a token now" call.
type allower struct {
	name  string
	allow func() bool
}

func allowers() []allower {
	ours := resilience.NewRateLimiter(tokensPerSecond, benchBurst)
	xrate := rate.NewLimiter(tokensPerSecond, benchBurst)
	// uber-go/ratelimit only blocks: Take sleeps until the next slot. At a
	// slot each nanosecond, a call always comes after its slot, so Take
	// never sleeps and the row measures its bookkeeping alone.
	uber := uberratelimit.New(tokensPerSecond)
	smooth := fsratelimiter.NewSmooth[any](tokensPerSecond, time.Second)
	bursty := fsratelimiter.NewBursty[any](tokensPerSecond, time.Second)
	var word atomic.Int64
	return []allower{
		// Two baselines, the floors of any exact limiter: one reading of
		// the monotonic clock, which every call must take; and a reading
		// with a compare-and-swap of one shared word, the least a limiter
		// whose state is one word (GCRA's, ours) does.
		{"clock-read", func() bool { return time.Since(clockEpoch) > 0 }},
		{"clock+CAS", func() bool {
			t := int64(time.Since(clockEpoch))
			for {
				old := word.Load()
				if word.CompareAndSwap(old, max(old, t)+1) {
					return true
				}
			}
		}},
		{"resilience", ours.Allow},
		{"x/time/rate", xrate.Allow},
		{"uber-go/ratelimit", func() bool { uber.Take(); return true }},
		{"failsafe-go-smooth", smooth.TryAcquirePermit},
		{"failsafe-go-bursty", bursty.TryAcquirePermit},
	}
}

func BenchmarkRateLimitAllow(b *testing.B) {
	for _, a := range allowers() {
		b.Run(a.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.allow()
			}
		})
	}
}

func BenchmarkRateLimitAllowParallel(b *testing.B) {
	for _, a := range allowers() {
		b.Run(a.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					a.allow()
				}
			})
		})
	}
}

// BenchmarkRateLimitGuarded runs a call through a policy made of a rate
// limiter alone.
func BenchmarkRateLimitGuarded(b *testing.B) {
	ctx := context.Background()
	b.Run("resilience", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewRateLimiter(tokensPerSecond, benchBurst))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("failsafe-go-smooth", func(b *testing.B) {
		ex := failsafe.With[int](fsratelimiter.NewSmooth[int](tokensPerSecond, time.Second))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(work)
		}
	})
}

// liveKeys is how many keys the keyed row keeps live.
const liveKeys = 10_000

func userKeys() []string {
	keys := make([]string, liveKeys)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkRateLimitKeyed takes a token for one of 10,000 users in turn.
// A key comes back every 10,000 calls, long before its bucket could have
// refilled at 1,000 tokens a second, and its burst is never spent, so all
// keys stay live. No peer has a keyed limiter; the x/time/rate row is the
// usual hand-made one, a sync.Map from key to limiter.
func BenchmarkRateLimitKeyed(b *testing.B) {
	const perKey, perKeyBurst = 1000, 1_000_000
	keys := userKeys()
	b.Run("resilience", func(b *testing.B) {
		l := resilience.NewKeyedRateLimiter[string](perKey, perKeyBurst)
		for _, k := range keys {
			l.Allow(k)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Allow(keys[i])
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
	b.Run("x/time/rate", func(b *testing.B) {
		var m sync.Map
		allow := func(k string) bool {
			v, ok := m.Load(k)
			if !ok {
				v, _ = m.LoadOrStore(k, rate.NewLimiter(perKey, perKeyBurst))
			}
			return v.(*rate.Limiter).Allow()
		}
		for _, k := range keys {
			allow(k)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			allow(keys[i])
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
}

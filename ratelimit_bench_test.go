package resilience_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/faf87a20/resilience"
)

// BenchmarkRateLimiter measures admissions that find their token there:
// the limiter's cost beside the clock reading it cannot do without.
func BenchmarkRateLimiter(b *testing.B) {
	ctx := context.Background()
	const fast = 1e9 // a token every nanosecond: every call finds one
	b.Run("Allow", func(b *testing.B) {
		l := resilience.NewRateLimiter(fast, 1000)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("Allow-parallel", func(b *testing.B) {
		l := resilience.NewRateLimiter(fast, 1000)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow()
			}
		})
	})
	b.Run("Allow-refused", func(b *testing.B) {
		l := resilience.NewRateLimiter(1, 1)
		l.Allow()
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewRateLimiter(fast, 1000))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Keyed-10000-keys", func(b *testing.B) {
		// A key comes back every 10,000 calls, sooner than its bucket
		// refills and before its burst is spent: all 10,000 stay live.
		l := resilience.NewKeyedRateLimiter[string](1000, 1_000_000)
		keys := make([]string, 10000)
		for i := range keys {
			keys[i] = "user-" + strconv.Itoa(i)
			l.Allow(keys[i])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Allow(keys[i])
			i++
			if i == len(keys) {
				i = 0
			}
		}
	})
}

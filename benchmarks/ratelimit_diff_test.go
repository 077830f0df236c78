package benchmarks

import (
	"context"
	"math"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/faf87a20/resilience"
)

// setClock is a resilience.Clock whose time the test sets.
type setClock struct{ t time.Time }

func (c *setClock) Now() time.Time { return c.t }

func (c *setClock) WithDeadline(parent context.Context, _ time.Time) (context.Context, context.CancelFunc) {
	return context.WithCancel(parent)
}

// The fuzzed interval between tokens, in nanoseconds, has two special
// values: no refill at all, and no limit.
const (
	intervalFrozen    = 0
	intervalUnlimited = math.MaxUint32
)

// diffUnits are the units a fuzzed step of the clock is counted in, so that
// arrivals land both on and next to the moments tokens come back.
func diffUnit(sel byte, interval int64) int64 {
	switch sel % 4 {
	case 0:
		return 1
	case 1:
		return max(interval/4, 1)
	case 2:
		return max(interval, 1)
	}
	return int64(time.Millisecond)
}

// FuzzRateLimiterMatchesXTimeRate drives a resilience.RateLimiter and an
// x/time/rate Limiter with the same rate and burst, and the same arrivals
// at the same times on a clock that never goes back, and requires the same
// decision for every call, but for the one rounding rule the RateLimiter
// documents: x/time/rate counts tokens in floating point and truncates the
// wait it computes to whole nanoseconds, so it may admit a call that comes
// 1 ns before its tokens are back, which the RateLimiter, exact to the
// nanosecond, refuses. Where that happens the test makes the RateLimiter
// take the tokens too (a reservation), so both go on from the same state.
//
// Each op is four bytes: n (1 to burst+1), a step of the clock in two bytes,
// and the step's unit (1 ns, a quarter interval, an interval, 1 ms).
func FuzzRateLimiterMatchesXTimeRate(f *testing.F) {
	f.Add(uint32(1_000_000), uint8(3), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 1, 1, 0, 4, 1, 0, 0, 1, 2})
	f.Add(uint32(333_333_333), uint8(1), []byte{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 1, 1, 0, 0, 4, 1, 0, 0, 3, 1, 0, 255, 255, 0})
	f.Add(uint32(3), uint8(200), []byte{100, 0, 0, 0, 99, 0, 0, 0, 5, 1, 44, 0, 200, 0, 200, 2, 0, 0, 1, 0})
	f.Add(uint32(intervalFrozen), uint8(2), []byte{0, 0, 0, 0, 0, 255, 255, 3, 0, 0, 0, 0, 1, 0, 0, 0})
	f.Add(uint32(intervalUnlimited), uint8(0), []byte{0, 0, 0, 0, 9, 0, 0, 0})
	f.Add(uint32(7), uint8(0), []byte{0, 0, 0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, interval uint32, burst uint8, ops []byte) {
		clk := &setClock{t: time.Unix(1_700_000_000, 0)}
		var (
			ours  *resilience.RateLimiter
			limit rate.Limit
			iv    = int64(interval)
		)
		switch interval {
		case intervalFrozen:
			ours, limit = resilience.NewRateLimiter(0, int(burst), resilience.WithClock(clk)), 0
		case intervalUnlimited:
			ours, limit = resilience.NewRateLimiter(resilience.RateUnlimited, int(burst), resilience.WithClock(clk)), rate.Inf
		default:
			ours = resilience.NewRateLimiter(1e9/float64(iv), int(burst), resilience.WithClock(clk))
			if got := math.Round(1e9 / ours.Rate()); got != float64(iv) {
				t.Fatalf("a rate of a token every %d ns comes back as one every %v ns", iv, got)
			}
			limit = rate.Limit(ours.Rate())
		}
		theirs := rate.NewLimiter(limit, int(burst))

		// tat is the exact state of the bucket, kept here to tell the
		// rounding rule from a real disagreement: at t the bucket holds
		// burst − (tat − t)/interval tokens, when tat > t.
		var tat, now int64
		early := 0
		tau := iv * int64(burst)
		for i := 0; len(ops) >= 4 && i < 500; ops, i = ops[4:], i+1 {
			n := 1 + int(ops[0])%(int(burst)+1)
			now += (int64(ops[1])<<8 | int64(ops[2])) * diffUnit(ops[3], iv)
			clk.t = time.Unix(1_700_000_000, now)

			got, want := ours.AllowN(n), theirs.AllowN(clk.t, n)
			next := max(tat, now) + int64(n)*iv
			if got == want {
				if got {
					tat = next
				}
				continue
			}
			wait := next - now - tau // > 0: how long until the tokens are back
			normal := interval != intervalFrozen && interval != intervalUnlimited
			if got || !normal || wait != 1 || n > int(burst) {
				t.Fatalf("step %d at %d ns, %d tokens (interval %d ns, burst %d): resilience says %v, x/time/rate %v; the tokens are back in %d ns",
					i, now, n, iv, burst, got, want, wait)
			}
			// The documented rounding: x/time/rate admitted a call 1 ns
			// early. Book the same tokens here, so both go on alike.
			if r := ours.ReserveN(n); !r.OK() || r.Delay() != time.Nanosecond {
				t.Fatalf("step %d: reserving %d tokens 1 ns early: ok %v, delay %v", i, n, r.OK(), r.Delay())
			}
			tat = next
			early++
		}
		if early > 0 {
			t.Logf("x/time/rate admitted %d calls 1 ns early", early)
		}
	})
}

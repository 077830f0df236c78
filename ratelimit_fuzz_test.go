package resilience_test

import (
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

// tokenBucket is the reference the limiter is held to: the textbook token
// bucket, counted in nanoseconds of credit (a token is interval of
// credit), filled by elapsed time up to burst tokens, for a clock that
// never goes back.
type tokenBucket struct {
	credit, max, interval, last int64
}

func newTokenBucket(interval int64, burst int) *tokenBucket {
	return &tokenBucket{credit: interval * int64(burst), max: interval * int64(burst), interval: interval}
}

func (b *tokenBucket) at(t int64) {
	b.credit = min(b.max, b.credit+t-b.last)
	b.last = t
}

// take takes n tokens at t if they are there, or books them anyway when
// force is set (a reservation), and returns the wait until they are.
func (b *tokenBucket) take(t int64, n int, force bool) (ok bool, wait int64) {
	b.at(t)
	cost := int64(n) * b.interval
	if cost > b.max {
		return false, 0
	}
	if cost <= b.credit || force {
		b.credit -= cost
		return true, max(-b.credit, 0)
	}
	return false, 0
}

func (b *tokenBucket) tokens(t int64) float64 {
	b.at(t)
	return float64(b.credit) / float64(b.interval)
}

// fuzzOp is one step of a fuzzed run: the clock moves by step·unit
// nanoseconds, then the limiter is asked for n tokens in one of the ways.
type fuzzOp struct {
	kind byte
	n    int
	step int64
}

// fuzzOps decodes ops four bytes a step: the way, n, and the step.
func fuzzOps(ops []byte, burst int) []fuzzOp {
	var out []fuzzOp
	for ; len(ops) >= 4; ops = ops[4:] {
		out = append(out, fuzzOp{kind: ops[0], n: int(ops[1]) % (burst + 2), step: int64(ops[2])<<8 | int64(ops[3])})
	}
	return out
}

// FuzzRateLimiterMatchesTokenBucket drives the limiter and the textbook
// token bucket with the same calls at the same times and requires the
// same answers: every decision, every count of tokens, every wait, to
// the nanosecond.
func FuzzRateLimiterMatchesTokenBucket(f *testing.F) {
	f.Add(uint64(1_000_000), uint8(3), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 1, 0, 3, 1, 0, 1, 2, 0, 40, 0})
	f.Add(uint64(333_333_333), uint8(1), []byte{0, 0, 0, 0, 0, 0, 0, 1, 3, 1, 0, 0, 7, 1, 0, 0, 1, 1, 255, 255})
	f.Fuzz(func(t *testing.T, interval uint64, burst uint8, ops []byte) {
		iv := int64(interval%10_000_000_000) + 1
		clk := newManualClock()
		l := resilience.NewRateLimiter(1e9/float64(iv), int(burst), resilience.WithClock(clk))
		if l.Rate() != 1e9/float64(iv) {
			t.Fatalf("Rate() = %v, want %v", l.Rate(), 1e9/float64(iv))
		}
		ref := newTokenBucket(iv, int(burst))
		unit := max(iv/256, 1)
		var now int64
		for i, op := range fuzzOps(ops, int(burst)) {
			clk.Add(time.Duration(op.step * unit))
			now += op.step * unit
			switch op.kind % 4 {
			case 0:
				want, _ := ref.take(now, 1, false)
				if got := l.Allow(); got != want {
					t.Fatalf("op %d at %dns: Allow() = %v, want %v", i, now, got, want)
				}
			case 1:
				want, _ := ref.take(now, op.n, false)
				if got := l.AllowN(op.n); got != want {
					t.Fatalf("op %d at %dns: AllowN(%d) = %v, want %v", i, now, op.n, got, want)
				}
			case 2:
				if got, want := l.Tokens(), ref.tokens(now); got != want {
					t.Fatalf("op %d at %dns: Tokens() = %v, want %v", i, now, got, want)
				}
			case 3:
				r := l.ReserveN(op.n)
				ok, wait := ref.take(now, op.n, true)
				if r.OK() != ok || (ok && r.Delay() != time.Duration(wait)) {
					t.Fatalf("op %d at %dns: ReserveN(%d) = %v after %v, want %v after %v", i, now, op.n, r.OK(), r.Delay(), ok, time.Duration(wait))
				}
				if ok && op.kind&4 != 0 { // changed its mind at once: all back
					r.Cancel()
					ref.credit += int64(op.n) * iv
				}
			}
		}
	})
}

// FuzzRateLimiterClockGoingBack moves the clock back and forth and
// requires that going back never adds a token, and that coming forward
// again to where it was finds no more tokens than there were.
func FuzzRateLimiterClockGoingBack(f *testing.F) {
	f.Add(uint64(1_000_000), uint8(2), []byte{1, 2, 0, 0, 0, 1, 2, 0, 1, 1, 0, 0, 128, 0, 9, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, interval uint64, burst uint8, ops []byte) {
		iv := int64(interval%10_000_000_000) + 1
		clk := newManualClock()
		l := resilience.NewRateLimiter(1e9/float64(iv), int(burst), resilience.WithClock(clk))
		unit := max(iv/256, 1)
		for i, op := range fuzzOps(ops, int(burst)) {
			d := time.Duration(op.step * unit)
			if op.kind%2 == 0 {
				clk.Add(d)
				l.AllowN(op.n)
				continue
			}
			before := l.Tokens()
			clk.Add(-d)
			if got := l.Tokens(); got > before {
				t.Fatalf("op %d: back %v, Tokens() = %v, was %v", i, d, got, before)
			}
			for range op.kind / 2 % 4 {
				l.AllowN(op.n) // while the clock is back
			}
			clk.Add(d)
			if got := l.Tokens(); got > before || got > float64(burst) {
				t.Fatalf("op %d: back %v and forward again, Tokens() = %v, was %v", i, d, got, before)
			}
		}
	})
}

// FuzzKeyedRateLimiterMatchesOneLimiterAKey drives a keyed limiter, which
// forgets keys whose buckets are full, and one RateLimiter a key, which
// forgets nothing, with the same calls, and requires the same answers.
func FuzzKeyedRateLimiterMatchesOneLimiterAKey(f *testing.F) {
	f.Add(uint64(1_000_000), uint8(2), []byte{0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 4, 0, 2, 2, 0, 0, 0, 1, 0, 9})
	f.Fuzz(func(t *testing.T, interval uint64, burst uint8, ops []byte) {
		iv := int64(interval%1_000_000_000) + 1
		clk := newManualClock()
		keyed := resilience.NewKeyedRateLimiter[byte](1e9/float64(iv), int(burst), resilience.WithClock(clk))
		single := map[byte]*resilience.RateLimiter{}
		unit := max(iv/64, 1)
		for i, op := range fuzzOps(ops, int(burst)) {
			clk.Add(time.Duration(op.step * unit))
			key := op.kind % 16
			if single[key] == nil {
				single[key] = resilience.NewRateLimiter(1e9/float64(iv), int(burst), resilience.WithClock(clk))
			}
			if got, want := keyed.AllowN(key, op.n), single[key].AllowN(op.n); got != want {
				t.Fatalf("op %d: AllowN(%d, %d) = %v, want %v", i, key, op.n, got, want)
			}
			if got, want := keyed.Tokens(key), single[key].Tokens(); got != want {
				t.Fatalf("op %d: Tokens(%d) = %v, want %v", i, key, got, want)
			}
		}
	})
}

package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/big"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// farMessage is the error of a booking whose tokens would come too far
// ahead.
const farMessage = "resilience: rate limited: the tokens would come more than 36 years from now"

// TestRateLimiterFarBookingsNeverWrap books 1e9 tokens ten times over on a
// limiter of one token a second and a burst of 1e9, so that the tokens
// booked last would come three centuries ahead, in every way a booking can
// be made. The time a bucket is full again must never wrap round to the
// past: the second booking is the last one made (its tokens come in 31
// years), the others are refused with an error matching ErrRateLimited, and
// the bucket stays empty.
func TestRateLimiterFarBookingsNeverWrap(t *testing.T) {
	const n = 1e9
	single := func() limiter {
		l := resilience.NewRateLimiter(1, n)
		return limiter{func(ctx context.Context) error { return l.WaitN(ctx, n) }, l.Allow, l.Tokens}
	}
	keyed := func() limiter {
		l := resilience.NewKeyedRateLimiter[string](1, n)
		return limiter{func(ctx context.Context) error { return l.WaitN(ctx, "k", n) },
			func() bool { return l.Allow("k") }, func() float64 { return l.Tokens("k") }}
	}
	tests := []struct {
		name string
		make func() limiter
	}{
		{"RateLimiter.ReserveN", func() limiter {
			l := resilience.NewRateLimiter(1, n)
			return limiter{func(context.Context) error {
				if r := l.ReserveN(n); !r.OK() {
					return errNotBooked
				}
				return nil
			}, l.Allow, l.Tokens}
		}},
		{"RateLimiter.WaitN", single},
		{"RateLimiter.WaitN, a deadline in 300 years", func() limiter { return withFarDeadline(single()) }},
		{"KeyedRateLimiter.WaitN", keyed},
		{"KeyedRateLimiter.WaitN, a deadline in 300 years", func() limiter { return withFarDeadline(keyed()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := tc.make()
				ctx, cancel := context.WithCancel(context.Background())
				errs := make([]error, 10)
				var wg sync.WaitGroup
				for i := range errs {
					// Each booking that waits waits in its own goroutine,
					// in turn.
					wg.Go(func() { errs[i] = l.book(ctx) })
					synctest.Wait()
				}
				assert.False(t, l.allow(), "Allow after the far bookings")
				assert.Equal(t, -1e9, l.tokens(), "two bookings of 1e9 tokens, no more")
				cancel()
				wg.Wait()
				require.NoError(t, errs[0])
				if errs[1] != nil {
					assert.ErrorIs(t, errs[1], context.Canceled, "the second booking waits 31 years")
				}
				for i, err := range errs[2:] {
					if errors.Is(err, errNotBooked) {
						continue
					}
					require.ErrorIs(t, err, resilience.ErrRateLimited, "booking %d", i+2)
					assert.Equal(t, farMessage, err.Error(), "booking %d", i+2)
				}
			})
		})
	}
}

var errNotBooked = errors.New("reservation not OK")

// limiter is a RateLimiter, or a KeyedRateLimiter's key, as the tests of
// far bookings see it.
type limiter struct {
	book   func(ctx context.Context) error // books n tokens, waiting for them
	allow  func() bool
	tokens func() float64
}

// withFarDeadline makes l book under a deadline 300 years ahead, past the
// largest time.Duration.
func withFarDeadline(l limiter) limiter {
	book := l.book
	l.book = func(ctx context.Context) error {
		ctx, cancel := context.WithDeadline(ctx, time.Now().AddDate(300, 0, 0))
		defer cancel()
		return book(ctx)
	}
	return l
}

// TestRateLimiterLargestBurst: a burst of the largest int is counted
// without overflow, by a RateLimiter and by a KeyedRateLimiter's key:
// AllowN(1) is Allow(), and the whole burst taken at once leaves nothing.
func TestRateLimiterLargestBurst(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		steps []rateStep
	}{
		{"rate 0: AllowN(1) as Allow", 0, []rateStep{{0, 1, true}, {0, -1, true}, {0, 1, true}}},
		{"rate 0: the whole burst, then nothing", 0, []rateStep{{0, math.MaxInt, true}, {0, -1, false}, {0, 1, false}, {time.Hour, -1, false}}},
		{"rate 0: one, all but one, then nothing", 0, []rateStep{{0, -1, true}, {0, math.MaxInt - 1, true}, {0, -1, false}, {0, 1, false}}},
		{"rate 0: the burst twice", 0, []rateStep{{0, math.MaxInt, true}, {0, math.MaxInt, false}, {0, -1, false}}},
		{"unlimited", resilience.RateUnlimited, []rateStep{{0, 1, true}, {0, math.MaxInt, true}, {0, -1, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewRateLimiter(tc.rate, math.MaxInt, resilience.WithClock(clk))
			keyed := resilience.NewKeyedRateLimiter[int](tc.rate, math.MaxInt, resilience.WithClock(clk))
			for i, s := range tc.steps {
				clk.Add(s.advance)
				var got, gotKeyed bool
				if s.n < 0 {
					got, gotKeyed = l.Allow(), keyed.Allow(7)
				} else {
					got, gotKeyed = l.AllowN(s.n), keyed.AllowN(7, s.n)
				}
				assert.Equal(t, s.want, got, "step %d: AllowN(%d) after %v", i, s.n, s.advance)
				assert.Equal(t, s.want, gotKeyed, "step %d: keyed AllowN(%d) after %v", i, s.n, s.advance)
			}
		})
	}
}

// gcraModel is the reference the limiter is held to over its whole range:
// the generic cell rate algorithm written from its definition in integers
// that cannot overflow. Its state is the theoretical arrival time tat;
// taking n tokens at t moves it to tat' = max(tat, t) + n·T, which is
// allowed at once iff t ≥ tat' − τ (τ = burst·T), and booked ahead, by a
// reservation, iff tat' − τ − t ≤ 2^60 ns, the limiter's documented
// horizon. A rate of 0 is T = 1 and τ = burst at a time that never moves:
// nothing is ever booked ahead.
type gcraModel struct {
	tat, interval, tau *big.Int
	burst              uint64
	frozen             bool
}

func newGCRAModel(interval int64, burst int, frozen bool) *gcraModel {
	iv := big.NewInt(interval)
	return &gcraModel{tat: new(big.Int), interval: iv, tau: new(big.Int).Mul(iv, new(big.Int).SetUint64(uint64(burst))),
		burst: uint64(burst), frozen: frozen}
}

var horizon = big.NewInt(1 << 60)

// take takes n tokens at t if they are there within maxWait (nil: no
// bound but the horizon), and returns whether it did, the wait until they
// are there, and tat after.
func (m *gcraModel) take(t int64, n int, maxWait *big.Int) (ok bool, wait, after *big.Int) {
	if m.frozen {
		t, maxWait = 0, new(big.Int)
	}
	if uint64(n) > m.burst {
		return false, nil, nil
	}
	bt := big.NewInt(t)
	next := new(big.Int).Mul(big.NewInt(int64(n)), m.interval)
	next.Add(next, bigMax(m.tat, bt))
	wait = new(big.Int).Sub(next, m.tau)
	wait.Sub(wait, bt)
	if wait.Cmp(horizon) > 0 || (maxWait != nil && wait.Cmp(maxWait) > 0) {
		return false, wait, nil
	}
	m.tat = next
	return true, wait, next
}

func (m *gcraModel) tokens(t int64) float64 {
	if m.frozen {
		t = 0
	}
	bt := big.NewInt(t)
	num := new(big.Int).Sub(bigMax(m.tat, bt), bt)
	num.Sub(m.tau, num)
	f, _ := new(big.Float).SetInt(num).Float64()
	return f / float64(m.interval.Int64())
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// modelReservation is a reservation as the model sees it.
type modelReservation struct {
	r                 *resilience.Reservation
	ok                bool
	act               int64    // when its tokens are there
	after             *big.Int // the model's tat after the booking
	cost              int64
	cancelled, frozen bool
}

// FuzzRateLimiterMatchesGCRA drives a RateLimiter, a KeyedRateLimiter's
// key (checked while the clock only goes forward, as a forgotten key comes
// back no fuller than at the last sweep) and the reference model with the
// same calls at the same times, over the whole range of rates, bursts,
// token counts and times, the clock going back as well as forward, and
// requires the same answers: every decision, every count of tokens, every
// delay. A booking whose time would wrap round shows as a decision the
// model does not make.
//
// An interval of 0 is a rate of 0. Each op is four bytes: the call (Allow,
// AllowN, ReserveN, ReserveN and Cancel, Cancel the last reservation,
// Tokens, Delay of the last reservation; bit 3 moves the clock back), which
// n (see gcraN), and the clock's step: a byte shifted left by another
// (modulo 61).
func FuzzRateLimiterMatchesGCRA(f *testing.F) {
	// Ten bookings of 1e9 tokens at one token a second, then an Allow.
	far := bytes.Repeat([]byte{2, 2, 0, 0}, 10)
	f.Add(uint64(1e9), uint64(1e9), append(far, 0, 0, 0, 0, 5, 0, 0, 0))
	// Rate 0 with the largest burst: one token, the rest, one more.
	f.Add(uint64(0), uint64(math.MaxInt64), []byte{1, 1, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0})
	f.Add(uint64(1), uint64(1<<60), []byte{2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 11, 1, 255, 60, 0, 0, 0, 0, 6, 0, 0, 0})
	f.Add(uint64(333_333_333), uint64(3), []byte{0, 0, 0, 0, 3, 1, 1, 28, 4, 0, 0, 0, 7, 0, 200, 20, 12, 0, 9, 9})
	f.Fuzz(func(t *testing.T, interval, burst uint64, ops []byte) {
		frozen := interval == 0
		iv, rate, maxBurst := int64(1), 0.0, uint64(math.MaxInt64)
		if !frozen {
			iv = int64(interval%(1<<40)) + 1
			rate, maxBurst = 1e9/float64(iv), uint64(1<<60/iv)
		}
		if got := resilience.NewRateLimiter(rate, 0).Rate(); got != rate {
			t.Skipf("rate %v is enforced as %v", rate, got) // 1/rate is not iv to the nanosecond
		}
		b := int(burst % (maxBurst + 1))
		clk := newManualClock()
		l := resilience.NewRateLimiter(rate, b, resilience.WithClock(clk))
		keyed := resilience.NewKeyedRateLimiter[int](rate, b, resilience.WithClock(clk))
		m, mk := newGCRAModel(iv, b, frozen), newGCRAModel(iv, b, frozen) // mk: the keyed limiter's key
		var now int64
		forward := true // the clock has never gone back: the keyed limiter's key is the model too
		var last *modelReservation
		for i := 0; len(ops) >= 4; i, ops = i+1, ops[4:] {
			kind, nsel, step := ops[0], ops[1], int64(ops[2])<<(ops[3]%61)
			if kind&8 != 0 {
				step = -step
			}
			if next := now + step; next >= -(1<<60) && next <= 1<<60 {
				clk.Add(time.Duration(step))
				now = next
				forward = forward && step >= 0
			}
			n := gcraN(nsel, b)
			switch kind % 8 {
			case 0, 1:
				var got, gotKeyed bool
				if kind%8 == 0 {
					n = 1
					got, gotKeyed = l.Allow(), keyed.Allow(0)
				} else {
					got, gotKeyed = l.AllowN(n), keyed.AllowN(0, n)
				}
				want, _, _ := m.take(now, n, new(big.Int))
				if got != want {
					t.Fatalf("op %d at %dns: AllowN(%d) = %v, want %v", i, now, n, got, want)
				}
				if want, _, _ := mk.take(now, n, new(big.Int)); forward && gotKeyed != want {
					t.Fatalf("op %d at %dns: keyed AllowN(%d) = %v, want %v", i, now, n, gotKeyed, want)
				}
			case 2, 3:
				ok, wait, after := m.take(now, n, nil)
				r := l.ReserveN(n)
				last = &modelReservation{r: r, ok: ok, after: after, cost: int64(n) * iv, frozen: frozen}
				if ok {
					last.act = now + max(wait.Int64(), 0)
					if frozen {
						last.act = 0
					}
				}
				if r.OK() != ok {
					t.Fatalf("op %d at %dns: ReserveN(%d).OK() = %v, want %v (wait %v)", i, now, n, r.OK(), ok, wait)
				}
				if kind%8 == 3 {
					last.cancel(m, now)
					r.Cancel()
				}
			case 4:
				if last != nil {
					last.cancel(m, now)
					last.r.Cancel()
				}
			case 5, 6:
				if got, want := l.Tokens(), m.tokens(now); got != want {
					t.Fatalf("op %d at %dns: Tokens() = %v, want %v", i, now, got, want)
				}
				if got, want := keyed.Tokens(0), mk.tokens(now); forward && got != want {
					t.Fatalf("op %d at %dns: keyed Tokens() = %v, want %v", i, now, got, want)
				}
			case 7:
				if last != nil {
					if got, want := last.r.Delay(), last.delay(now); got != want {
						t.Fatalf("op %d at %dns: Delay() = %v, want %v", i, now, got, want)
					}
				}
			}
		}
	})
}

// gcraN returns the n of a call: none, one, the burst, one more, half,
// one less, or a share of it.
func gcraN(sel byte, burst int) int {
	switch sel % 8 {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return burst
	case 3:
		return min(burst, math.MaxInt-1) + 1
	case 4:
		return burst / 2
	case 5:
		return max(burst-1, 0)
	}
	return burst / max(int(sel/8), 1)
}

// cancel gives the reservation's tokens back at now, as the limiter's
// Cancel promises: not twice, not once they are due, not when tokens were
// booked after them.
func (r *modelReservation) cancel(m *gcraModel, now int64) {
	if r.frozen {
		now = 0
	}
	if !r.ok || r.cost == 0 || r.cancelled {
		return
	}
	r.cancelled = true
	if r.act < now || m.tat.Cmp(r.after) != 0 {
		return
	}
	m.tat = new(big.Int).Sub(r.after, big.NewInt(r.cost))
}

func (r *modelReservation) delay(now int64) time.Duration {
	if !r.ok {
		return time.Duration(math.MaxInt64)
	}
	if r.frozen {
		now = 0
	}
	return time.Duration(max(r.act-now, 0))
}

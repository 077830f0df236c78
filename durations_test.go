package resilience_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

const (
	year         = 365 * 24 * time.Hour
	century      = 100 * year
	longest      = time.Duration(math.MaxInt64)
	twoCenturies = 200 * year
)

// hintErr is an error whose retry hint is its value.
type hintErr time.Duration

func (e hintErr) Error() string             { return "test: try again later" }
func (e hintErr) RetryAfter() time.Duration { return time.Duration(e) }

// TestDurationOptionsSaturate: every option that takes a duration, given
// the largest Duration or 200 years, behaves as its doc says: a wait or a
// bound that long is as good as never over a century of the clock, and no
// sum with it wraps into a negative or short duration.
func TestDurationOptionsSaturate(t *testing.T) {
	ctx := context.Background()
	fail := errors.New("test: fail")
	tests := []struct {
		name string
		run  func(t *testing.T, d time.Duration)
	}{
		{"WithThrottleWindow: counts of a century ago still count", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			th := resilience.NewAdaptiveThrottler(resilience.WithThrottleWindow(d), resilience.WithClock(clk),
				resilience.WithRand(neverRand{}), resilience.WithThrottleClassifier(failEvery))
			for range 50 {
				done, err := th.Enter(ctx)
				require.NoError(t, err)
				done(fail)
			}
			before := th.Ratio()
			require.Greater(t, before, 0.9)
			clk.Add(century)
			assert.Equal(t, before, th.Ratio())
		}},
		{"WithCursorIdleReset: a century's pause resets nothing", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			c := resilience.NewCursor(resilience.Linear(time.Second, time.Second), resilience.WithCursorIdleReset(d), resilience.WithClock(clk))
			c.Next()
			clk.Add(century)
			w, ok := c.Next()
			assert.True(t, ok)
			assert.Equal(t, 2*time.Second, w)
		}},
		{"WithBatchMaxWait: a full batch is sent at once", func(t *testing.T, d time.Duration) {
			b := resilience.NewBatcher(func(_ context.Context, in []int) ([]int, error) { return in, nil },
				resilience.WithBatchMaxSize(2), resilience.WithBatchMaxWait(d), resilience.WithClock(newManualClock()))
			// The guard's deadline is on the real clock: it only keeps a
			// broken batcher from hanging the test.
			gctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					v, err := b.Do(gctx, i)
					assert.NoError(t, err)
					assert.Equal(t, i, v)
				})
			}
			wg.Wait()
			require.NoError(t, b.Close(gctx))
		}},
		{"WithBatchPolicy(Timeout): the batch call's deadline is that far", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			var left time.Duration
			b := resilience.NewBatcher(func(bctx context.Context, in []int) ([]int, error) {
				dl, ok := bctx.Deadline()
				require.True(t, ok)
				left = dl.Sub(clk.Now())
				return in, nil
			}, resilience.WithBatchMaxSize(1), resilience.WithClock(clk),
				resilience.WithBatchPolicy(resilience.Timeout[[]int](d, resilience.WithTimeoutCooperative(), resilience.WithClock(clk))))
			v, err := b.Do(ctx, 7)
			require.NoError(t, err)
			assert.Equal(t, 7, v)
			assert.Greater(t, left, century)
			require.NoError(t, b.Close(ctx))
		}},
		{"WithBreakerCoolDown: open for a century, its hint huge", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			b := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(d), resilience.WithClock(clk))
			p := resilience.Guarded[int](b)
			_, err := p.Execute(ctx, func(context.Context) (int, error) { return 0, fail })
			require.ErrorIs(t, err, fail)
			clk.Add(century)
			_, err = p.Execute(ctx, okFunc)
			require.ErrorIs(t, err, resilience.ErrBreakerOpen)
			hint, ok := resilience.RetryAfter(err)
			assert.True(t, ok)
			assert.Greater(t, hint, century/2)
			assert.Greater(t, b.Snapshot().HalfOpenIn, century/2)
		}},
		{"WithBreakerFailureExpiry: a failure of a century ago still counts", func(t *testing.T, d time.Duration) {
			assert.Equal(t, resilience.BreakerOpen, failACenturyApart(t, resilience.WithBreakerThreshold(2), resilience.WithBreakerFailureExpiry(d)))
		}},
		{"WithBreakerFailureRateWindow: a failure of a century ago still counts", func(t *testing.T, d time.Duration) {
			assert.Equal(t, resilience.BreakerOpen, failACenturyApart(t, resilience.WithBreakerFailureRateWindow(1, 2, d)))
		}},
		{"WithBreakerSlowCallThreshold: refused beyond 144h, and 144h holds", func(t *testing.T, d time.Duration) {
			assert.Panics(t, func() { resilience.WithBreakerSlowCallThreshold(d) })
			clk := newManualClock()
			b := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerSlowCallThreshold(144*time.Hour), resilience.WithClock(clk))
			p := resilience.Guarded[int](b)
			for _, tc := range []struct {
				took time.Duration
				want resilience.BreakerState
			}{{144 * time.Hour, resilience.BreakerClosed}, {144*time.Hour + time.Millisecond, resilience.BreakerOpen}} {
				_, err := p.Execute(ctx, func(context.Context) (int, error) { clk.Add(tc.took); return 1, nil })
				require.NoError(t, err)
				assert.Equal(t, tc.want, b.State(), "after a call of %v", tc.took)
			}
		}},
		{"WithBulkheadWait: a waiter waits a century", func(t *testing.T, d time.Duration) {
			synctest.Test(t, func(t *testing.T) {
				b := resilience.NewBulkhead(1, resilience.WithBulkheadWait(d))
				require.True(t, b.TryAcquire())
				errc := make(chan error, 1)
				go func() { errc <- b.Acquire(ctx) }()
				time.Sleep(century)
				synctest.Wait()
				require.Empty(t, errc, "the wait ended")
				b.Release()
				require.NoError(t, <-errc)
				b.Release()
			})
		}},
		{"WithHedgeDelay: no hedge in a century", func(t *testing.T, d time.Duration) {
			testHedgeWaits(t, resilience.WithHedgeDelay(d))
		}},
		{"WithHedgeQuantile: floor and ceiling that long, no hedge in a century", func(t *testing.T, d time.Duration) {
			testHedgeWaits(t, resilience.WithHedgeQuantile(0.5, d, d))
		}},
		{"WithHedgeQuantile: ceiling that long, no hedge before the first estimate", func(t *testing.T, d time.Duration) {
			testHedgeWaits(t, resilience.WithHedgeQuantile(0.5, 0, d))
		}},
		{"WithRateLimitWait: a call waits for its token", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			clk.Waits = resilience.WaitsStep
			l := resilience.NewRateLimiter(1, 1, resilience.WithRateLimitWait(d), resilience.WithClock(clk))
			p := resilience.Guarded[int](l)
			for range 2 {
				_, err := p.Execute(ctx, okFunc)
				require.NoError(t, err)
			}
			assert.Equal(t, []time.Duration{time.Second}, clk.Steps())
		}},
		{"WithRegistryShedding: a refusal of a century ago still shows", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			r := resilience.NewRegistry(resilience.WithRegistryShedding(d), resilience.WithClock(clk))
			b := resilience.NewBulkhead(1, resilience.WithName("b"), resilience.WithObserver(r))
			require.NoError(t, r.Register("b", b))
			require.True(t, b.TryAcquire())
			_, err := resilience.Guarded[int](b).Execute(ctx, okFunc)
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			b.Release()
			clk.Add(century)
			s, ok := r.Snapshot("b")
			require.True(t, ok)
			assert.True(t, s.Shedding)
		}},
		{"WithMaxElapsed: retries go on", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			clk.Waits = resilience.WaitsStep
			p := resilience.Retry[int](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(century)),
				resilience.WithMaxElapsed(d), resilience.WithClock(clk))
			calls := 0
			v, err := p.Execute(ctx, func(context.Context) (int, error) {
				if calls++; calls < 3 {
					return 0, fail
				}
				return calls, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 3, v)
			assert.Equal(t, []time.Duration{century, century}, clk.Steps())
		}},
		{"WithMaxRetryAfter: a century's hint is honoured", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			clk.Waits = resilience.WaitsStep
			p := resilience.Retry[int](resilience.WithBackoff(resilience.Constant(0)), resilience.WithMaxRetryAfter(d), resilience.WithClock(clk))
			calls := 0
			_, err := p.Execute(ctx, func(context.Context) (int, error) {
				if calls++; calls == 1 {
					return 0, hintErr(century)
				}
				return 1, nil
			})
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{century}, clk.Steps())
		}},
		{"Timeout: the call's deadline is that far", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			var left time.Duration
			_, err := resilience.Timeout[int](d, resilience.WithClock(clk)).Execute(ctx, func(cctx context.Context) (int, error) {
				dl, ok := cctx.Deadline()
				require.True(t, ok)
				left = dl.Sub(clk.Now())
				return 1, nil
			})
			require.NoError(t, err)
			assert.Greater(t, left, century)
		}},
		{"ChaosLatency: waits that long", func(t *testing.T, d time.Duration) {
			clk := newManualClock()
			clk.Waits = resilience.WaitsStep
			_, err := resilience.ChaosLatency[int](d, resilience.WithClock(clk)).Execute(ctx, okFunc)
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{d}, clk.Steps())
		}},
		{"backoffs: no wait wraps", func(t *testing.T, d time.Duration) {
			for _, tc := range []struct {
				name  string
				b     resilience.Backoff
				grows bool // each wait is at least the one before
			}{
				{"Constant", resilience.Constant(d), true},
				{"Linear", resilience.Linear(d, d), true},
				{"Exponential", resilience.Exponential(d, 2), true},
				{"Fibonacci", resilience.Fibonacci(d), true},
				{"Random", resilience.Random(d/2, d), false},
				{"DecorrelatedJitter", resilience.DecorrelatedJitter(d/2, d), false},
				{"SmoothJitter", resilience.SmoothJitter(d), false},
				{"Jpillora", resilience.Jpillora(d/2, d, 2, true), false},
				{"Celery", resilience.Celery(d, d, true), false},
				{"Ethernet", resilience.Ethernet(d), false},
				{"ExponentialSchedule", resilience.ExponentialSchedule(100, d), true},
				{"LimitedExponentialSchedule", resilience.LimitedExponentialSchedule(100, d/3, d), true},
				{"Cap", resilience.Cap(resilience.Exponential(d/3, 3), d), true},
				{"FullJitter", resilience.FullJitter(resilience.Linear(d, d)), false},
				{"EqualJitter", resilience.EqualJitter(resilience.Linear(d, d)), false},
				{"SymmetricJitter", resilience.SymmetricJitter(resilience.Linear(d, d), 1), false},
				{"UpwardJitter", resilience.UpwardJitter(resilience.Linear(d, d), 3), true},
				{"KubernetesBackoff", resilience.KubernetesBackoff{Duration: d, Factor: 3, Jitter: 2, Steps: 100}, true},
			} {
				var prev time.Duration
				for n := 1; n <= 100; n++ {
					w, ok := tc.b.Delay(n, prev)
					if !ok {
						require.Equal(t, "Ethernet", tc.name, "retry %d", n) // the only one to stop, after 15
						break
					}
					require.GreaterOrEqual(t, w, time.Duration(0), "%s: retry %d", tc.name, n)
					if tc.grows {
						require.GreaterOrEqual(t, w, prev, "%s: retry %d", tc.name, n)
					}
					prev = w
				}
			}
		}},
	}
	for _, tc := range tests {
		for _, d := range []struct {
			name string
			d    time.Duration
		}{{"MaxInt64", longest}, {"200 years", twoCenturies}} {
			t.Run(tc.name+"/"+d.name, func(t *testing.T) { tc.run(t, d.d) })
		}
	}
}

// testHedgeWaits checks in a bubble that a hedge of opt starts no second
// attempt while the first takes a century.
func testHedgeWaits(t *testing.T, opt resilience.HedgeOption) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		v, err := resilience.Hedge[int](opt).Execute(context.Background(), func(context.Context) (int, error) {
			n := calls.Add(1)
			time.Sleep(century)
			return int(n), nil
		})
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.Equal(t, int32(1), calls.Load())
	})
}

// failACenturyApart makes two calls through a breaker of opts that fail a
// century apart, and returns the breaker's state after them.
func failACenturyApart(t *testing.T, opts ...resilience.BreakerOption) resilience.BreakerState {
	clk := newManualClock()
	b := resilience.NewBreaker(append(opts, resilience.WithClock(clk))...)
	p := resilience.Guarded[int](b)
	failing := func(context.Context) (int, error) { return 0, errors.New("test: fail") }
	_, err := p.Execute(context.Background(), failing)
	require.Error(t, err)
	clk.Add(century)
	_, err = p.Execute(context.Background(), failing)
	require.Error(t, err)
	return b.State()
}

package resilience_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// TestRetryMaxElapsedHugeWait: a wait near the largest duration is past any
// time limit; adding it to the time elapsed must not overflow into a wait
// that "fits".
func TestRetryMaxElapsedHugeWait(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		opts []resilience.RetryOption
		err  error
	}{
		{"huge constant backoff", []resilience.RetryOption{resilience.WithBackoff(resilience.Constant(huge))}, errFlaky},
		{"huge hint under a huge max", []resilience.RetryOption{resilience.WithMaxRetryAfter(huge)}, hinted{huge}},
		{"huge hint, huge backoff", []resilience.RetryOption{resilience.WithMaxRetryAfter(huge), resilience.WithBackoff(resilience.Constant(huge - 1))}, hinted{huge - 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &stepClock{now: time.Unix(0, 0)}
			opts := append([]resilience.RetryOption{resilience.WithMaxElapsed(time.Hour), resilience.WithClock(clk)}, tc.opts...)
			calls := 0
			_, err := resilience.Retry[int](opts...).Execute(context.Background(), func(context.Context) (int, error) {
				calls++
				clk.now = clk.now.Add(time.Millisecond) // some time has passed when the wait is weighed
				return 0, tc.err
			})
			assert.Equal(t, 1, calls, "no retry: its wait ends past the limit")
			assert.Empty(t, clk.waits, "no wait begun")
			assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
			assert.ErrorIs(t, err, tc.err)
		})
	}
}

// stepClock is a clock that never blocks: a wait on it is recorded, moves
// its time to the wait's end and is over at once. For code run by one
// goroutine.
type stepClock struct {
	now   time.Time
	waits []time.Duration
}

func (c *stepClock) Now() time.Time { return c.now }

func (c *stepClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	c.waits = append(c.waits, d.Sub(c.now))
	c.now = d
	return context.WithDeadline(parent, time.Time{})
}

// TestRetryOnNothing: an empty allow-list retries nothing, as
// go-resiliency's empty whitelist.
func TestRetryOnNothing(t *testing.T) {
	for _, opts := range [][]resilience.RetryOption{
		{resilience.WithRetryOn()},
		{resilience.WithRetryOn(), resilience.WithRetryOn()},
	} {
		fn, calls := script(errFlaky, nil)
		_, err := resilience.Retry[int](opts...).Execute(context.Background(), fn)
		assert.Equal(t, errFlaky, err, "returned as it is")
		assert.Equal(t, 1, *calls)
	}
	// A later list with errors in it still retries them.
	fn, calls := script(errFlaky, nil)
	_, err := resilience.Retry[int](resilience.WithRetryOn(), resilience.WithRetryOn(errFlaky),
		resilience.WithBackoff(resilience.Constant(0))).Execute(context.Background(), fn)
	require.NoError(t, err)
	assert.Equal(t, 2, *calls)
}

// TestRetryBudgetArithmetic: small ratios count, and a huge floor saturates
// instead of wrapping.
func TestRetryBudgetArithmetic(t *testing.T) {
	tests := []struct {
		name     string
		ratio    float64
		floor    int
		calls    int
		capacity int
		want     int
	}{
		{"ratio 0.0004 counts", 0.0004, 0, 10000, 100, 4},
		{"ratio 0.000001 counts", 0.000001, 0, 3_000_000, 100, 3},
		{"ratio 0.1", 0.1, 0, 1000, 100, 100},
		{"capacity caps the deposits", 0.5, 0, 1000, 7, 7},
		{"a deposit past the capacity is cut", 5, 0, 3, 1, 1},
		{"zero capacity keeps nothing", 0.5, 0, 1000, 0, 0},
		{"huge floor saturates", 0.1, math.MaxInt, 0, 100, math.MaxInt},
		{"huge floor and deposits saturate", 0.1, math.MaxInt, 1000, 100, math.MaxInt},
		{"floor and deposits add", 0.1, 3, 50, 100, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mock := newManualClock()
			b := resilience.NewRetryBudget(tc.ratio, tc.floor, resilience.WithBudgetCapacity(tc.capacity), resilience.WithClock(mock))
			p := resilience.Retry[int](resilience.WithBudget(b))
			for range tc.calls {
				_, _ = p.Execute(context.Background(), okFunc)
			}
			assert.Equal(t, tc.want, b.Available())
		})
	}
}

// TestRetryExecuteNilFn: the same clear panic as Do's.
func TestRetryExecuteNilFn(t *testing.T) {
	assert.PanicsWithValue(t, "resilience: Retry: fn is nil", func() {
		_, _ = resilience.Retry[int]().Execute(context.Background(), nil)
	})
	assert.PanicsWithValue(t, "resilience: Do: fn is nil", func() {
		_, _ = resilience.Do(context.Background(), resilience.Retry[int](), nil)
	})
}

// TestRetryPassesPreviousWait: the backoff gets the wait before the previous
// retry, which is what decorrelated jitter grows from.
func TestRetryPassesPreviousWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var prevs []time.Duration
		b := resilience.BackoffFunc(func(n int, prev time.Duration) (time.Duration, bool) {
			prevs = append(prevs, prev)
			return time.Duration(n) * time.Second, true
		})
		fn, _ := script(errFlaky, errFlaky, errFlaky, nil)
		_, err := resilience.Retry[int](resilience.WithAttempts(4), resilience.WithBackoff(b)).Execute(context.Background(), fn)
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, prevs)
	})

	// Decorrelated jitter under Retry waits what the same backoff gives when
	// each wait is fed back as prev.
	synctest.Test(t, func(t *testing.T) {
		const base, most = 10 * time.Millisecond, time.Minute
		want := []time.Duration{}
		ref := resilience.UseRand(resilience.DecorrelatedJitter(base, most), rand.New(rand.NewPCG(1, 2)))
		prev := time.Duration(0)
		for n := 1; n <= 5; n++ {
			prev, _ = ref.Delay(n, prev)
			want = append(want, prev)
		}
		var got []time.Duration
		p := resilience.Retry[int](resilience.WithAttempts(6), resilience.WithoutBudget(),
			resilience.WithBackoff(resilience.UseRand(resilience.DecorrelatedJitter(base, most), rand.New(rand.NewPCG(1, 2)))),
			onRetry(func(_ int, _ error, d time.Duration) { got = append(got, d) }))
		fn, _ := script(errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, nil)
		_, err := p.Execute(context.Background(), fn)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Greater(t, want[4], 3*base, "the waits grew from their predecessors")
	})
}

// TestRetryDiscardsBeforeTheWait: a rejected result is let go before the
// wait, so what it holds is not held through it; when the caller's context
// ends during that wait, the caller gets the zero value, never the
// discarded result.
func TestRetryDiscardsBeforeTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var discarded []int
		p := resilience.Retry[int](
			resilience.WithBackoff(resilience.Constant(time.Minute)),
			resilience.WithRetryIfResult(func(v int) bool { return v < 10 }),
			resilience.WithDiscard(func(v int) { discarded = append(discarded, v) }),
			onRetry(func(int, error, time.Duration) {
				time.AfterFunc(time.Second, cancel) // the caller gives up during the wait
			}),
		)
		v, err := p.Execute(ctx, func(context.Context) (int, error) { return 7, nil })
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, v, "the discarded result is not returned")
		assert.Equal(t, []int{7}, discarded, "discarded once, before the wait")
	})
}

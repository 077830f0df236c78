package resilience_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// attemptsPer runs requests through p against fn, one after the other, and
// returns the attempts each made.
func attemptsPer[T any](t *testing.T, requests int, p resilience.Policy[T], fn func(context.Context) (T, error)) []int {
	t.Helper()
	var got []int
	for range requests {
		calls := 0
		_, _ = p.Execute(context.Background(), func(ctx context.Context) (T, error) { calls++; return fn(ctx) })
		got = append(got, calls)
	}
	return got
}

var zeroWait = resilience.WithBackoff(resilience.Constant(0))

func down(context.Context) (int, error) { return 0, errFlaky }
func up(context.Context) (int, error)   { return 1, nil }

// TestRetryThrottle: a throttle in the manner of gRPC's (10 tokens, −1 per
// failed attempt it would retry, +0.2 per success, retries only above 5),
// the default of a Retry before its retry quota.
func TestRetryThrottle(t *testing.T) {
	throttled := func(opts ...resilience.RetryOption) resilience.Policy[int] {
		return resilience.Retry[int](append([]resilience.RetryOption{zeroWait, resilience.WithBudget(resilience.NewRetryThrottle(10, 0.2))}, opts...)...)
	}
	t.Run("an outage: the retries of about five failures, then none", func(t *testing.T) {
		// Tokens: 9, 8, 7 | 6, 5 (refused) | 4 | 3 ...
		assert.Equal(t, []int{3, 2, 1, 1, 1}, attemptsPer(t, 5, throttled(), down))
	})
	t.Run("successes refill it", func(t *testing.T) {
		p := throttled()
		attemptsPer(t, 4, p, down) // 10 → 3 tokens
		attemptsPer(t, 15, p, up)  // 6: a failure would leave 5, not more than half
		assert.Equal(t, []int{1}, attemptsPer(t, 1, p, down))
		attemptsPer(t, 6, p, up) // 5 + 1.2
		assert.Equal(t, []int{2}, attemptsPer(t, 1, p, down))
	})
	t.Run("a healthy service at 10% failures keeps it full", func(t *testing.T) {
		p := throttled()
		n := 0
		sometimes := func(context.Context) (int, error) {
			if n++; n%10 == 0 {
				return 0, errFlaky
			}
			return n, nil
		}
		for i, a := range attemptsPer(t, 1000, p, sometimes) {
			require.LessOrEqual(t, a, 2, "request %d", i)
		}
		assert.Equal(t, []int{3, 2, 1}, attemptsPer(t, 3, p, down), "full again: 10 tokens")
	})
	t.Run("errors not retried and the caller's cancellation take nothing", func(t *testing.T) {
		p := throttled(resilience.WithAbortOn(errFatal))
		attemptsPer(t, 20, p, func(context.Context) (int, error) { return 0, errFatal })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for range 20 {
			_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) { return 0, ctx.Err() })
		}
		assert.Equal(t, []int{3}, attemptsPer(t, 1, p, down))
	})
	t.Run("the refusal error", func(t *testing.T) {
		p := throttled()
		attemptsPer(t, 1, p, down)
		_, err := p.Execute(context.Background(), down)
		assert.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
		assert.ErrorIs(t, err, errFlaky)
		assert.EqualError(t, err, "resilience: retry budget exhausted after 2 attempts (WithBudget or WithoutBudget changes it): flaky")
	})
}

// TestRetryThrottleShared: one throttle given to policies of different
// result types is one limit.
func TestRetryThrottleShared(t *testing.T) {
	th := resilience.NewRetryThrottle(10, 0.2)
	ints := resilience.Retry[int](resilience.WithBudget(th), zeroWait)
	strs := resilience.Retry[string](resilience.WithBudget(th), zeroWait)
	assert.Equal(t, 4, th.Available())
	assert.Equal(t, []int{3}, attemptsPer(t, 1, ints, down))
	assert.Equal(t, 1, th.Available())
	assert.Equal(t, []int{2, 1}, attemptsPer(t, 2, strs, func(context.Context) (string, error) { return "", errFlaky }))
	assert.Equal(t, 0, th.Available())
	attemptsPer(t, 100, strs, func(context.Context) (string, error) { return "ok", nil })
	assert.Equal(t, 4, th.Available(), "refilled, up to its tokens")
}

// TestRetryBudgetConcurrent: deposits and withdrawals from many goroutines
// add up exactly, and the capacity holds.
func TestRetryBudgetConcurrent(t *testing.T) {
	const goroutines, each = 8, 200
	tests := []struct {
		name string
		b    *resilience.RetryBudget
		want int64 // retries allowed in all
	}{
		// 1600 calls deposit 0.25 each: 400 retries, cut to the capacity.
		{"budget", resilience.NewRetryBudget(0.25, 0, resilience.WithBudgetCapacity(300)), 300},
		{"budget under its capacity", resilience.NewRetryBudget(0.125, 0, resilience.WithBudgetCapacity(300)), 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := resilience.Retry[int](resilience.WithBudget(tc.b), resilience.WithAttempts(1))
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for range each {
						_, _ = p.Execute(context.Background(), up)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int(tc.want), tc.b.Available())
			var allowed atomic.Int64
			q := resilience.Retry[int](resilience.WithBudget(tc.b), resilience.WithAttempts(2), zeroWait)
			for range goroutines {
				wg.Go(func() {
					for range each {
						_, err := q.Execute(context.Background(), down)
						if !errors.Is(err, resilience.ErrRetryBudgetExhausted) {
							allowed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			// Each of these calls deposits too: 1600 more quarter retries
			// (or eighths), spent as they come.
			assert.GreaterOrEqual(t, allowed.Load(), tc.want)
			assert.Equal(t, 0, tc.b.Available(), "every retry the deposits paid for was taken")
		})
	}
}

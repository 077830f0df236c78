package resilience_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// A context's deadline may lie further ahead than the largest
// time.Duration (292 years): the time left until it then saturates, and
// must never be negated into the smallest Duration, which reads as a
// deadline long past.

// TestRateLimiterWaitWithAFarDeadline waits for a token under a deadline
// further ahead than the largest time.Duration: the token comes in a
// second, well before it.
func TestRateLimiterWaitWithAFarDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().AddDate(300, 0, 0))
		defer cancel()
		l := resilience.NewRateLimiter(1, 1)
		keyed := resilience.NewKeyedRateLimiter[string](1, 1)
		guarded := resilience.Guarded[int](resilience.NewRateLimiter(1, 1, resilience.WithRateLimitWait(time.Hour)))
		start := time.Now()
		require.NoError(t, l.Wait(ctx))
		require.NoError(t, l.Wait(ctx))
		require.NoError(t, keyed.Wait(ctx, "k"))
		require.NoError(t, keyed.Wait(ctx, "k"))
		_, err := guarded.Execute(ctx, okCall)
		require.NoError(t, err)
		_, err = guarded.Execute(ctx, okCall)
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

// TestRetryWithAFarDeadline retries under a deadline further ahead than
// the largest time.Duration: the wait ends well before it.
func TestRetryWithAFarDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().AddDate(300, 0, 0))
		defer cancel()
		fn, calls := script(errFlaky, nil)
		start := time.Now()
		_, err := resilience.Retry[int](resilience.WithBackoff(resilience.Constant(time.Second))).Execute(ctx, fn)
		require.NoError(t, err)
		assert.Equal(t, 2, *calls)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

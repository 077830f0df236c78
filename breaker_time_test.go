package resilience_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// refusal makes a call through b and returns its *BreakerOpenError.
func refusal(t *testing.T, b *resilience.Breaker) *resilience.BreakerOpenError {
	t.Helper()
	ran, err := outcome(b, nil)
	require.False(t, ran, "the breaker let the call through")
	var open *resilience.BreakerOpenError
	require.ErrorAs(t, err, &open)
	return open
}

// TestBreakerSlowCallClockGoesBack: calls are timed on a clock's
// differences, so a clock that goes back during a call makes it take no
// time, not twelve days; a slow call is still slow.
func TestBreakerSlowCallClockGoesBack(t *testing.T) {
	clk := newManualClock()
	b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1),
		resilience.WithBreakerSlowCallThreshold(100*time.Millisecond))
	call := func(d time.Duration) {
		_, err := resilience.Do(context.Background(), resilience.Guarded[int](b), func(context.Context) (int, error) {
			clk.Add(d)
			return 1, nil
		})
		require.NoError(t, err)
	}
	call(-time.Millisecond)
	assert.Equal(t, resilience.BreakerClosed, b.State(), "a call during which the clock went back is not slow")
	call(-24 * time.Hour)
	assert.Equal(t, resilience.BreakerClosed, b.State())
	call(100 * time.Millisecond)
	assert.Equal(t, resilience.BreakerClosed, b.State(), "exactly the threshold is not too slow")
	call(101 * time.Millisecond)
	assert.Equal(t, resilience.BreakerOpen, b.State(), "a slow call is a failure")
}

// TestBreakerTimeWindowBefore1970: the time window works on a clock set
// before 1970, or moved back before the breaker was made.
func TestBreakerTimeWindowBefore1970(t *testing.T) {
	clk := newManualClock()
	clk.Add(-100*365*24*time.Hour - 3*time.Second) // a bucket number whose remainder is negative
	b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(0),
		resilience.WithBreakerFailureRateWindow(0.5, 3, 10*time.Second))
	outcome(b, errDown)
	clk.Add(-time.Hour - 4*time.Second) // before the breaker was made
	outcome(b, errDown)
	assert.Equal(t, 1, b.Metrics().WindowCalls, "the outcome an hour ahead does not count")
	outcome(b, nil)
	outcome(b, errDown)
	m := b.Metrics()
	assert.Equal(t, resilience.BreakerOpen, m.State, "2 of 3")
	assert.Equal(t, 3, m.WindowCalls)
}

// TestBreakerHugeCoolDown: a cool-down that ends past the year 2262 on an
// injected clock does not end at once, and its retry hint saturates
// instead of going negative.
func TestBreakerHugeCoolDown(t *testing.T) {
	const maxDuration = time.Duration(math.MaxInt64)
	for _, opt := range []resilience.BreakerOption{
		resilience.WithBreakerCoolDown(maxDuration),
		resilience.WithBreakerCoolDownBackoff(resilience.Constant(maxDuration)),
	} {
		clk := newManualClock()
		b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1), resilience.WithBreakerHintJitter(0), opt)
		outcome(b, errDown)
		open := refusal(t, b)
		assert.Equal(t, maxDuration, open.CoolDownLeft())
		assert.Equal(t, maxDuration, open.RetryAfter(), "saturated")
		clk.Add(100 * 365 * 24 * time.Hour)
		assert.Equal(t, resilience.BreakerOpen, b.State())
		open = refusal(t, b)
		assert.Equal(t, maxDuration-100*365*24*time.Hour, open.CoolDownLeft())
		hint, ok := resilience.RetryAfter(open)
		assert.True(t, ok)
		assert.Equal(t, open.CoolDownLeft()+time.Millisecond, hint)
	}
	b := resilience.NewBreaker(resilience.WithClock(newManualClock()), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(maxDuration),
		resilience.WithBreakerHintJitter(1))
	outcome(b, errDown)
	assert.Equal(t, maxDuration, refusal(t, b).RetryAfter(), "saturated with jitter too")
}

// TestBreakerHintJitter: with a jitter of 0.2, the refusals' retry hints
// spread over the 20% of the cool-down left that follow the instant the
// breaker half-opens (plus the millisecond's margin), and none is earlier.
// By default there is no jitter.
func TestBreakerHintJitter(t *testing.T) {
	clk := newManualClock()
	b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(10*time.Second),
		resilience.WithBreakerHintJitter(0.2))
	outcome(b, errDown)
	clk.Add(2 * time.Second)
	open := refusal(t, b)
	const (
		draws = 10_000
		bins  = 8
		left  = 8 * time.Second
		lo    = left + time.Millisecond
		width = left / 5
	)
	var hist [bins]int
	var sum time.Duration
	seen := map[time.Duration]bool{}
	for range draws {
		h := open.RetryAfter()
		require.GreaterOrEqual(t, h, lo, "earlier than the half-open instant")
		require.LessOrEqual(t, h, lo+width)
		hist[min(int((h-lo)*bins/width), bins-1)]++
		sum += h - lo
		seen[h] = true
	}
	for i, n := range hist {
		assert.InDelta(t, draws/bins, n, draws/bins*0.3, "bin %d of %v", i, hist)
	}
	assert.InDelta(t, float64(width/2), float64(sum/draws), float64(width)/20, "mean")
	assert.Greater(t, len(seen), draws*9/10, "hints are spread, not shared")

	clk.Add(left)
	assert.Equal(t, time.Millisecond, open.RetryAfter(), "nothing to spread once the cool-down is over")

	still := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1))
	outcome(still, errDown)
	open = refusal(t, still)
	for range 100 {
		require.Equal(t, 30*time.Second+time.Millisecond, open.RetryAfter(), "no jitter by default")
	}
}

package resilience_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// TestBreakerRefusalPublishedWithItsError: a call that sees the breaker
// open gets that trip's refusal, never a nil *BreakerOpenError (on which
// RetryAfter panics) nor the one of an earlier trip. The cool-down backoff,
// which the breaker asks while it trips, makes the call at that moment.
func TestBreakerRefusalPublishedWithItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *resilience.Breaker
		var trap func()
		growth := resilience.BackoffFunc(func(int, time.Duration) (time.Duration, bool) {
			if f := trap; f != nil {
				trap = nil
				f()
			}
			return time.Hour, true
		})
		b = resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDownBackoff(growth))
		callDuringTrip := func(trip string) {
			t.Helper()
			var err error
			trap = func() {
				var done func(error)
				done, err = b.Enter(context.Background())
				if err == nil {
					done(context.Canceled) // counts neither way
				}
			}
			outcome(b, errDown)
			require.Equal(t, resilience.BreakerOpen, b.State(), trip)
			if err == nil {
				return // admitted: the call came before the trip
			}
			var open *resilience.BreakerOpenError
			require.ErrorAs(t, err, &open, trip)
			require.NotNil(t, open, "%s: the refusal is a nil *BreakerOpenError", trip)
			assert.Equal(t, time.Hour, open.CoolDownLeft(), "%s: the refusal is of this trip", trip)
			hint, ok := resilience.RetryAfter(err)
			assert.True(t, ok && hint > time.Hour, "%s: hint %v", trip, hint)
		}
		callDuringTrip("first trip")
		time.Sleep(time.Minute)
		b.Reset()
		callDuringTrip("second trip")
		b.Reset() // stops the cool-down's timer
	})
}

// TestBreakerOneDelivererAtATime: the state-change hook never runs twice
// at once, nor inside itself: a change made by the hook, or by another
// goroutine while the hook runs, is delivered after it returns, by the
// goroutine delivering.
func TestBreakerOneDelivererAtATime(t *testing.T) {
	t.Run("a change made by the hook", func(t *testing.T) {
		var b *resilience.Breaker
		var log []string
		depth := 0
		b = resilience.NewBreaker(resilience.WithClock(clock.NewMock()), resilience.WithBreakerThreshold(1),
			onStateChange(func(from, to resilience.BreakerState) {
				depth++
				defer func() { depth-- }()
				log = append(log, fmt.Sprintf("%v->%v at depth %d", from, to, depth))
				if to == resilience.BreakerOpen {
					b.Reset()
					log = append(log, "Reset returned")
				}
			}))
		b.Trip()
		assert.Equal(t, []string{"closed->open at depth 1", "Reset returned", "open->closed at depth 1"}, log)
	})
	t.Run("a change made meanwhile by another goroutine", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		var running, overlaps atomic.Int32
		var mu sync.Mutex
		var got []string
		b := resilience.NewBreaker(resilience.WithClock(clock.NewMock()), resilience.WithBreakerThreshold(1),
			onStateChange(func(from, to resilience.BreakerState) {
				if running.Add(1) > 1 {
					overlaps.Add(1)
				}
				defer running.Add(-1)
				mu.Lock()
				got = append(got, fmt.Sprintf("%v->%v", from, to))
				first := len(got) == 1
				mu.Unlock()
				if first {
					close(entered)
					<-release
				}
			}))
		tripped := make(chan struct{})
		go func() {
			defer close(tripped)
			b.Trip() // delivers closed->open, and waits in the hook
		}()
		<-entered
		b.Reset() // queued for the goroutine delivering: returns without calling the hook
		mu.Lock()
		assert.Equal(t, []string{"closed->open"}, got, "Reset ran the hook while it was running")
		mu.Unlock()
		close(release)
		<-tripped
		assert.Equal(t, []string{"closed->open", "open->closed"}, got)
		assert.Zero(t, overlaps.Load(), "the hook ran twice at once")
	})
}

// TestBreakerHookPanicsOnce: a hook that panics once does not silence the
// hook: the panic goes up through the call that was delivering, and later
// changes are delivered.
func TestBreakerHookPanicsOnce(t *testing.T) {
	mock := clock.NewMock()
	var got []string
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second),
		onStateChange(func(from, to resilience.BreakerState) {
			if len(got) == 0 {
				got = append(got, "panicked")
				panic("hook")
			}
			got = append(got, fmt.Sprintf("%v->%v", from, to))
		}))
	assert.PanicsWithValue(t, "hook", func() { outcome(b, errDown) })
	assert.Equal(t, resilience.BreakerOpen, b.State(), "the change was made before the hook ran")
	mock.Add(time.Second)
	ran, err := outcome(b, nil)
	require.True(t, ran)
	require.NoError(t, err)
	assert.Equal(t, []string{"panicked", "open->half-open", "half-open->closed"}, got)
}

// TestBreakerPanicInCoolDownBackoff: a cool-down backoff that panics opens
// the breaker for the base cool-down, lets the panic go on up through the
// call that tripped it, and leaves no lock held: the breaker keeps
// working.
func TestBreakerPanicInCoolDownBackoff(t *testing.T) {
	mock := clock.NewMock()
	boom := resilience.BackoffFunc(func(n int, prev time.Duration) (time.Duration, bool) {
		if n == 2 {
			panic("backoff")
		}
		return time.Duration(n) * time.Minute, true
	})
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1),
		resilience.WithBreakerCoolDown(time.Second), resilience.WithBreakerCoolDownBackoff(boom))
	outcome(b, errDown)
	mock.Add(time.Minute)
	assert.PanicsWithValue(t, "backoff", func() { outcome(b, errDown) }, "the failed probe's trip asks the backoff")
	_, err := outcome(b, nil)
	var open *resilience.BreakerOpenError
	require.ErrorAs(t, err, &open)
	assert.Equal(t, time.Minute, open.CoolDownLeft(), "opened for the last cool-down")
	m := b.Metrics() // hung when the lock stayed held
	assert.Equal(t, 2, m.Trips)
	assert.Zero(t, m.Probes)
	b.Reset()
	ran, _ := outcome(b, nil)
	assert.True(t, ran)
	assert.Equal(t, resilience.BreakerClosed, b.State())
}

// TestBreakerWindowKeepsTheThreshold: with a failure-rate window, a success
// still starts the consecutive count again, so five failures that are not
// consecutive do not open a breaker with the default threshold.
func TestBreakerWindowKeepsTheThreshold(t *testing.T) {
	for _, window := range []resilience.BreakerOption{
		resilience.WithBreakerFailureRate(0.9, 100, 100),
		resilience.WithBreakerFailureRateWindow(0.9, 100, time.Minute),
	} {
		b := resilience.NewBreaker(resilience.WithClock(clock.NewMock()), window)
		for range 5 {
			outcome(b, errDown)
			outcome(b, nil)
		}
		assert.Equal(t, resilience.BreakerClosed, b.State())
		assert.Zero(t, b.Metrics().ConsecutiveFailures)
		for range 5 {
			outcome(b, errDown)
		}
		assert.Equal(t, resilience.BreakerOpen, b.State(), "five in a row do")
	}
}

// TestBreakerChurn runs calls that fail at random from several goroutines
// against a breaker with no cool-down, a count window, an observer and a
// hook, while another goroutine trips and resets it. The hook never runs
// twice at once, the changes it and the observer see form one chain (each
// starts where the one before ended), and nothing is left in flight.
// RESILIENCE_STRESS=1 makes it longer.
func TestBreakerChurn(t *testing.T) {
	calls := 2_000
	if os.Getenv("RESILIENCE_STRESS") == "1" {
		calls = 200_000
	}
	var running, overlaps atomic.Int32
	var hooked, observed []resilience.BreakerState // the states changed to, after closed
	var mu sync.Mutex
	obs := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
		if e.Kind != resilience.EventStateChange {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		last := resilience.BreakerClosed
		if n := len(observed); n > 0 {
			last = observed[n-1]
		}
		if e.From != last {
			t.Errorf("observed %v->%v after a change to %v", e.From, e.To, last)
		}
		observed = append(observed, e.To)
	})
	b := resilience.NewBreaker(resilience.WithBreakerThreshold(3), resilience.WithBreakerFailureRate(0.5, 4, 8),
		resilience.WithBreakerCoolDown(0), resilience.WithBreakerProbes(2), resilience.WithObserver(resilience.MultiObserver(obs,
			stateObserver(func(from, to resilience.BreakerState) {
				if running.Add(1) > 1 {
					overlaps.Add(1)
				}
				defer running.Add(-1)
				hooked = append(hooked, to) // unguarded: the hook never runs twice at once
			}))))
	p := resilience.Guarded[int](b)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range calls {
				_, _ = p.Execute(context.Background(), func(context.Context) (int, error) {
					if (i*7+g)%5 < 2 {
						return 0, errDown
					}
					return 1, nil
				})
				answered.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := range calls / 10 {
			if i%2 == 0 {
				b.Trip()
			} else {
				b.Reset()
			}
			b.State()
		}
	})
	wg.Wait()
	b.State() // delivers anything left
	assert.Equal(t, int64(4*calls), answered.Load())
	assert.Zero(t, overlaps.Load(), "the hook ran twice at once")
	assert.Zero(t, b.Metrics().Probes, "probes left in flight")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, observed, hooked, "the hook and the observer saw the same changes")
	assert.NotEmpty(t, observed)
	t.Logf("%d changes", len(observed))
}

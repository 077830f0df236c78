package resilience_test

import (
	"context"
	"math"
	"runtime"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/faf87a20/resilience"
)

// runtimeGoexit ends the calling goroutine, as t.FailNow does.
func runtimeGoexit() { runtime.Goexit() }

func nan() float64 { return math.NaN() }

// manualClock is a clock whose time moves only when told, at once. Unlike
// clock.Mock's Add it never sleeps; it serves code that only reads the time.
type manualClock struct {
	clock.Clock // timers are not for this clock
	now         time.Time
}

func newManualClock() *manualClock { return &manualClock{Clock: clock.NewMock(), now: time.Unix(0, 0)} }

func (c *manualClock) Now() time.Time                  { return c.now }
func (c *manualClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }
func (c *manualClock) Add(d time.Duration)             { c.now = c.now.Add(d) }

// onRetry is an observer of a Retry's EventRetry: f gets the attempt that
// failed, its error and the wait before the next.
func onRetry(f func(attempt int, err error, wait time.Duration)) resilience.Option {
	return resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
		if e.Kind == resilience.EventRetry {
			f(e.Attempt, e.Err, e.Wait)
		}
	}))
}

// onStateChange is an observer of a Breaker's changes of state.
func onStateChange(f func(from, to resilience.BreakerState)) resilience.Option {
	return resilience.WithObserver(stateObserver(f))
}

// stateObserver hands a Breaker's changes of state to f.
func stateObserver(f func(from, to resilience.BreakerState)) resilience.Observer {
	return resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
		if e.Kind == resilience.EventStateChange {
			f(e.From, e.To)
		}
	})
}

package resilience_test

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
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

// recorder is the tests' observer: it keeps every event it is told of, in
// order, and every result handed to its discard hook; outcomes makes it ask
// for EventCallEnded. It is safe for concurrent use.
type recorder struct {
	mu        sync.Mutex
	events    []resilience.Event
	discarded []int
	outcomes  bool
}

func (r *recorder) Observe(_ context.Context, e resilience.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) ObserveOutcomes() bool { return r.outcomes }

// discard is a discard hook that keeps the result.
func (r *recorder) discard(v int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discarded = append(r.discarded, v)
}

// take returns the events so far and forgets them.
func (r *recorder) take() []resilience.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

// sequence returns the kinds of the events so far, in order.
func (r *recorder) sequence() []resilience.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []resilience.EventKind
	for _, e := range r.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

// kinds returns how many events of each kind arrived.
func (r *recorder) kinds() map[resilience.EventKind]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[resilience.EventKind]int{}
	for _, e := range r.events {
		n[e.Kind]++
	}
	return n
}

// counter is the cheapest observer, for benchmarks and allocation tests:
// it counts events; outcomes makes it ask for EventCallEnded.
type counter struct {
	n        atomic.Int64
	outcomes bool
}

func (c *counter) Observe(context.Context, resilience.Event) { c.n.Add(1) }
func (c *counter) ObserveOutcomes() bool                     { return c.outcomes }

// okFunc is the call that succeeds.
func okFunc(context.Context) (int, error) { return 1, nil }

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

// timeoutModes are the two ways a Timeout runs fn.
var timeoutModes = []struct {
	name string
	opts []resilience.TimeoutOption
}{
	{"default", nil},
	{"cooperative", []resilience.TimeoutOption{resilience.WithTimeoutCooperative()}},
}

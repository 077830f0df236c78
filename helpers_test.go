package resilience_test

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
)

// runtimeGoexit ends the calling goroutine, as t.FailNow does.
func runtimeGoexit() { runtime.Goexit() }

func nan() float64 { return math.NaN() }

// manualClock is the tests' clock, counter the cheapest observer and
// okFunc the call that succeeds: the package's own tests share them (see
// helpers_internal_test.go).
type (
	manualClock = resilience.ManualClock
	counter     = resilience.Counter
)

var (
	newManualClock = resilience.NewManualClock
	okFunc         = resilience.OKFunc
)

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
// order, with the context it came with and the time it came at (on the
// package time, which a synctest bubble fakes), and every result handed to
// its discard hook. It is safe for concurrent use. It allocates for each
// event: an allocation test counts events with a counter.
type recorder struct {
	outcomes bool                   // ask for EventCallEnded
	only     resilience.EventKind   // when set, keep the events of this kind alone
	onEvent  func(resilience.Event) // when set, called with each event, once kept

	mu        sync.Mutex
	events    []resilience.Event
	ctxs      []context.Context // the context of each event
	times     []time.Time       // when each event came
	discarded []int
}

func (r *recorder) Observe(ctx context.Context, e resilience.Event) {
	if r.only == 0 || e.Kind == r.only {
		now := time.Now()
		r.mu.Lock()
		r.events = append(r.events, e)
		r.ctxs = append(r.ctxs, ctx)
		r.times = append(r.times, now)
		r.mu.Unlock()
	}
	if r.onEvent != nil {
		r.onEvent(e)
	}
}

func (r *recorder) ObserveOutcomes() bool { return r.outcomes }

// discard is a discard hook that keeps the result.
func (r *recorder) discard(v int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discarded = append(r.discarded, v)
}

// of returns the events of kind k so far, in order.
func (r *recorder) of(k resilience.EventKind) []resilience.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var es []resilience.Event
	for _, e := range r.events {
		if e.Kind == k {
			es = append(es, e)
		}
	}
	return es
}

// take returns the events so far and forgets them.
func (r *recorder) take() []resilience.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events, r.ctxs, r.times = nil, nil, nil
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

// timeoutModes are the two ways a Timeout runs fn.
var timeoutModes = []struct {
	name string
	opts []resilience.TimeoutOption
}{
	{"default", nil},
	{"cooperative", []resilience.TimeoutOption{resilience.WithTimeoutCooperative()}},
}

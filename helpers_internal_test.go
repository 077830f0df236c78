package resilience

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The tests of package resilience_test use the helpers of this file under
// these names (a test file of the package is compiled into theirs).
type (
	ManualClock = manualClock
	ClockWaits  = clockWaits
	Counter     = counter
)

// NewManualClock, OKFunc: see newManualClock, okFunc.
var (
	NewManualClock = newManualClock
	OKFunc         = okFunc
)

// okFunc is the call that succeeds.
func okFunc(context.Context) (int, error) { return 1, nil }

// counter is the cheapest observer, for allocation tests and benchmarks:
// it counts events by kind and allocates nothing, where a recorder keeps
// them. Outcomes makes it ask for EventCallEnded. It is safe for
// concurrent use.
type counter struct {
	n        [32]atomic.Int64
	Outcomes bool
}

func (c *counter) Observe(_ context.Context, e Event) { c.n[e.Kind].Add(1) }
func (c *counter) ObserveOutcomes() bool              { return c.Outcomes }

// Of returns the events of kind k counted.
func (c *counter) Of(k EventKind) int64 { return c.n[k].Load() }

// Total returns the events counted.
func (c *counter) Total() int64 {
	var t int64
	for i := range c.n {
		t += c.n[i].Load()
	}
	return t
}

// manualClock is the tests' clock. Its time starts at the Unix epoch and
// moves only when told: by Add, or by Tick at each reading. It counts its
// readings. A wait on it, a context of WithDeadline, ends as Waits says:
// by default when Add brings the time to its deadline. Set Tick and Waits
// before the clock is used; it is safe for concurrent use.
type manualClock struct {
	// Tick is added to the time at each reading, before the reading: with
	// a nanosecond, goroutines sharing the clock never read the same time.
	Tick time.Duration
	// Waits says when a wait on the clock ends.
	Waits clockWaits

	mu      sync.Mutex
	now     time.Time
	reads   int64
	pending []clockWait     // waits whose deadline is ahead (WaitsEndWhenReached)
	steps   []time.Duration // the waits asked for (WaitsStep)
}

// clockWaits says when a wait on a manualClock ends.
type clockWaits int

const (
	// WaitsEndWhenReached: a wait ends when Add brings the time to its
	// deadline, at once if the time is there.
	WaitsEndWhenReached clockWaits = iota
	// WaitsNeverEnd: a wait ends only with its parent or its cancel
	// function; the time moves but timers never fire.
	WaitsNeverEnd
	// WaitsStep: a wait is recorded (Steps), moves the time to its deadline
	// and is over at once, so code that waits runs through without a
	// second goroutine.
	WaitsStep
	// WaitsOver: every deadline has passed already: a wait is over at once,
	// and the clock allocates nothing for it beyond the context.
	WaitsOver
)

type clockWait struct {
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc
}

func newManualClock() *manualClock { return &manualClock{now: time.Unix(0, 0)} }

// Now reads the clock, after moving it by Tick.
func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.Tick)
	c.reads++
	return c.now
}

// Reads returns the number of readings of the clock so far.
func (c *manualClock) Reads() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Add moves the time by d, back for a negative d, and ends the waits it
// reaches, in the order of their deadlines.
func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []clockWait
	c.pending = slices.DeleteFunc(c.pending, func(w clockWait) bool {
		if !w.at.After(c.now) {
			due = append(due, w)
			return true
		}
		return w.ctx.Err() != nil
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b clockWait) int { return a.at.Compare(b.at) })
	for _, w := range due {
		w.cancel()
	}
}

// WithDeadline returns a context that ends with parent, by its cancel
// function, or as Waits says.
func (c *manualClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.Waits == WaitsNeverEnd:
		return context.WithCancel(parent)
	case c.Waits == WaitsStep:
		c.steps = append(c.steps, d.Sub(c.now))
		c.now = d
		return context.WithDeadline(parent, time.Time{})
	case c.Waits == WaitsOver, !d.After(c.now):
		return context.WithDeadline(parent, time.Time{})
	}
	ctx, cancel := context.WithCancel(parent)
	c.pending = append(c.pending, clockWait{d, ctx, cancel})
	return ctx, cancel
}

// Steps returns the waits asked for so far, each from the time it was
// asked at (WaitsStep).
func (c *manualClock) Steps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.steps)
}

// Pending returns the number of waits neither ended nor released by their
// cancel function (WaitsEndWhenReached).
func (c *manualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.pending {
		if w.ctx.Err() == nil {
			n++
		}
	}
	return n
}

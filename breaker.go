package resilience

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/window"
)

// Breaker is a circuit breaker: after too many failures it opens and refuses
// calls at once with a *[BreakerOpenError]; after a cool-down it lets probe
// calls through (half-open) and closes again when they succeed. It is a
// [Guard], one per service. By default it opens after 5 consecutive
// failures and stays open 30s; every error and panic counts as a failure
// but context.Canceled, which counts neither way ([WithBreakerClassifier]).
// Outcomes of calls admitted before a state change are ignored. Its observer gets
// [EventStateChange], [EventRefused] and [EventCallEnded] (see [Compose]).
// A Breaker is safe for concurrent use; the zero value is not usable.
type Breaker struct {
	cfg   breakerConfig
	timed bool      // tickets carry the call's start
	base  time.Time // the start of the breaker's time line

	view    atomic.Pointer[breakerView] // what the lock-free paths read
	pending atomic.Bool                 // state changes wait in out

	mu     sync.Mutex   // guards what follows; every change of state is made under it
	m      machine      // the state machine the views publish
	closed *breakerView // the latest closed view, for Metrics
	times  *window.Time // the time-based failure window, if any
	out    outbox
	cause  context.Context // the context of the call changing the state, while it does
}

// breakerView is one generation of the breaker's state as the lock-free
// paths see it. A change of state publishes a new view with one atomic
// store, so a call that sees a state sees all that goes with it: an open
// breaker's refusal, a closed one's counters. Only the counters change
// after it is published.
type breakerView struct {
	gen    uint64
	state  BreakerState
	ticket uint64 // closed: the ticket of a call, before its start is stamped

	// closed
	done     func(error)   // shared by the calls Enter admits
	failures atomic.Int64  // consecutive
	ring     *window.Count // the count-based failure window, if any
	bare     bool          // no window, no expiry: a success only resets failures

	// open
	err     *BreakerOpenError
	ready   atomic.Bool // real clock: the cool-down's timer has fired
	refusal error       // err, where enter may refuse with it at once

	admits bool // closed, and calls are untimed: enter admits at once
	lean   bool // admits, and bare: a success only resets failures
}

// A ticket, the gate's record of an admitted call, holds the generation,
// a probe bit and, when the breaker times calls, the call's start in
// microseconds on the breaker's time line.
const (
	ticketGenShift = 41
	ticketProbe    = 1 << 40
	ticketTimeMask = 1<<40 - 1
	genMask        = 1<<(64-ticketGenShift) - 1
)

// NewBreaker returns a closed breaker. It panics if an option is nil or
// invalid, or if no rule could ever open the breaker.
func NewBreaker(opts ...BreakerOption) *Breaker {
	cfg := defaultBreakerConfig()
	for _, o := range opts {
		checkOption("NewBreaker", o)
		o.applyBreaker(&cfg)
	}
	cfg.check()
	if cfg.common.rand != nil {
		cfg.rand = source{cfg.common.rand}
	}
	cfg.route = newRoute(KindBreaker, &cfg.common)
	b := &Breaker{cfg: cfg, timed: cfg.slow > 0 || cfg.outcomes, base: cfg.now()}
	if cfg.windowSpan > 0 {
		b.times = window.NewTime(cfg.windowSpan)
	}
	b.publish(BreakerClosed)
	return b
}

// commit publishes the machine's state if a transition made since the
// machine was at generation gen and state from changed it. b.mu is held.
func (b *Breaker) commit(from BreakerState, gen uint64) {
	if b.m.gen != gen {
		b.publish(from)
	}
}

// publish makes the machine's state the one calls see, and queues the
// change from state from for the observer and the hook. b.mu is held.
func (b *Breaker) publish(from BreakerState) {
	m := &b.m
	v := &breakerView{gen: m.gen, state: m.state}
	switch m.state {
	case BreakerClosed:
		t := (m.gen & genMask) << ticketGenShift
		v.ticket, v.done = t, func(err error) { b.exit(context.Background(), t, err, true) }
		if b.cfg.windowCalls > 0 {
			v.ring = window.NewCount(b.cfg.windowCalls)
		}
		if b.times != nil {
			b.times.Reset()
		}
		v.bare = v.ring == nil && b.times == nil && b.cfg.expiry == 0
		v.admits = !b.timed
		v.lean = v.admits && v.bare
		b.closed = v
	case BreakerOpen:
		v.err = &BreakerOpenError{until: m.until, isolated: m.isolated, cfg: &b.cfg}
		if b.cfg.clock == nil && !b.cfg.reports() {
			v.refusal = v.err
		}
		if b.cfg.clock == nil && !m.isolated {
			// On the real clock a timer marks the end of the cool-down, so
			// that a refusal reads no clock. It is never stopped: firing on
			// a view that calls no longer see does nothing, and a timer made
			// inside a testing/synctest bubble may not be stopped from
			// outside it.
			if d := time.Until(m.until); d > 0 {
				time.AfterFunc(d, func() { v.ready.Store(true) })
			} else {
				v.ready.Store(true)
			}
		}
	}
	b.view.Store(v)
	if from != m.state {
		b.queue(from, m.state)
	}
}

// Enter admits a call or refuses it with an error matching ErrBreakerOpen.
// The done function must be called exactly once with the call's outcome;
// the events it causes carry ctx.
func (b *Breaker) Enter(ctx context.Context) (done func(err error), err error) {
	t, err := b.enter(ctx, true)
	if err != nil {
		return nil, err
	}
	// The closed state's shared done knows no call's context: with an
	// observer, done is the call's own, so that its events carry ctx.
	if v := b.view.Load(); v.state == BreakerClosed && t == v.ticket && !b.cfg.reports() {
		return v.done, nil
	}
	return func(err error) { b.exit(ctx, t, err, true) }, nil
}

// enter admits or refuses a call. The two common cases read the view and
// nothing else: a closed breaker admitting an untimed call, and an open
// one refusing on the real clock with no observer to tell.
func (b *Breaker) enter(ctx context.Context, _ bool) (uint64, error) {
	v := b.view.Load()
	if v.admits {
		return v.ticket, nil
	}
	if v.refusal != nil && !v.ready.Load() {
		return 0, v.refusal
	}
	return b.enterOther(ctx)
}

// enterOther is enter in any other case: a timed call, an open or a
// half-open breaker. An open breaker on the real clock refuses without
// reading the clock: its cool-down's timer says when it is over.
func (b *Breaker) enterOther(ctx context.Context) (uint64, error) {
	v := b.view.Load()
	switch v.state {
	case BreakerClosed:
		return b.stamp(v.ticket), nil
	case BreakerOpen:
		if !v.ready.Load() && (b.cfg.clock == nil || !b.coolDownOver(v)) {
			if b.cfg.reports() {
				b.reportRefusal(ctx, v.err)
			}
			return 0, v.err
		}
	}
	return b.enterSlow(ctx)
}

// stamp adds the call's start to a ticket when the breaker times calls.
func (b *Breaker) stamp(t uint64) uint64 {
	if b.timed {
		t |= b.micros() & ticketTimeMask
	}
	return t
}

// micros is the time on the breaker's time line in microseconds: on the
// real clock a monotonic reading, on an injected one the difference of
// its readings.
func (b *Breaker) micros() uint64 { return uint64(b.cfg.since(b.base) / time.Microsecond) }

// took returns how long the call of ticket t took. A clock that went back
// during the call (an injected one) makes it take no time.
func (b *Breaker) took(t uint64) time.Duration {
	d := (b.micros() - t) & ticketTimeMask
	if d >= 1<<39 {
		return 0
	}
	return time.Duration(d) * time.Microsecond
}

func (b *Breaker) coolDownOver(v *breakerView) bool {
	switch {
	case v.err.isolated:
		return false
	case b.cfg.clock == nil:
		return v.ready.Load()
	}
	return !b.cfg.now().Before(v.err.until)
}

// enterSlow admits a call in the half-open state, or moves an open breaker
// whose cool-down is over to half-open first.
func (b *Breaker) enterSlow(ctx context.Context) (uint64, error) {
	now := b.cfg.now()
	var t uint64
	var err error
	b.change(ctx, func() any {
		from, gen := b.m.state, b.m.gen
		admitted, probe := b.m.admit(now, b.cfg.probes)
		b.commit(from, gen)
		switch {
		case admitted:
			t = (b.m.gen & genMask) << ticketGenShift
			if probe {
				t |= ticketProbe
			}
		case b.m.state == BreakerOpen:
			err = b.view.Load().err
		default:
			err = errProbesBusy
		}
		return nil
	})
	if err != nil {
		if b.cfg.reports() {
			b.reportRefusal(ctx, err)
		}
		return 0, err
	}
	return b.stamp(t), nil
}

// change runs f under the lock for the call of context ctx, then delivers
// the state changes it made, and lets a panic of the cool-down backoff,
// which f returns, go on.
func (b *Breaker) change(ctx context.Context, f func() (panicked any)) {
	p := b.locked(ctx, f)
	b.deliver()
	if p != nil {
		panic(p)
	}
}

// locked runs f under the lock. The state changes f makes are reported
// with ctx, the context of the call that made them.
func (b *Breaker) locked(ctx context.Context, f func() any) any {
	b.mu.Lock()
	b.cause = ctx
	defer func() { // also if f panics
		b.cause = nil
		b.mu.Unlock()
	}()
	return f()
}

// exit ends the call of ticket t, whose context is ctx, with its outcome;
// report says whether its EventCallEnded is reported.
func (b *Breaker) exit(ctx context.Context, t uint64, err error, report bool) {
	if err == nil && !b.timed {
		if v := b.view.Load(); t == v.ticket && v.state == BreakerClosed {
			if v.bare {
				// No window to count in: a success only ends a run of
				// consecutive failures.
				if v.failures.Load() != 0 {
					v.failures.Store(0)
				}
				return
			}
			b.closedSuccess(ctx, v)
			return
		}
	}
	b.exitOther(ctx, t, err, report)
}

func (b *Breaker) reportsOutcomes() bool { return b.cfg.outcomes }

// exitOther is exit for anything but a success in the closed state. A
// panic of the classifier goes on once the outcome is counted and
// reported.
func (b *Breaker) exitOther(ctx context.Context, t uint64, err error, report bool) {
	var took time.Duration
	if b.timed {
		took = b.took(t)
	}
	panicked := b.record(ctx, t, err, took)
	if b.cfg.outcomes && report {
		b.ended(ctx, err, took)
	}
	if panicked != nil {
		panic(panicked)
	}
}

// record counts the outcome of the call of ticket t, and returns what the
// classifier panicked with, if it did.
func (b *Breaker) record(ctx context.Context, t uint64, err error, took time.Duration) (panicked any) {
	failed, counts, panicked := b.judge(err, took)
	v := b.view.Load()
	switch {
	case t>>ticketGenShift != v.gen&genMask:
		// a call from an earlier state: ignored
	case t&ticketProbe != 0:
		b.probeEnded(ctx, t, failed, counts)
	case !counts || v.state != BreakerClosed:
	case failed:
		b.closedOutcome(ctx, v, true)
	default:
		b.closedSuccess(ctx, v)
	}
	return panicked
}

// closedSuccess counts a success in the closed state of view v.
func (b *Breaker) closedSuccess(ctx context.Context, v *breakerView) {
	if b.cfg.expiry == 0 && v.failures.Load() != 0 {
		v.failures.Store(0)
	}
	switch {
	case v.ring != nil:
		// A success lowers the failure rate, except when its outcome is
		// the one that brings the window to its minimum of calls.
		if v.ring.Record(false)+1 == uint64(b.cfg.minCalls) {
			b.closedOutcome(ctx, v, false)
		}
	case b.times != nil:
		b.closedOutcome(ctx, v, false)
	}
}

// judge says whether an outcome is a failure and whether it counts at all
// (not if the classifier ignores it), and what the classifier panicked
// with, if it did.
func (b *Breaker) judge(err error, took time.Duration) (failed, counts bool, panicked any) {
	o := OutcomeSuccess
	if err != nil {
		o, panicked = classify(b.cfg.classifier, err)
	}
	if o == OutcomeIgnored {
		return false, false, panicked
	}
	return o == OutcomeFailure || (b.cfg.slow > 0 && took > b.cfg.slow), true, panicked
}

// closedOutcome counts, under the lock, an outcome in the closed state of
// view v, and trips the breaker when a rule says so. A success comes here
// only to be checked against the window's rate, a count-based window
// having recorded it already.
func (b *Breaker) closedOutcome(ctx context.Context, v *breakerView, failed bool) {
	now := b.cfg.now()
	b.change(ctx, func() any {
		if b.view.Load() != v {
			return nil // a state change came first
		}
		trip := false
		switch {
		case v.ring != nil:
			if failed {
				v.ring.Record(true)
			}
			calls, failures := v.ring.Counts()
			trip = rateTrips(b.cfg.rate, b.cfg.minCalls, calls, failures)
		case b.times != nil:
			at := now.Sub(b.base)
			b.times.Record(at, failed)
			calls, failures := b.times.Counts(at)
			trip = rateTrips(b.cfg.rate, b.cfg.minCalls, calls, failures)
		}
		if failed && b.cfg.threshold > 0 {
			if b.cfg.expiry > 0 && b.m.failureExpired(now, b.cfg.expiry) {
				v.failures.Store(0)
			}
			trip = v.failures.Add(1) >= int64(b.cfg.threshold) || trip
		}
		if trip {
			return b.trip(now, false)
		}
		return nil
	})
}

func (b *Breaker) probeEnded(ctx context.Context, t uint64, failed, counts bool) {
	now := b.cfg.now()
	b.change(ctx, func() any {
		from, gen := b.m.state, b.m.gen
		if b.m.probeEnded(t>>ticketGenShift, failed, counts, b.cfg.successes) {
			return b.trip(now, false)
		}
		b.commit(from, gen)
		return nil
	})
}

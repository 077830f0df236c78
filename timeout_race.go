package resilience

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"weak"

	"github.com/faf87a20/resilience/internal/sat"
	"github.com/faf87a20/resilience/internal/workers"
)

// States of a timedCall, in the low bits of its state word: whoever moves
// it out of running decides who owns the outcome.
const (
	callIdle uint64 = iota // before the first call
	callRunning
	callFinished
	callAbandoned

	callBits = 2
	callMask = 1<<callBits - 1
)

// timedCall is one run of fn on another goroutine in the default mode (see
// internal/workers). Whoever moves its state out of running decides who
// owns the outcome: the worker, having written fn's outcome, or the
// caller's side, abandoning the call. The caller waits in one of two ways.
//
// When the caller's context can never end (its Done is nil, as
// context.Background's) and the clock is the real one, outside
// testing/synctest bubbles, the caller waits for one message on reply:
// the worker's, or the alarm's at the deadline. The alarm is a timer kept
// with the timedCall in the pool: set for the deadline of an earlier call,
// it is set again only when it fires (see ring), so that a call sets no
// timer but its context's, and needs no Done channel of fn's context:
// such a call allocates nothing but its context.
//
// Otherwise the caller waits for fn's context to end: at the deadline,
// with the caller's context, or when the worker, having written the
// outcome, cancels it.
type timedCall[T any] struct {
	// state is the call's deadline, in nanoseconds on the alarms' time
	// line (0 without an alarm), shifted left by callBits, with the
	// call's state in the low bits: the deadline tells one call from the
	// next one on the same timedCall.
	state atomic.Uint64
	v     T
	err   error
	panic *PanicError

	reply   chan struct{} // 1-buffered, the one message of a call; nil under an injected clock or in a bubble
	alarm   *time.Timer   // made by the first call under it
	due     atomic.Int64  // when alarm fires, on the time line; 0 if it is not set
	bubbled bool          // made in a testing/synctest bubble: never pooled

	// The call, set by the caller before it hands the task over.
	t      *timeout[T]
	parent context.Context    // the caller's
	ctx    context.Context    // fn's
	cancel context.CancelFunc // ends ctx, to wake a caller that waits for its end
	next   chain[T]
	fn     Func[T]
}

// alarmEpoch starts the time line of alarms: readings of the monotonic
// clock, in nanoseconds since the package was initialised.
var alarmEpoch = time.Now()

// maxDeadline is the latest deadline a state word holds: 73 years.
const maxDeadline = math.MaxInt64 >> callBits

// deadlineAt returns the deadline d after now on the alarms' time line.
func deadlineAt(now time.Time, d time.Duration) int64 {
	return int64(min(sat.Add(max(now.Sub(alarmEpoch), 0), d), maxDeadline))
}

func (t *timeout[T]) race(ctx context.Context, next chain[T], fn Func[T], report bool) (T, error) {
	now, start := t.begin()
	tctx, cancel := t.withDeadline(ctx, now)
	c := t.call(now)
	c.parent, c.ctx, c.next, c.fn = ctx, tctx, next, fn
	w := callRunning
	alarmed := c.reply != nil && ctx.Done() == nil
	if alarmed {
		dl := deadlineAt(now, t.d)
		w |= uint64(dl) << callBits
		c.state.Store(w) // before arm reads due: see ring
		c.arm(dl, t.d)
	} else {
		c.cancel = cancel
		c.state.Store(w)
	}
	workers.Go(ctx, now, c)

	if alarmed {
		<-c.reply
	} else {
		<-tctx.Done()
	}
	if c.state.Load()&callMask == callAbandoned || !alarmed && c.state.CompareAndSwap(w, callAbandoned) {
		return t.abandoned(ctx, tctx, cancel, start, report)
	}
	// fn returned before its context ended, and its outcome was written
	// before the state changed. A caller that waited for fn's context to
	// end has nothing left to end.
	if alarmed {
		cancel()
	}
	return t.collect(ctx, c, start, report)
}

// call returns a timedCall for a call that starts at now: one from the
// pool, outside testing/synctest bubbles, or a new one.
func (t *timeout[T]) call(now time.Time) *timedCall[T] {
	if workers.InBubble(now) {
		return &timedCall[T]{t: t, bubbled: true}
	}
	if c, _ := t.calls.Get().(*timedCall[T]); c != nil {
		return c
	}
	c := &timedCall[T]{t: t}
	if t.clock == nil {
		c.reply = make(chan struct{}, 1)
	}
	return c
}

// arm makes sure c's alarm fires by dl, the deadline of the call starting
// on c, d from now. An alarm that is set fires by then already: it was set
// for the deadline of an earlier call on c, no later than dl.
func (c *timedCall[T]) arm(dl int64, d time.Duration) {
	if c.due.Load() != 0 || !c.due.CompareAndSwap(0, dl) {
		return
	}
	if c.alarm != nil {
		c.alarm.Reset(d)
		return
	}
	// The first alarm of c. It holds c weakly, so that a c the pool lets
	// go of is collected at once rather than when its alarm fires, which
	// the collection stops.
	weakC := weak.Make(c)
	c.alarm = time.AfterFunc(d, func() {
		if c := weakC.Value(); c != nil {
			c.ring()
		}
	})
	runtime.AddCleanup(c, stopAlarm, c.alarm)
}

func stopAlarm(t *time.Timer) { t.Stop() }

// ring runs when c's alarm fires. It abandons the call on c whose deadline
// has passed, and wakes its caller; sets the alarm again for the deadline
// of a call still running; and leaves it unset when no call runs. A call
// that starts meanwhile either finds the alarm unset and sets it, or is
// seen here: the state is stored before due is read, and the reverse here.
func (c *timedCall[T]) ring() {
	for {
		due, w := c.due.Load(), c.state.Load()
		if !alarmed(w) {
			if c.due.CompareAndSwap(due, 0) && !alarmed(c.state.Load()) {
				return
			}
			continue
		}
		dl := int64(w >> callBits)
		if now := int64(time.Since(alarmEpoch)); now < dl {
			if c.due.CompareAndSwap(due, dl) {
				c.alarm.Reset(time.Duration(dl - now))
				return
			}
			continue
		}
		if c.state.CompareAndSwap(w, w&^callMask|callAbandoned) {
			c.due.Store(0) // an abandoned call is never reused
			c.reply <- struct{}{}
			return
		}
	}
}

// alarmed reports whether state word w is that of a call running under
// the alarm.
func alarmed(w uint64) bool { return w&callMask == callRunning && w>>callBits != 0 }

// abandoned is the outcome of a call whose context ended, or whose
// deadline passed, before fn returned. The caller returns once fn's
// context has ended of itself, at its deadline or with the caller's, so
// that its error and cause are those and never change after.
func (t *timeout[T]) abandoned(ctx, tctx context.Context, cancel context.CancelFunc, start time.Time, report bool) (T, error) {
	<-tctx.Done()
	cancel()
	var zero T
	err := expired(ctx)
	t.ended(ctx, start, err, err == ErrTimeout, report)
	return zero, err
}

// collect returns the outcome fn's worker wrote, and recycles c. A panic or
// runtime.Goexit in fn happens again in the caller's goroutine.
func (t *timeout[T]) collect(ctx context.Context, c *timedCall[T], start time.Time, report bool) (T, error) {
	v, err, pe := c.v, c.err, c.panic
	var zero T
	c.v, c.err, c.panic = zero, nil, nil
	c.parent, c.ctx, c.cancel, c.next, c.fn = nil, nil, nil, nil, nil
	if !c.bubbled {
		t.calls.Put(c) // finished: its alarm, if set, finds no call to time
	}
	if pe != nil {
		t.ended(ctx, start, pe, false, report)
		repanic(pe)
	}
	t.ended(ctx, start, err, false, report)
	return v, err
}

// ended reports the end of a default-mode call to the observer, if any;
// report says whether its EventCallEnded is reported.
func (t *timeout[T]) ended(ctx context.Context, start time.Time, err error, timedOut, report bool) {
	if t.observer == nil {
		return
	}
	if timedOut {
		t.observe(ctx, Event{Kind: EventTimeout, Component: KindTimeout, Wait: t.d})
	}
	if report {
		t.observe(ctx, Event{Kind: EventCallEnded, Component: KindTimeout, Err: err, Duration: t.since(start)})
	}
}

// Run calls fn and hands its outcome, or its panic, to the caller if the
// caller still waits. Once its own state change succeeds it leaves c
// alone but for the message that wakes the caller, for the caller reuses c
// at once; a c the caller abandoned is never reused, so writing to it
// first is harmless.
//
// A fn that returns after its context ended lost the race whatever it
// returns, even when it gets to change the state first: the deadline passed
// first. Run then leaves the state to the caller or the alarm, one of which
// is awake already or about to be, and hands a result to the discard hook.
// A panic or Goexit, on the other hand, reaches the caller as long as the
// caller has not given up (see the package doc's Panics section).
func (c *timedCall[T]) Run() {
	t, ctx, cancel, next, fn := c.t, c.ctx, c.cancel, c.next, c.fn
	w := c.state.Load()&^callMask | callRunning
	finished := false
	defer func() {
		if finished {
			return
		}
		pe := newPanicError(recover())
		c.panic = pe
		if !c.finish(w, cancel) && t.observer != nil {
			t.observeDetached(ctx, Event{Kind: EventLatePanic, Component: KindTimeout, Panic: pe})
		}
	}()
	v, err := next(ctx, fn)
	finished = true
	if ctx.Err() == nil && (err == nil || !t.pastDeadline(c.parent, ctx)) {
		c.v, c.err = v, err
		if c.finish(w, cancel) {
			return
		}
	}
	if err == nil {
		t.discarded(ctx, v, true) // abandoned: nobody returns this result
	}
}

// finish moves the call of state word w from running to finished, and
// wakes its caller, by cancel when it waits for fn's context to end,
// unless the caller or the alarm abandoned the call first.
func (c *timedCall[T]) finish(w uint64, cancel context.CancelFunc) bool {
	if !c.state.CompareAndSwap(w, w&^callMask|callFinished) {
		return false
	}
	if cancel != nil {
		cancel()
	} else {
		c.reply <- struct{}{}
	}
	return true
}

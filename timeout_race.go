package resilience

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/workers"
)

// Call states of a timedCall: whoever moves it out of running decides who
// owns the outcome.
const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// timedCall is one run of fn on another goroutine in the default mode (see
// internal/workers). The caller waits until fn's context ends: at the
// deadline, with the parent, or when the worker, having written fn's
// outcome, cancels it. Whoever moves state out of running decides: the
// worker, after writing the outcome, or the caller, abandoning the call.
// It holds no channel and no timer, so the pool may hand it from one
// goroutine to any other, inside a testing/synctest bubble or not.
type timedCall[T any] struct {
	state atomic.Int32
	v     T
	err   error
	panic *PanicError

	// The call, set by the caller before it hands the task over.
	t      *timeout[T]
	parent context.Context // the caller's
	ctx    context.Context // fn's
	cancel context.CancelFunc
	next   chain[T]
	fn     Func[T]
}

func (t *timeout[T]) race(ctx context.Context, next chain[T], fn Func[T], report bool) (T, error) {
	now, start := t.begin()
	tctx, cancel := t.withDeadline(ctx, now)
	c, _ := t.calls.Get().(*timedCall[T])
	if c == nil {
		c = &timedCall[T]{t: t}
	}
	c.parent, c.ctx, c.cancel, c.next, c.fn = ctx, tctx, cancel, next, fn
	workers.Go(ctx, now, c)

	<-tctx.Done()
	if c.state.CompareAndSwap(callRunning, callAbandoned) {
		cancel()
		return t.abandoned(ctx, start, report)
	}
	// fn returned before its context ended, and its outcome was written
	// before the state changed.
	cancel()
	return t.collect(ctx, c, start, report)
}

// abandoned is the outcome of a call whose context ended before fn
// returned.
func (t *timeout[T]) abandoned(ctx context.Context, start time.Time, report bool) (T, error) {
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
	c.state.Store(callRunning)
	t.calls.Put(c)
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
		t.observe(ctx, Event{Kind: EventTimeout, Component: "timeout", Wait: t.d})
	}
	if report {
		t.observe(ctx, Event{Kind: EventCallEnded, Component: "timeout", Err: err, Duration: t.since(start)})
	}
}

// Run calls fn and hands its outcome, or its panic, to the caller if the
// caller still waits, then wakes the caller by canceling fn's context.
// Once Run's own state change succeeds it leaves c alone, for the caller
// reuses c at once; a c the caller abandoned is never reused, so writing
// to it first is harmless.
//
// A fn that returns after its context ended lost the race whatever it
// returns, even when it gets to change the state first: the deadline passed
// first. Run then leaves the state to the caller, who is awake already or
// about to be, and hands a result to the discard hook. A panic or Goexit,
// on the other hand, reaches the caller as long as the caller has not
// given up (see the package doc's Panics section).
func (c *timedCall[T]) Run() {
	t, ctx, cancel, next, fn := c.t, c.ctx, c.cancel, c.next, c.fn
	finished := false
	defer func() {
		if finished {
			return
		}
		pe := newPanicError(recover())
		c.panic = pe
		if c.state.CompareAndSwap(callRunning, callFinished) {
			cancel()
		} else if t.observer != nil {
			t.observeDetached(ctx, Event{Kind: EventLatePanic, Component: "timeout", Panic: pe})
		}
	}()
	v, err := next(ctx, fn)
	finished = true
	if ctx.Err() == nil && (err == nil || !t.pastDeadline(c.parent, ctx)) {
		c.v, c.err = v, err
		if c.state.CompareAndSwap(callRunning, callFinished) {
			cancel()
			return
		}
	}
	if err == nil {
		t.discarded(ctx, v, true) // abandoned: nobody returns this result
	}
}

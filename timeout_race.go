package resilience

import (
	"context"
	"sync/atomic"
	"time"
	"unsafe"
)

// Call states of a timedCall: whoever moves it out of running decides who
// owns the result.
const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// timedCall is one run of fn on a worker goroutine (see startTask) in the
// default mode. The caller waits until fn returns, the deadline passes or
// the parent ends. Whoever moves state out of running decides: the worker,
// after writing the outcome, or the caller, abandoning the call.
//
// On the standard context, the worker tells the caller by canceling fn's
// context, the one channel the caller waits on. On a deadlineCtx, which has
// no channel until fn asks for one, the caller waits on wake, a channel of
// the timedCall's own, reused with it: the worker and the deadlineCtx's
// end both send on it. A token may arrive late, from a call that is over,
// so the caller checks what happened each time it wakes.
type timedCall[T any] struct {
	state atomic.Int32
	v     T
	err   error
	panic *PanicError
	wake  chan struct{}      // made once, with the timedCall
	tell  func(*deadlineCtx) // wake's hook on a deadlineCtx, made with wake

	// The call, set by the caller before it hands the task over.
	t      *timeout[T]
	ctx    context.Context
	own    *deadlineCtx       // ctx, when it is a deadlineCtx
	cancel context.CancelFunc // nil on a deadlineCtx
	next   chain[T]
	fn     Func[T]
}

func (t *timeout[T]) race(ctx context.Context, next chain[T], fn Func[T]) (T, error) {
	var start time.Time
	if t.outcomes {
		start = t.now()
	}
	c, _ := t.calls.Get().(*timedCall[T])
	if c == nil {
		wake := make(chan struct{}, 1)
		c = &timedCall[T]{t: t, wake: wake, tell: wakeHook(wake)}
	}
	if dc := t.newDeadline(ctx); dc != nil {
		return t.raceOwn(ctx, next, fn, c, dc, start)
	}
	tctx, cancel := t.withDeadline(ctx)
	c.ctx, c.cancel, c.next, c.fn = tctx, cancel, next, fn
	if inBubble() {
		go c.run() // the bubble's goroutines must not outlive it
	} else {
		startTask(c, c.hint())
	}

	<-tctx.Done()
	if c.state.CompareAndSwap(callRunning, callAbandoned) {
		cancel()
		return t.abandoned(ctx, start)
	}
	// fn returned before its context ended, and its outcome was written
	// before the state changed.
	cancel()
	return t.collect(ctx, c, start)
}

// raceOwn is race on a deadlineCtx. The caller watches the parent itself,
// so the deadlineCtx need not: it is on the wheel, to wake the caller at the
// deadline, and has no Done channel unless fn asks for one.
func (t *timeout[T]) raceOwn(ctx context.Context, next chain[T], fn Func[T], c *timedCall[T], dc *deadlineCtx, start time.Time) (T, error) {
	dc.hook, dc.watched = c.tell, true
	dc.armNew()
	c.ctx, c.own, c.cancel, c.next, c.fn = dc, dc, nil, next, fn
	startTask(c, c.hint())

	parent := ctx.Done()
	for {
		if parent == nil {
			<-c.wake
		} else {
			select {
			case <-c.wake:
			case <-parent:
			}
		}
		if c.state.Load() == callFinished {
			break
		}
		if dc.live() {
			// The wheel ends dc at the deadline; the parent, the caller
			// watches.
			if ctx.Err() == nil {
				continue // a token from an earlier call
			}
			dc.end(dlParent)
		}
		if c.state.CompareAndSwap(callRunning, callAbandoned) {
			dc.release()
			return t.abandoned(ctx, start)
		}
		break // fn returned just before
	}
	dc.release()
	select {
	case <-c.wake: // the worker's token, or a late one
	default:
	}
	return t.collect(ctx, c, start)
}

// abandoned is the outcome of a call whose context ended before fn
// returned.
func (t *timeout[T]) abandoned(ctx context.Context, start time.Time) (T, error) {
	var zero T
	err := expired(ctx)
	t.ended(ctx, start, err, err == ErrTimeout)
	return zero, err
}

// collect returns the outcome fn's worker wrote, and recycles c.
func (t *timeout[T]) collect(ctx context.Context, c *timedCall[T], start time.Time) (T, error) {
	v, err, pe := c.v, c.err, c.panic
	var zero T
	c.v, c.err, c.panic = zero, nil, nil
	c.ctx, c.own, c.cancel, c.next, c.fn = nil, nil, nil, nil, nil
	c.state.Store(callRunning)
	t.calls.Put(c)
	if pe != nil {
		if pe.Value == errGoexit {
			t.ended(ctx, start, pe, false)
			return v, pe
		}
		panic(pe.Value)
	}
	t.ended(ctx, start, err, false)
	return v, err
}

// ended reports the end of a default-mode call to the observer, if any.
func (t *timeout[T]) ended(ctx context.Context, start time.Time, err error, timedOut bool) {
	if t.observer == nil {
		return
	}
	if timedOut {
		t.observe(ctx, Event{Kind: EventTimeout, Component: "timeout", Wait: t.d})
	}
	if t.outcomes {
		t.observe(ctx, Event{Kind: EventCallEnded, Component: "timeout", Err: err, Duration: t.since(start)})
	}
}

// run calls fn and hands its outcome, or its panic, to the caller if the
// caller still waits and fn's context has not ended, then wakes the caller.
// Once run's own state change succeeds it leaves c alone, for the caller
// reuses c at once; a c the caller abandoned is never reused, so writing to
// it first is harmless.
//
// A fn that returns after its context ended lost the race whatever it
// returns, even when it gets to change the state first: the deadline passed
// first. run then leaves the state to the caller, who is awake already or
// about to be, and hands a result to the discard hook.
func (c *timedCall[T]) run() {
	t, ctx, own, cancel, wake, next, fn := c.t, c.ctx, c.own, c.cancel, c.wake, c.next, c.fn
	finished := false
	defer func() {
		if finished {
			return
		}
		pe := newPanicError(recover())
		c.panic = pe
		if c.state.CompareAndSwap(callRunning, callFinished) {
			notify(cancel, wake)
		} else if t.observer != nil {
			t.observeDetached(ctx, Event{Kind: EventLatePanic, Component: "timeout", Panic: pe})
		}
	}()
	v, err := next(ctx, fn)
	finished = true
	if live(ctx, own) {
		c.v, c.err = v, err
		if c.state.CompareAndSwap(callRunning, callFinished) {
			notify(cancel, wake)
			return
		}
	}
	if err == nil {
		t.discarded(ctx, v, true) // abandoned: nobody returns this result
	}
}

// hint is where startTask looks first for a parked worker: the address
// of c counted in timedCalls, so that a caller who reuses its timedCall
// finds the worker that served it last, and callers with timedCalls of
// their own look in different places.
func (c *timedCall[T]) hint() uintptr { return uintptr(unsafe.Pointer(c)) / unsafe.Sizeof(*c) }

// live reports whether fn's context has not ended. A deadlineCtx on the
// wheel ends when the wheel or the caller ends it: its state says, with no
// reading of the clock.
func live(ctx context.Context, own *deadlineCtx) bool {
	if own != nil {
		return own.live()
	}
	return ctx.Err() == nil
}

// notify wakes the caller of a call whose fn returned.
func notify(cancel context.CancelFunc, wake chan struct{}) {
	if cancel != nil {
		cancel()
		return
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

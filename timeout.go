package resilience

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Timeout returns a policy that gives fn at most d to return.
//
// By default the policy returns at the deadline even when fn ignores its
// context: fn runs in a goroutine other than the caller's (a parked worker
// reused from call to call, so a stack grown once stays grown), and when the deadline passes
// first, Execute returns an error matching [ErrTimeout] (and
// context.DeadlineExceeded) while fn goes on until it returns, its result
// dropped. Nothing is left behind once fn returns. [WithTimeoutCooperative] runs fn
// in the caller's goroutine instead, which is cheaper, and relies on fn
// returning when its context ends.
//
// The context fn receives carries the deadline, and ErrTimeout as its cause
// (see [context.Cause]) when it comes from the real clock. When the caller's
// own context ends first, Execute returns the caller's error, not ErrTimeout.
//
// The deadline decides, in both modes: when fn's context ended before fn
// returned, the outcome is an error (ErrTimeout, or the caller's error),
// whatever fn returns, even a fn that noticed the deadline and returned a
// result at once. A result that comes after the deadline goes to the
// [WithDiscard] hook, if there is one, exactly once: in the default mode
// from fn's goroutine, so the caller never waits for it; in the cooperative
// mode, which waits for fn anyway, before Execute returns.
//
// A panic in fn reaches the caller's goroutine with its original value. A
// panic in an abandoned fn, one that has outlived its deadline, reaches no
// caller: it is dropped, after being reported to the observer as an
// [EventLatePanic] if there is one.
//
// An observer given with [WithObserver] receives an [EventTimeout] (Wait is
// d) when the deadline passes first, an [EventDiscarded] for each late
// result handed to the discard hook, and an [EventCallEnded] for every call
// if it asked for outcomes.
//
// A d of 0 means no timeout: fn is called directly. Timeout panics if d is
// negative; its Execute panics if fn is nil, as [Do] does.
func Timeout[T any](d time.Duration, opts ...TimeoutOption) Policy[T] {
	if d < 0 {
		panic(fmt.Sprintf("resilience: Timeout: duration must not be negative, got %v", d))
	}
	var cfg timeoutConfig
	for _, o := range opts {
		if o == nil {
			panic("resilience: Timeout: option is nil")
		}
		o.applyTimeout(&cfg)
	}
	t := &timeout[T]{d: d, timeoutConfig: cfg, last: last[T]()}
	t.discard = discardOf[T]("Timeout", cfg.discard)
	return t
}

// TimeoutOption configures [Timeout]. [Option] ([WithClock],
// [WithObserver], [WithName]) and [WithDiscard] are ones too.
type TimeoutOption interface {
	applyTimeout(*timeoutConfig)
}

type timeoutConfig struct {
	common
	cooperative bool
	discard     any // func(T), checked by Timeout[T]
}

type timeoutOptionFunc func(*timeoutConfig)

func (f timeoutOptionFunc) applyTimeout(c *timeoutConfig) { f(c) }

func (o Option) applyTimeout(c *timeoutConfig) { o.set(&c.common) }

// WithTimeoutCooperative makes a [Timeout] run fn in the caller's goroutine and rely
// on fn returning when its context ends. It costs little more than
// context.WithTimeout, but a fn that ignores its context holds the caller
// past the deadline. When fn returns an error after the deadline, the error
// matches both ErrTimeout and fn's own error; when it returns a result
// after the deadline, the outcome is ErrTimeout and the result goes to the
// [WithDiscard] hook. By default a Timeout is not
// cooperative.
func WithTimeoutCooperative() TimeoutOption {
	return timeoutOptionFunc(func(c *timeoutConfig) { c.cooperative = true })
}

type timeout[T any] struct {
	d time.Duration
	timeoutConfig
	discard func(T)
	calls   sync.Pool // of *timedCall[T], reused when the caller got the result
	last    chain[T]  // made once: made in Execute, it would escape to fn's goroutine
}

func (t *timeout[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Timeout: fn is nil")
	}
	return t.run(ctx, t.last, fn)
}

// link returns the timeout as a layer around next; a Timeout of 0 is no
// layer at all.
func (t *timeout[T]) link(next chain[T]) chain[T] {
	if t.d == 0 {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) { return t.run(ctx, next, fn) }
}

func (t *timeout[T]) run(ctx context.Context, next chain[T], fn Func[T]) (T, error) {
	if t.d == 0 {
		return next(ctx, fn)
	}
	if t.cooperative {
		return t.cooperate(ctx, next, fn)
	}
	return t.race(ctx, next, fn)
}

// withDeadline derives fn's context from the configured clock.
func (t *timeout[T]) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return t.withTimeout(ctx, t.d, ErrTimeout)
}

// expired is the outcome of a call whose context ended before fn returned:
// the parent's error when the parent ended, otherwise ErrTimeout.
func expired(parent context.Context) error {
	if err := parent.Err(); err != nil {
		return err
	}
	return ErrTimeout
}

func (t *timeout[T]) cooperate(ctx context.Context, next chain[T], fn Func[T]) (v T, err error) {
	var start time.Time
	if t.outcomes {
		start = t.now()
	}
	tctx, cancel := t.withDeadline(ctx)
	defer cancel()
	v, err = next(tctx, fn)
	if tctx.Err() != nil {
		// The context ended before fn returned: the outcome is an error
		// whatever fn returned, and a result goes to the discard hook.
		if err == nil {
			t.discarded(tctx, v)
			var zero T
			v, err = zero, expired(ctx)
		} else if ctx.Err() == nil {
			err = &timeoutError{err: err}
		}
		if ctx.Err() == nil && t.observer != nil {
			t.observe(ctx, Event{Kind: EventTimeout, Component: "timeout", Wait: t.d})
		}
	}
	if t.outcomes {
		t.observe(ctx, Event{Kind: EventCallEnded, Component: "timeout", Err: err, Duration: t.since(start)})
	}
	return v, err
}

// discarded hands v, a result that came after the deadline, to the discard
// hook.
func (t *timeout[T]) discarded(ctx context.Context, v T) {
	if t.discard == nil {
		return
	}
	t.discard(v)
	if t.observer != nil {
		t.observe(ctx, Event{Kind: EventDiscarded, Component: "timeout"})
	}
}

// timeoutError is a cooperative fn's error after its deadline: ErrTimeout and
// fn's error at once.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string   { return "resilience: timeout: " + e.err.Error() }
func (e *timeoutError) Unwrap() []error { return []error{ErrTimeout, e.err} }

// Call states of a timedCall: whoever moves it out of running decides who
// owns the result.
const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

// timedCall is one run of fn on a worker goroutine (see startTask). The
// caller waits for fn's context to end, which happens in one of three
// ways: the worker cancels it when fn returns, the deadline passes, or the
// parent ends. Whoever moves state out of running decides: the worker,
// after writing the outcome, or the caller, abandoning the call. Waiting on
// the one channel the context has anyway costs less than a select over it
// and a channel of our own.
type timedCall[T any] struct {
	state atomic.Int32
	v     T
	err   error
	panic *PanicError

	// The call, set by the caller before it hands the task over.
	t      *timeout[T]
	ctx    context.Context
	cancel context.CancelFunc
	next   chain[T]
	fn     Func[T]
}

func (t *timeout[T]) race(ctx context.Context, next chain[T], fn Func[T]) (T, error) {
	var start time.Time
	if t.outcomes {
		start = t.now()
	}
	tctx, cancel := t.withDeadline(ctx)
	c, _ := t.calls.Get().(*timedCall[T])
	if c == nil {
		c = &timedCall[T]{t: t}
	}
	c.ctx, c.cancel, c.next, c.fn = tctx, cancel, next, fn
	startTask(c)

	<-tctx.Done()
	var zero T
	if c.state.CompareAndSwap(callRunning, callAbandoned) {
		cancel()
		err := expired(ctx)
		t.ended(ctx, start, err, err == ErrTimeout)
		return zero, err
	}
	// fn returned before its context ended, and its outcome was written
	// before the state changed.
	v, err, pe := c.v, c.err, c.panic
	cancel()
	c.v, c.err, c.panic = zero, nil, nil
	c.ctx, c.cancel, c.next, c.fn = nil, nil, nil, nil
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
// caller still waits and fn's context has not ended; cancel wakes the
// caller. Once run's own state change succeeds it leaves c alone, for the
// caller reuses c at once; a c the caller abandoned is never reused, so
// writing to it first is harmless.
//
// A fn that returns after its context ended lost the race whatever it
// returns, even when it gets to change the state first: the deadline passed
// first. run then leaves the state to the caller, who is awake already or
// about to be, and hands a result to the discard hook.
func (c *timedCall[T]) run() {
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
			t.observe(ctx, Event{Kind: EventLatePanic, Component: "timeout", Panic: pe})
		}
	}()
	v, err := next(ctx, fn)
	finished = true
	if ctx.Err() == nil {
		c.v, c.err = v, err
		if c.state.CompareAndSwap(callRunning, callFinished) {
			cancel()
			return
		}
	}
	if err == nil {
		t.discarded(ctx, v) // abandoned: nobody returns this result
	}
}

package resilience

import (
	"context"
	"sync"

	"time"
)

// Timeout returns a policy that gives fn at most d (0: no timeout). When the
// deadline passes first, Execute returns [ErrTimeout], the cause of fn's
// context; when the caller's context ends first, its error; a result fn
// returns after that goes to the [WithDiscard] hook. By default Execute
// returns at the deadline even when fn ignores its context, fn running on
// another goroutine until it returns (see [WithTimeoutCooperative]).
// Timeout panics if d is negative, and Execute if fn is nil.
func Timeout[T any](d time.Duration, opts ...TimeoutOption) Policy[T] {
	checkDuration("Timeout", "duration", d)
	var cfg timeoutConfig
	for _, o := range opts {
		checkOption("Timeout", o)
		o.applyTimeout(&cfg)
	}
	t := &timeout[T]{d: d, timeoutConfig: cfg, direct: callsFn[T]()}
	t.discard = discardOf[T]("Timeout", cfg.discard)
	return t
}

// TimeoutOption configures [Timeout]; an [Option] or [WithDiscard] is one
// too.
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

// WithTimeoutCooperative makes a [Timeout] run fn in the caller's goroutine
// and rely on fn returning when its context ends: a fn that ignores it holds
// the caller past the deadline. An error fn returns after the deadline
// matches both ErrTimeout and itself. By default a Timeout is not
// cooperative.
func WithTimeoutCooperative() TimeoutOption {
	return timeoutOptionFunc(func(c *timeoutConfig) { c.cooperative = true })
}

type timeout[T any] struct {
	d time.Duration
	timeoutConfig
	discard func(T)
	calls   sync.Pool // of *timedCall[T], reused when the caller got the result
	direct  chain[T]  // made once: made in Execute, it would escape to fn's goroutine
}

func (t *timeout[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Timeout: fn is nil")
	}
	return t.run(ctx, t.direct, fn, t.outcomes)
}

// link returns the timeout as a layer around next; a Timeout of 0 is no
// layer at all.
func (t *timeout[T]) link(next chain[T]) chain[T] {
	if t.d == 0 {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) { return t.run(ctx, next, fn, t.outcomes) }
}

func (t *timeout[T]) reportsOutcomes() bool { return t.outcomes && t.d != 0 }

func (t *timeout[T]) linkQuiet(next chain[T]) chain[T] {
	if t.d == 0 {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) { return t.run(ctx, next, fn, false) }
}

// run calls fn through next within the timeout. report says whether the
// call's EventCallEnded is reported.
func (t *timeout[T]) run(ctx context.Context, next chain[T], fn Func[T], report bool) (T, error) {
	if t.d == 0 {
		return next(ctx, fn)
	}
	if t.cooperative {
		return t.cooperate(ctx, next, fn, report)
	}
	return t.race(ctx, next, fn, report)
}

// withDeadline derives fn's context from the configured clock, with now
// the time on the real clock when no clock is injected.
func (t *timeout[T]) withDeadline(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	if t.clock == nil {
		return context.WithDeadlineCause(ctx, now.Add(t.d), ErrTimeout)
	}
	return t.withTimeout(ctx, t.d, ErrTimeout)
}

// begin reads the clock once for a call: the time its deadline counts
// from on the real clock, and the time its duration counts from when the
// observer asked for outcomes.
func (t *timeout[T]) begin() (now, start time.Time) {
	if t.clock == nil {
		now = time.Now()
		return now, now
	}
	if t.outcomes {
		start = t.clock.Now()
	}
	return time.Now(), start
}

// expired is the outcome of a call whose context ended before fn returned:
// the parent's error when the parent ended, otherwise ErrTimeout.
func expired(parent context.Context) error {
	if err := parent.Err(); err != nil {
		return err
	}
	return ErrTimeout
}

func (t *timeout[T]) cooperate(ctx context.Context, next chain[T], fn Func[T], report bool) (v T, err error) {
	now, start := t.begin()
	tctx, cancel := t.withDeadline(ctx, now)
	defer cancel()
	v, err = next(tctx, fn)
	if tctx.Err() != nil || err != nil && t.pastDeadline(ctx, tctx) {
		// The context ended before fn returned: the outcome is an error
		// whatever fn returned, and a result goes to the discard hook.
		if err == nil {
			t.discarded(tctx, v, false)
		}
		var zero T
		switch {
		case ctx.Err() != nil:
			v, err = zero, ctx.Err() // the caller's error, whatever fn returned
		case err == nil:
			v, err = zero, ErrTimeout
		default:
			err = &timeoutError{err: err}
		}
		if ctx.Err() == nil && t.observer != nil {
			t.observe(ctx, Event{Kind: EventTimeout, Component: KindTimeout, Wait: t.d})
		}
	}
	if report {
		t.observe(ctx, Event{Kind: EventCallEnded, Component: KindTimeout, Err: err, Duration: t.since(start)})
	}
	return v, err
}

// pastDeadline reports whether the Timeout's own deadline, that of fn's
// context tctx, has passed though tctx has not ended yet, its timer not
// having fired: a client that checks the deadline itself (gRPC does) may
// fail with its own deadline error just before. When the caller's context
// parent has the earlier deadline, that one is the caller's, not the
// Timeout's, and it reports false. Only an error is checked so: a success
// reads no clock.
func (t *timeout[T]) pastDeadline(parent, tctx context.Context) bool {
	d, ok := tctx.Deadline()
	if !ok {
		return false
	}
	if pd, ok := parent.Deadline(); ok && !pd.After(d) {
		return false
	}
	return !t.now().Before(d)
}

// discarded hands v, a result that came after the deadline, to the discard
// hook. detached says that no caller waits: fn's goroutine was abandoned.
func (t *timeout[T]) discarded(ctx context.Context, v T, detached bool) {
	if t.discard == nil {
		return
	}
	callDiscard(ctx, &t.common, KindTimeout, t.discard, v, detached)
	if t.observer == nil {
		return
	}
	e := Event{Kind: EventDiscarded, Component: KindTimeout}
	if detached {
		t.observeDetached(ctx, e)
		return
	}
	t.observe(ctx, e)
}

// timeoutError is a cooperative fn's error after its deadline: ErrTimeout and
// fn's error at once.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string   { return "resilience: timeout: " + e.err.Error() }
func (e *timeoutError) Unwrap() []error { return []error{ErrTimeout, e.err} }

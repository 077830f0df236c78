package resilience

import (
	"context"
	"fmt"
)

// Fallback returns a policy that answers with f when the call fails: f
// receives the call's context and error, and what f returns is returned.
// Put it outermost, so that it answers only once the policies within have
// given up. Which errors it answers for is [WithFallbackIf]'s to say; when
// f fails too, the error is a *[FallbackError]. Fallback panics if f is
// nil.
func Fallback[T any](f func(ctx context.Context, err error) (T, error), opts ...FallbackOption) Policy[T] {
	if f == nil {
		panic("resilience: Fallback: fallback function is nil")
	}
	var cfg fallbackConfig
	for _, o := range opts {
		checkOption("Fallback", o)
		o.applyFallback(&cfg)
	}
	return &fallback[T]{fallbackConfig: cfg, f: f}
}

// FallbackOption configures [Fallback]; an [Option] is one too.
type FallbackOption interface {
	applyFallback(*fallbackConfig)
}

type fallbackConfig struct {
	common
	when func(error) bool
}

type fallbackOptionFunc func(*fallbackConfig)

func (f fallbackOptionFunc) applyFallback(c *fallbackConfig) { f(c) }

func (o Option) applyFallback(c *fallbackConfig) { o.set(&c.common) }

// WithFallbackIf decides which errors [Fallback] answers for: those for
// which f returns true, the caller's context ending included. By default
// every error is answered for but the caller's own context ending. It
// panics if f is nil.
func WithFallbackIf(f func(err error) bool) FallbackOption {
	if f == nil {
		panic("resilience: WithFallbackIf: predicate is nil")
	}
	return fallbackOptionFunc(func(c *fallbackConfig) { c.when = f })
}

// FallbackError is the error of a [Fallback] whose fallback failed too;
// errors.Is and errors.As see both errors.
type FallbackError struct {
	// Err is the error of the call the fallback answered for.
	Err error
	// FallbackErr is the fallback's own error.
	FallbackErr error
}

// Error describes both errors.
func (e *FallbackError) Error() string {
	return fmt.Sprintf("resilience: fallback failed: %v (after: %v)", e.FallbackErr, e.Err)
}

// Unwrap returns the fallback's error and the call's.
func (e *FallbackError) Unwrap() []error { return []error{e.FallbackErr, e.Err} }

type fallback[T any] struct {
	fallbackConfig
	f func(ctx context.Context, err error) (T, error)
}

// Execute calls fn, and the fallback if fn fails as the predicate says.
func (p *fallback[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Fallback: fn is nil")
	}
	if p.outcomes {
		return p.timed(ctx, callsFn[T](), fn)
	}
	v, err := fn(ctx)
	if err == nil {
		return v, nil
	}
	return p.answer(ctx, v, err)
}

func (p *fallback[T]) link(next chain[T]) chain[T] { return p.linkReport(next, p.outcomes) }

func (p *fallback[T]) reportsOutcomes() bool { return p.outcomes }

func (p *fallback[T]) linkQuiet(next chain[T]) chain[T] { return p.linkReport(next, false) }

// linkReport returns the fallback as a layer around next, which reports
// each call's EventCallEnded if report is set.
func (p *fallback[T]) linkReport(next chain[T], report bool) chain[T] {
	if report {
		return func(ctx context.Context, fn Func[T]) (T, error) { return p.timed(ctx, next, fn) }
	}
	return func(ctx context.Context, fn Func[T]) (T, error) {
		v, err := next(ctx, fn)
		if err == nil {
			return v, nil
		}
		return p.answer(ctx, v, err)
	}
}

// timed is a call for an observer that asked for outcomes: it reports the
// call's end, with its duration and the error returned, fallback included.
func (p *fallback[T]) timed(ctx context.Context, next chain[T], fn Func[T]) (v T, err error) {
	start := p.now()
	v, err = next(ctx, fn)
	if err != nil {
		v, err = p.answer(ctx, v, err)
	}
	p.observe(ctx, Event{Kind: EventCallEnded, Component: KindFallback, Err: err, Duration: p.since(start)})
	return v, err
}

// answer decides whether to fall back from err, and does.
func (p *fallback[T]) answer(ctx context.Context, v T, err error) (T, error) {
	if p.when != nil {
		if !p.when(err) {
			return v, err
		}
	} else if ctx.Err() != nil {
		return v, err // the caller has gone: an answer helps nobody
	}
	if p.observer != nil {
		p.observe(ctx, Event{Kind: EventFallback, Component: KindFallback, Err: err})
	}
	fv, ferr := p.f(ctx, err)
	if ferr != nil {
		return fv, &FallbackError{Err: err, FallbackErr: ferr}
	}
	return fv, nil
}

package resilience

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"
)

// Clock is the time a policy, guard or batcher reads and waits on: every
// wait is a deadline context of the clock's. *clock.Mock of
// github.com/benbjohnson/clock is one; docs/testing-your-code.md adapts a
// fake clock of another shape.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// WithDeadline returns a copy of parent that ends when parent ends, when
	// its cancel function is called, or when this clock reaches d. The
	// package only waits on its Done channel.
	WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc)
}

// Option is [WithClock], [WithObserver], [WithName] or [WithRand]: an
// option that the constructors of every policy, guard (a [Keyed] one too),
// batcher and retry budget accept, and [NewCursor] and [Repeat] too. [NewRegistry] accepts [WithClock] alone;
// [NewSlogObserver] accepts none: an observer is not itself observed.
type Option struct{ set func(*common) }

// common is the configuration every constructor shares; each component's
// configuration embeds it.
type common struct {
	clock    Clock // nil: package time
	observer Observer
	name     string
	outcomes bool   // the observer asked for an event per call (see OutcomeObserver)
	rand     Rand   // from WithRand, drawn from one call at a time; nil: math/rand/v2
	route    *route // a guard a Registry can hold: where its events go now
}

// WithClock makes a policy, guard or batcher use c for every reading of the
// time and every wait. By default the real clock is used. It panics if c is
// nil.
func WithClock(c Clock) Option {
	if isNil(c) {
		panic("resilience: WithClock: clock is " + nilName(c))
	}
	return Option{set: func(o *common) { o.clock = c }}
}

// nilName describes a nil v for a panic message: "nil", or "a nil
// *clock.Mock" for a typed nil.
func nilName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("a nil %T", v)
}

// isNil reports whether v is nil or holds a nil pointer, function or
// channel: a typed nil whose first use would crash or block for ever. The
// nil value of a slice or map type is not refused: its methods may well
// work on it, as an empty [Schedule]'s do, or a user's list of observers.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// now returns the time on the configured clock.
func (c *common) now() time.Time {
	if c.clock == nil {
		return time.Now()
	}
	return c.clock.Now()
}

// since returns the time elapsed since t on the configured clock. On the
// real clock it is monotonic: a step of the wall clock changes nothing.
func (c *common) since(t time.Time) time.Duration {
	if c.clock == nil {
		return time.Since(t)
	}
	return c.clock.Now().Sub(t)
}

// until returns the time from now until t on the configured clock. For a t
// further away than the largest Duration it is the largest (or smallest)
// Duration, as time.Time.Sub saturates; negating since(t) instead would
// wrap the smallest Duration round to itself, a deadline long past.
func (c *common) until(t time.Time) time.Duration {
	if c.clock == nil {
		return time.Until(t)
	}
	return t.Sub(c.clock.Now())
}

// sleep waits d, and reports false if ctx ended first.
func (c *common) sleep(ctx context.Context, d time.Duration) bool {
	if c.clock == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	wctx, cancel := c.clock.WithDeadline(ctx, c.clock.Now().Add(d))
	defer cancel()
	<-wctx.Done()
	return ctx.Err() == nil
}

// waitCtx returns a context that ends when ctx does or d has passed on the
// configured clock, for a wait that selects on something else too.
func (c *common) waitCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if c.clock == nil {
		return context.WithTimeout(ctx, d)
	}
	return c.clock.WithDeadline(ctx, c.clock.Now().Add(d))
}

// afterFunc calls f in its own goroutine once d has passed, unless the
// returned stop is called first; stop reports whether it stopped f.
func (c *common) afterFunc(d time.Duration, f func()) (stop func() bool) {
	if c.clock == nil {
		return time.AfterFunc(d, f).Stop
	}
	// Only the deadline or stop can end tctx; stopped tells them apart
	// without asking the clock's context for its error.
	var stopped atomic.Bool
	tctx, cancel := c.clock.WithDeadline(context.Background(), c.clock.Now().Add(d))
	stopF := context.AfterFunc(tctx, func() {
		if !stopped.Load() {
			f()
		}
	})
	return func() bool {
		stopped.Store(true)
		ok := stopF()
		cancel()
		return ok
	}
}

// withTimeout derives from parent a context that ends after d: its Err is
// context.DeadlineExceeded and its cause (see context.Cause) is cause once
// the deadline passes, whatever the clock.
func (c *common) withTimeout(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if c.clock == nil {
		return context.WithTimeoutCause(parent, d, cause)
	}
	return withDeadlineCause(c.clock, parent, c.clock.Now().Add(d), cause)
}

// withDeadlineCause is context.WithDeadlineCause on an injected clock. The
// clock's own deadline contexts take no cause, so the deadline is a timer
// of the clock's that cancels a cause-carrying context: context.Cause finds
// cause through it, and Err reports context.DeadlineExceeded.
//
// A child derived from it with the context package attaches without a
// goroutine; its Err is context.Canceled rather than DeadlineExceeded, its
// cause the same.
func withDeadlineCause(clk Clock, parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	inner, cancelInner := context.WithCancelCause(parent)
	ctx := &clockDeadlineCtx{Context: inner, deadline: deadline, cause: cause}
	if pd, ok := parent.Deadline(); ok && pd.Before(deadline) {
		ctx.deadline = pd
	}
	var stopped atomic.Bool
	timer, stopTimer := clk.WithDeadline(context.Background(), deadline)
	stopFire := context.AfterFunc(timer, func() {
		if !stopped.Load() {
			ctx.fired.Store(true)
			cancelInner(cause)
		}
	})
	return ctx, func() {
		stopped.Store(true)
		stopFire()
		stopTimer()
		cancelInner(context.Canceled)
	}
}

type clockDeadlineCtx struct {
	context.Context // the cause-carrying inner context
	deadline        time.Time
	cause           error
	fired           atomic.Bool // set before the inner context is cancelled
}

func (c *clockDeadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Err is context.DeadlineExceeded when the clock's deadline ended the
// context, and the inner context's error otherwise.
func (c *clockDeadlineCtx) Err() error {
	err := c.Context.Err()
	if err == context.Canceled && c.fired.Load() && context.Cause(c.Context) == c.cause {
		return context.DeadlineExceeded
	}
	return err
}

func (c *clockDeadlineCtx) String() string {
	return fmt.Sprintf("resilience.withDeadline(%v)", c.deadline)
}

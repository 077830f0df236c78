package resiliencehttp

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

// timeoutError is the cause of a context the transport ends at its
// deadline, and so the error of an attempt, a call or a body read that the
// deadline cut short: http.Transport reports a context's cause.
type timeoutError struct {
	what string // "call" or "attempt"
	d    time.Duration
}

func (e *timeoutError) Error() string {
	return "resiliencehttp: " + e.what + " timed out after " + e.d.String()
}

// Is matches resilience.ErrTimeout and context.DeadlineExceeded.
func (e *timeoutError) Is(target error) bool {
	return target == resilience.ErrTimeout || target == context.DeadlineExceeded
}

// Timeout reports true, for code that asks in the net.Error manner (as
// *url.Error.Timeout does).
func (e *timeoutError) Timeout() bool { return true }

// withTimeout derives from parent a context that ends after d with cause as
// its cause, on the configured clock.
func (t *Transport) withTimeout(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if t.clock == nil {
		return context.WithTimeoutCause(parent, d, cause)
	}
	return clockTimeout(t.clock, parent, t.clock.Now().Add(d), cause)
}

// clockTimeout is context.WithDeadlineCause on an injected clock, whose
// deadline contexts take no cause: a deadline context of the clock's
// cancels a cause-carrying context when it fires.
func clockTimeout(clk resilience.Clock, parent context.Context, deadline time.Time, cause error) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(parent)
	ctx := &clockCtx{Context: inner, deadline: deadline, cause: cause}
	if pd, ok := parent.Deadline(); ok && pd.Before(deadline) {
		ctx.deadline = pd
	}
	timer, stopTimer := clk.WithDeadline(context.Background(), deadline)
	stop := context.AfterFunc(timer, func() {
		if timer.Err() == context.DeadlineExceeded {
			ctx.fired.Store(true)
			cancel(cause)
		}
	})
	return ctx, func() {
		stop()
		stopTimer()
		cancel(context.Canceled)
	}
}

type clockCtx struct {
	context.Context
	deadline time.Time
	cause    error
	fired    atomic.Bool
}

func (c *clockCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Err reports context.DeadlineExceeded once the clock's deadline ended the
// context, as a deadline context of the context package would.
func (c *clockCtx) Err() error {
	err := c.Context.Err()
	if err == context.Canceled && c.fired.Load() && context.Cause(c.Context) == c.cause {
		return context.DeadlineExceeded
	}
	return err
}

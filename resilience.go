package resilience

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/benbjohnson/clock"
)

// Func is a call guarded by a [Policy]: it receives the context it must honour
// and returns a result or an error.
type Func[T any] func(ctx context.Context) (T, error)

// Do runs fn under p and returns what p returns. A nil p calls fn directly.
// Do panics if fn is nil.
func Do[T any](ctx context.Context, p Policy[T], fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Do: fn is nil")
	}
	if p == nil {
		return fn(ctx)
	}
	return p.Execute(ctx, fn)
}

// Errors returned by the library. Each is matched with [errors.Is]; errors
// that carry more (a retry's attempt count, a breaker's time until half-open)
// are types that wrap these sentinels, so both errors.Is and errors.As work.
var (
	// ErrTimeout is returned by [Timeout] when its deadline passes before fn
	// returns. It also matches context.DeadlineExceeded, so code that checks
	// for a context deadline keeps working. It is the cause (see
	// [context.Cause]) of the context handed to fn.
	ErrTimeout error = timeoutSentinel{}

	// ErrRetriesExhausted is returned by [Retry] when every attempt has been
	// made and the last one failed; the last attempt's error stays reachable.
	ErrRetriesExhausted = errors.New("resilience: retries exhausted")

	// ErrBreakerOpen is returned by a [Breaker] that refuses a call because it
	// is open, or half-open with every probe slot taken.
	ErrBreakerOpen = errors.New("resilience: circuit breaker open")

	// ErrBulkheadFull is returned by a [Bulkhead] that has no free slot and
	// cannot (or may no longer) wait for one.
	ErrBulkheadFull = errors.New("resilience: bulkhead full")

	// ErrBatcherClosed is returned by a [Batcher] for items given to it after
	// Close has begun.
	ErrBatcherClosed = errors.New("resilience: batcher closed")
)

// timeoutSentinel is the type of ErrTimeout. It matches
// context.DeadlineExceeded as well, and reports itself as a timeout to code
// that asks in the net.Error manner.
type timeoutSentinel struct{}

func (timeoutSentinel) Error() string        { return "resilience: timeout" }
func (timeoutSentinel) Is(target error) bool { return target == context.DeadlineExceeded }
func (timeoutSentinel) Timeout() bool        { return true }
func (timeoutSentinel) Temporary() bool      { return true }

// PanicError is what a guard's done function receives when fn panics, and
// what a [Batcher] returns to each caller of a batch whose fn panicked. Other
// policies let the panic continue with its original value.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack gives it.
	Stack []byte
}

// newPanicError records v, the value recover returned, with the current stack.
// It must be called from the deferred function that recovered.
func newPanicError(v any) *PanicError {
	if v == nil {
		// recover returns nil only when fn called runtime.Goexit.
		v = errGoexit
	}
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// errGoexit stands for the value of a "panic" that was really runtime.Goexit.
var errGoexit = errors.New("resilience: fn called runtime.Goexit")

// Error reports the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("resilience: panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is sees
// through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ClockOption sets the clock a policy, guard or batcher reads and waits on.
// It is accepted wherever an option is: [Timeout], [Retry], [NewBreaker],
// [NewBulkhead] and [NewBatcher]. Tests pass a *clock.Mock; the default is
// the real clock.
type ClockOption struct{ c clock.Clock }

// WithClock makes a policy, guard or batcher use c for every reading of the
// time and every wait. It panics if c is nil.
func WithClock(c clock.Clock) ClockOption {
	if c == nil {
		panic("resilience: WithClock: clock is nil")
	}
	return ClockOption{c: c}
}

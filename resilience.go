package resilience

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
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

// Errors returned by the library, matched with [errors.Is]; the error types
// that carry more match them too.
var (
	// ErrRefused is matched by every guard's refusal of a call: a call that
	// a guard turned away, so that it never reached fn. It is the question
	// to ask for "did a guard shed this call?", whatever the guard:
	// [ErrBreakerOpen] (an open breaker's *[BreakerOpenError], and a
	// half-open one's refusal while its probes are in flight),
	// [ErrBulkheadFull], [ErrRateLimited] (a [RateLimiter]'s or
	// [KeyedRateLimiter]'s *[RateLimitError], and resilienceredis's
	// refusals), [ErrLimitExceeded] and [ErrThrottled] (the *[ShedError] of
	// an [AdaptiveLimiter] or [AdaptiveThrottler]) all match it, besides
	// their own sentinel; none of those matches another, nor [ErrKeysFull]
	// (a full [Keyed]), which matches it too. Not refusals:
	// [ErrRetryBudgetExhausted] (a Retry giving up), [ErrBatcherClosed], and
	// the caller's context's error when it ends during a guard's wait. A
	// [RetryError] matches it when its last attempt was refused.
	ErrRefused = errors.New("resilience: refused")

	// ErrTimeout is returned by [Timeout] when its deadline passes before fn
	// returns. It also matches context.DeadlineExceeded.
	ErrTimeout error = timeoutSentinel{}

	// ErrRetriesExhausted is the reason a [Retry] gave up when its attempts,
	// its backoff or its time ran out.
	ErrRetriesExhausted = errors.New("resilience: retries exhausted")

	// ErrRetryBudgetExhausted is the reason a [Retry] gave up when its
	// [RetryBudget], or its own quota, refused a retry.
	ErrRetryBudgetExhausted = errors.New("resilience: retry budget exhausted")

	// ErrBreakerOpen is matched by the *[BreakerOpenError] of a [Breaker]
	// that is open, or half-open with every probe slot taken. It matches
	// [ErrRefused].
	ErrBreakerOpen error = &refusalSentinel{"resilience: circuit breaker open"}

	// ErrBulkheadFull is returned by a [Bulkhead] with no slot to give. It
	// matches [ErrRefused].
	ErrBulkheadFull error = &refusalSentinel{"resilience: bulkhead full"}

	// ErrBatcherClosed is returned by a [Batcher] or [Loader] after Close.
	ErrBatcherClosed = errors.New("resilience: batcher closed")

	// ErrBatchResults is matched by the error of every caller of a batch
	// whose function returned a wrong number of results.
	ErrBatchResults = errors.New("resilience: batch returned a wrong number of results")

	// ErrRateLimited is matched by the *[RateLimitError] of a call a
	// [RateLimiter] or [KeyedRateLimiter] refused. It matches [ErrRefused].
	ErrRateLimited error = &refusalSentinel{"resilience: rate limited"}

	// ErrNotFound is matched by the *[NotFoundError] of a [Loader]'s key
	// that fetch gave no value for.
	ErrNotFound = errors.New("resilience: not found")
)

// RetryHint is implemented by errors that say when to try again: a guard's
// refusal, an HTTP 429 or 503 with Retry-After. A [Retry] that meets one in
// an attempt's error chain waits RetryAfter() instead of its backoff, cut to
// [WithMaxRetryAfter]; zero or less is no hint, and the backoff decides.
type RetryHint interface {
	error
	RetryAfter() time.Duration
}

// RetryAfter returns the first retry hint in err's chain, as errors.As
// finds it, and whether there is one: a hint of zero or less is no hint.
func RetryAfter(err error) (time.Duration, bool) {
	d, ok := retryAfter(err)
	return d, ok && d > 0
}

// refusalSentinel is the type of the sentinels of the guards' refusals
// (ErrBreakerOpen, ErrBulkheadFull, ErrRateLimited, ErrLimitExceeded,
// ErrThrottled): each is a pointer of its own, so that none matches
// another, and each matches ErrRefused. The error types of the refusals
// match ErrRefused in their own Is, since errors.Is does not go from a
// sentinel an error matches to the sentinels that one matches.
type refusalSentinel struct{ msg string }

func (e *refusalSentinel) Error() string      { return e.msg }
func (*refusalSentinel) Is(target error) bool { return target == ErrRefused }

// timeoutSentinel is the type of ErrTimeout. It matches
// context.DeadlineExceeded as well, and reports itself as a timeout to code
// that asks in the net.Error manner.
type timeoutSentinel struct{}

func (timeoutSentinel) Error() string        { return "resilience: timeout" }
func (timeoutSentinel) Is(target error) bool { return target == context.DeadlineExceeded }
func (timeoutSentinel) Timeout() bool        { return true }

// PanicError is what a guard's done function receives when fn panics, and
// what a [Batcher] returns to each caller of a batch whose fn panicked (see
// the package doc's Panics section).
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

// repanic makes a panic or a runtime.Goexit of fn's, caught in another
// goroutine, happen again in the caller's (see the package doc's Panics
// section).
func repanic(pe *PanicError) {
	if pe.Value == errGoexit {
		runtime.Goexit()
	}
	panic(pe.Value)
}

// Error reports the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("resilience: panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

package resilience

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Retry returns a policy that calls fn again when it fails, waiting between
// attempts as a [Backoff] says, until an attempt succeeds, the error is one
// not to retry, or the attempts, the time allowed, the retry budget or the
// caller's context run out.
//
// Defaults: 3 attempts in all (the first included); full-jitter exponential
// waits from 100ms, doubling, capped at 10s; every error is retried except
// when the caller's own context has ended; a RetryAfter hint up to 10s is
// honoured. Options change each of these.
//
// When the attempts run out, the error is a *[RetryError] that matches both
// [ErrRetriesExhausted] and the last attempt's error. When the caller's
// context ends during a wait, the error matches the context's error and the
// last attempt's error, not ErrRetriesExhausted. An error classified as
// [VerdictFail] or [VerdictSucceed] is returned as it is.
//
// A call that succeeds at once costs a few nanoseconds and allocates
// nothing. Retry panics if an option is invalid.
func Retry[T any](opts ...RetryOption) Policy[T] {
	cfg := retryConfig{attempts: 3, backoff: defaultRetryBackoff, maxRetryAfter: 10 * time.Second}
	for _, o := range opts {
		if o == nil {
			panic("resilience: Retry: option is nil")
		}
		o.applyRetry(&cfg)
	}
	p := &retry[T]{retryConfig: cfg, last: last[T]()}
	if cfg.resultPred != nil {
		pred, ok := cfg.resultPred.(func(T) bool)
		if !ok {
			var zero T
			panic(fmt.Sprintf("resilience: WithRetryIfResult: predicate is %T, but the policy's result type is %T", cfg.resultPred, zero))
		}
		p.retryResult = pred
	}
	p.discard = discardOf[T]("Retry", cfg.discard)
	return p
}

// defaultRetryBackoff is Retry's backoff unless WithBackoff says otherwise.
var defaultRetryBackoff = FullJitter(Cap(Exponential(100*time.Millisecond, 2), 10*time.Second))

// Verdict is what a classifier decides about an attempt's outcome, in the
// terms of go-resiliency's retrier.
type Verdict int

const (
	// VerdictSucceed ends the retries and returns the outcome as it is.
	VerdictSucceed Verdict = iota
	// VerdictFail ends the retries and returns the outcome as it is.
	VerdictFail
	// VerdictRetry makes another attempt, if attempts, time and budget allow.
	VerdictRetry
)

// String returns the verdict's name.
func (v Verdict) String() string {
	switch v {
	case VerdictSucceed:
		return "succeed"
	case VerdictFail:
		return "fail"
	case VerdictRetry:
		return "retry"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// RetryOption configures [Retry]. [Option] ([WithClock], [WithObserver],
// [WithName]) and [WithDiscard] are ones too.
type RetryOption interface {
	applyRetry(*retryConfig)
}

type retryConfig struct {
	attempts      int // 0: no limit
	backoff       Backoff
	maxElapsed    time.Duration // 0: no limit
	maxRetryAfter time.Duration
	onRetry       func(attempt int, err error, wait time.Duration)
	budget        *RetryBudget
	lastErrOnEnd  bool
	discard       any // func(T), checked by Retry[T]
	common

	// Classification, in the order it is consulted.
	abortOn    []error
	retryOn    []error
	retryIf    func(error) bool
	classifier func(error) Verdict
	resultPred any // func(T) bool, checked by Retry[T]
}

type retryOptionFunc func(*retryConfig)

func (f retryOptionFunc) applyRetry(c *retryConfig) { f(c) }

func (o Option) applyRetry(c *retryConfig) { o.set(&c.common) }

// WithAttempts sets how many attempts to make in all, the first included:
// 1 means no retry. 0 means no limit: retries go on until an attempt
// succeeds or the context, the time limit or the budget ends them. The
// default is 3. It panics if n is negative.
func WithAttempts(n int) RetryOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithAttempts: attempts must not be negative, got %d", n))
	}
	return retryOptionFunc(func(c *retryConfig) { c.attempts = n })
}

// WithBackoff sets the waits between attempts; a backoff that reports no
// further retry ends the retries as if the attempts had run out. The
// default is full jitter over waits from 100ms, doubling, capped at 10s.
// It panics if b is nil.
func WithBackoff(b Backoff) RetryOption {
	if b == nil {
		panic("resilience: WithBackoff: backoff is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.backoff = b })
}

// WithMaxElapsed bounds the time from the first attempt to the start of the
// last: a retry whose wait would end past d is not made, so the policy never
// sleeps past it. The default, 0, is no bound. It panics if d is negative.
func WithMaxElapsed(d time.Duration) RetryOption {
	checkDuration("WithMaxElapsed", "d", d)
	return retryOptionFunc(func(c *retryConfig) { c.maxElapsed = d })
}

// WithMaxRetryAfter bounds the wait an error's [RetryHint] can ask for (an
// HTTP 429 or 503, an open [Breaker]); a longer hint is cut to d. The
// default is 10s, the cap of the default backoff. 0 ignores hints. A hint of
// zero or less is no hint: the backoff decides. It panics if d is negative.
func WithMaxRetryAfter(d time.Duration) RetryOption {
	checkDuration("WithMaxRetryAfter", "d", d)
	return retryOptionFunc(func(c *retryConfig) { c.maxRetryAfter = d })
}

// WithOnRetry sets a hook called before each wait with the attempt that
// just failed (from 1), its error and the wait to come. It is never called
// after the last attempt. It panics if f is nil.
func WithOnRetry(f func(attempt int, err error, wait time.Duration)) RetryOption {
	if f == nil {
		panic("resilience: WithOnRetry: hook is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.onRetry = f })
}

// WithBudget makes retries draw on a [RetryBudget] shared with other
// policies; a retry the budget refuses is not made. It panics if b is nil.
func WithBudget(b *RetryBudget) RetryOption {
	if b == nil {
		panic("resilience: WithBudget: budget is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.budget = b })
}

// WithLastErrorOnCancel makes a retry whose context ends during a wait
// return the last attempt's error as it is, instead of an error matching the
// context's (go-resiliency's behaviour). By default the context's error
// comes first, with the last attempt's error still reachable.
func WithLastErrorOnCancel() RetryOption {
	return retryOptionFunc(func(c *retryConfig) { c.lastErrOnEnd = true })
}

// WithAbortOn lists errors never to retry (matched with errors.Is): a
// blacklist. It panics if an error is nil.
func WithAbortOn(errs ...error) RetryOption {
	checkErrs("WithAbortOn", errs)
	errs = append([]error(nil), errs...)
	return retryOptionFunc(func(c *retryConfig) { c.abortOn = append(c.abortOn, errs...) })
}

// WithRetryOn lists the only errors to retry (matched with errors.Is): a
// whitelist; any other error is returned at once. It panics if an error is
// nil.
func WithRetryOn(errs ...error) RetryOption {
	checkErrs("WithRetryOn", errs)
	errs = append([]error(nil), errs...)
	return retryOptionFunc(func(c *retryConfig) { c.retryOn = append(c.retryOn, errs...) })
}

func checkErrs(fn string, errs []error) {
	for i, e := range errs {
		if e == nil {
			panic(fmt.Sprintf("resilience: %s: error %d is nil", fn, i))
		}
	}
}

// WithRetryIf retries an error when f returns true and returns it at once
// when f returns false. It panics if f is nil.
func WithRetryIf(f func(err error) bool) RetryOption {
	if f == nil {
		panic("resilience: WithRetryIf: predicate is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.retryIf = f })
}

// WithClassifier decides about every error with f, in the seeds' terms. It
// panics if f is nil.
func WithClassifier(f func(err error) Verdict) RetryOption {
	if f == nil {
		panic("resilience: WithClassifier: classifier is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.classifier = f })
}

// WithRetryIfResult retries a successful attempt whose result f rejects
// (returns true for), such as a response that says "not ready yet". T is
// inferred from f, and [Retry] panics if it is not the policy's result
// type. When the attempts run out on a rejected result, the result is
// returned with an error matching ErrRetriesExhausted. It panics if f is
// nil.
func WithRetryIfResult[T any](f func(result T) bool) RetryOption {
	if f == nil {
		panic("resilience: WithRetryIfResult: predicate is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.resultPred = f })
}

// Permanent marks err as one not to retry, whatever the classifier says.
// Retry returns err itself, unwrapped. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// RetryError is the error of a [Retry] that gave up: it carries how many
// attempts were made, the last attempt's error, and why no further attempt
// was made. errors.Is matches both the reason and the last error.
type RetryError struct {
	// Attempts is the number of attempts made.
	Attempts int
	// Last is the last attempt's error; nil when its result was rejected by
	// WithRetryIfResult.
	Last error
	// Reason is ErrRetriesExhausted (attempts, backoff or time limit spent),
	// ErrRetryBudgetExhausted, or the caller's context's error.
	Reason error
}

// Error describes the reason and the last error.
func (e *RetryError) Error() string {
	s := e.Reason.Error() + " after " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		s += "s"
	}
	if e.Last != nil {
		s += ": " + e.Last.Error()
	} else {
		s += ": result rejected"
	}
	return s
}

// Unwrap returns the reason and the last error, for errors.Is and errors.As.
func (e *RetryError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Last}
}

type retry[T any] struct {
	retryConfig
	retryResult func(T) bool
	discard     func(T)
	last        chain[T] // fn alone, for Execute
}

func (r *retry[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	return r.run(ctx, r.last, fn)
}

func (r *retry[T]) link(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return r.run(ctx, next, fn) }
}

func (r *retry[T]) run(ctx context.Context, next chain[T], fn Func[T]) (T, error) {
	if r.budget != nil {
		r.budget.deposit()
	}
	var start time.Time
	if r.maxElapsed > 0 {
		start = r.now()
	}
	v, err := next(ctx, fn)
	if err == nil && r.retryResult == nil {
		return v, nil
	}
	return r.again(ctx, next, fn, start, v, err)
}

// again goes on after a first attempt that did not plainly succeed.
func (r *retry[T]) again(ctx context.Context, next chain[T], fn Func[T], start time.Time, v T, err error) (T, error) {
	var prev time.Duration
	for attempt := 1; ; attempt++ {
		switch r.classify(ctx, v, err) {
		case VerdictSucceed, VerdictFail:
			if perm := asPermanent(err); perm != nil {
				err = perm.err
			}
			return v, err
		}
		if r.attempts > 0 && attempt >= r.attempts {
			return v, &RetryError{Attempts: attempt, Last: err, Reason: ErrRetriesExhausted}
		}
		if ctx.Err() != nil {
			return v, r.ended(ctx, attempt, err)
		}
		wait, ok := r.backoff.Delay(attempt, prev)
		if !ok {
			return v, &RetryError{Attempts: attempt, Last: err, Reason: ErrRetriesExhausted}
		}
		if hint, ok := retryAfter(err); ok && hint > 0 && r.maxRetryAfter > 0 {
			wait = min(hint, r.maxRetryAfter)
		}
		if r.maxElapsed > 0 && r.now().Sub(start)+wait > r.maxElapsed {
			return v, &RetryError{Attempts: attempt, Last: err, Reason: ErrRetriesExhausted}
		}
		if deadline, ok := ctx.Deadline(); ok && wait > 0 && r.since(deadline) > -wait {
			// The wait would end past the caller's deadline: give up now
			// rather than sleep into it.
			return v, &RetryError{Attempts: attempt, Last: err, Reason: ErrRetriesExhausted}
		}
		if r.budget != nil && !r.budget.withdraw() {
			return v, &RetryError{Attempts: attempt, Last: err, Reason: ErrRetryBudgetExhausted}
		}
		if r.onRetry != nil {
			r.onRetry(attempt, err, wait)
		}
		if wait > 0 && !r.sleep(ctx, wait) {
			return v, r.ended(ctx, attempt, err)
		}
		prev = wait
		if err == nil && r.discard != nil {
			r.discard(v) // a result WithRetryIfResult rejected
		}
		v, err = next(ctx, fn)
		if err == nil && r.retryResult == nil {
			return v, nil
		}
	}
}

// classify decides about one attempt's outcome.
func (r *retry[T]) classify(ctx context.Context, v T, err error) Verdict {
	if err == nil {
		if r.retryResult != nil && r.retryResult(v) {
			return VerdictRetry
		}
		return VerdictSucceed
	}
	if asPermanent(err) != nil || ctx.Err() != nil {
		return VerdictFail
	}
	for _, e := range r.abortOn {
		if errors.Is(err, e) {
			return VerdictFail
		}
	}
	if r.retryOn != nil {
		for _, e := range r.retryOn {
			if errors.Is(err, e) {
				return VerdictRetry
			}
		}
		return VerdictFail
	}
	if r.retryIf != nil {
		if r.retryIf(err) {
			return VerdictRetry
		}
		return VerdictFail
	}
	if r.classifier != nil {
		return r.classifier(err)
	}
	return VerdictRetry
}

// ended is the error when the caller's context ends between attempts.
func (r *retry[T]) ended(ctx context.Context, attempt int, last error) error {
	if r.lastErrOnEnd && last != nil {
		return last
	}
	return &RetryError{Attempts: attempt, Last: last, Reason: ctx.Err()}
}

// retryAfter finds a RetryAfter() hint in err's chain.
func retryAfter(err error) (time.Duration, bool) {
	var d time.Duration
	found := inChain(err, func(e error) bool {
		h, ok := e.(RetryHint)
		if ok {
			d = h.RetryAfter()
		}
		return ok
	})
	return d, found
}

// asPermanent finds a Permanent mark in err's chain.
func asPermanent(err error) (perm *permanentError) {
	inChain(err, func(e error) bool {
		perm, _ = e.(*permanentError)
		return perm != nil
	})
	return perm
}

// inChain reports whether match holds for err or an error it wraps, as
// errors.As would look, without the allocation errors.As costs.
func inChain(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if inChain(e, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

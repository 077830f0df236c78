package resilience

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Retry returns a policy that calls fn again when it fails, waiting as a
// [Backoff] says, until an attempt succeeds, the error is one not to retry
// (returned as it is), or the attempts, the time, the retry budget or the
// caller's context run out (a *[RetryError]); an attempt that returns once
// the caller's context has ended is not retried, its error returned as fn
// gave it. By default it makes 3 attempts, retries every error, waits as
// an error's [RetryHint] asks (up to 10s), and draws retries from a quota
// of its own, [NewRetryQuota](40), shared by every call: build a Retry
// once. An open [Breaker]'s refusal is returned at once unless the backoff
// would wait out its cool-down anyway (see [WithWaitForBreaker]). Retry
// panics if an option is invalid; Execute panics if fn is nil.
func Retry[T any](opts ...RetryOption) Policy[T] {
	cfg := retryConfig{attempts: 3, maxRetryAfter: 10 * time.Second}
	for _, o := range opts {
		checkOption("Retry", o)
		o.applyRetry(&cfg)
	}
	if cfg.backoff == nil {
		cfg.backoff = defaultRetryBackoff()
	}
	if cfg.rand != nil {
		cfg.backoff = withRandOf(cfg.backoff, cfg.rand)
	}
	if !cfg.budgetSet {
		cfg.budget = newQuota(defaultQuotaCapacity, defaultQuota, cfg.common)
	}
	p := &retry[T]{retryConfig: cfg, direct: callsFn[T]()}
	p.lean = !cfg.outcomes && cfg.maxElapsed == 0 && cfg.resultPred == nil && (cfg.budget == nil || cfg.budget.perCall == 0)
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

// defaultBackoff is Retry's backoff unless WithBackoff says otherwise. It is
// built by the first Retry that needs it, so that importing the package
// costs nothing at start-up; it holds no state, and its jitter draws from
// math/rand/v2, safe for concurrent use.
var defaultBackoff struct {
	once sync.Once
	b    Backoff
}

func defaultRetryBackoff() Backoff {
	defaultBackoff.once.Do(func() {
		defaultBackoff.b = FullJitter(Cap(Exponential(100*time.Millisecond, 2), 10*time.Second))
	})
	return defaultBackoff.b
}

// RetryOption configures [Retry]; an [Option] or [WithDiscard] is one too.
type RetryOption interface {
	applyRetry(*retryConfig)
}

type retryConfig struct {
	attempts      int // 0: no limit
	backoff       Backoff
	maxElapsed    time.Duration // 0: no limit
	maxRetryAfter time.Duration
	waitBreaker   bool         // WithWaitForBreaker was given
	budget        *RetryBudget // nil: none
	budgetSet     bool         // WithBudget or WithoutBudget was given
	discard       any          // func(T), checked by Retry[T]
	common

	// Classification: one of the three, named in classifiedBy.
	classifiedBy string
	abortOn      []error
	retryOn      []error
	retryOnSet   bool // WithRetryOn was given, perhaps with no error
	retryIf      func(error) bool
	resultPred   any // func(T) bool, checked by Retry[T]
}

type retryOptionFunc func(*retryConfig)

func (f retryOptionFunc) applyRetry(c *retryConfig) { f(c) }

func (o Option) applyRetry(c *retryConfig) { o.set(&c.common) }

// WithAttempts sets how many attempts to make in all, the first included:
// 1 means no retry, 0 no limit. The default is 3. It panics if n is
// negative.
func WithAttempts(n int) RetryOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithAttempts: attempts must not be negative, got %d", n))
	}
	return retryOptionFunc(func(c *retryConfig) { c.attempts = n })
}

// WithBackoff sets the waits between attempts; a backoff that stops ends
// the retries as if the attempts had run out. The default is full jitter
// over waits from 100ms, doubling, capped at 10s. It panics if b is nil or
// a [KubernetesBackoff] whose fields have no meaning.
func WithBackoff(b Backoff) RetryOption {
	checkBackoff("WithBackoff", b)
	return retryOptionFunc(func(c *retryConfig) { c.backoff = b })
}

// WithMaxElapsed bounds the time from the first attempt to the start of the
// last: a retry whose wait would end past d is not made. The default, 0, is
// no bound. It panics if d is negative.
func WithMaxElapsed(d time.Duration) RetryOption {
	checkDuration("WithMaxElapsed", "d", d)
	return retryOptionFunc(func(c *retryConfig) { c.maxElapsed = d })
}

// WithMaxRetryAfter cuts the wait an error's [RetryHint] asks for to d; 0
// ignores hints. The default is 10s. It panics if d is negative.
func WithMaxRetryAfter(d time.Duration) RetryOption {
	checkDuration("WithMaxRetryAfter", "d", d)
	return retryOptionFunc(func(c *retryConfig) { c.maxRetryAfter = d })
}

// WithWaitForBreaker makes a retry wait for an open [Breaker]'s refusal as
// for any [RetryHint]: until its cool-down ends, cut to [WithMaxRetryAfter].
// Without it, Retry waits for an open breaker only when its backoff would
// wait as long anyway, and otherwise returns the breaker's refusal at once,
// as an error not to retry: a breaker is there to fail fast, and of the
// callers that wait for its cool-down all but its probes are refused again.
func WithWaitForBreaker() RetryOption {
	return retryOptionFunc(func(c *retryConfig) { c.waitBreaker = true })
}

// WithAbortOn lists errors never to retry, matched with errors.Is; lists
// given more than once add up. It panics if an error is nil.
func WithAbortOn(errs ...error) RetryOption {
	checkErrs("WithAbortOn", errs)
	errs = append([]error(nil), errs...)
	return retryOptionFunc(func(c *retryConfig) {
		c.classify("WithAbortOn")
		c.abortOn = append(c.abortOn, errs...)
	})
}

// WithRetryOn lists the only errors to retry, matched with errors.Is; with
// no errors it retries nothing. Lists given more than once add up. It
// panics if an error is nil.
func WithRetryOn(errs ...error) RetryOption {
	checkErrs("WithRetryOn", errs)
	errs = append([]error(nil), errs...)
	return retryOptionFunc(func(c *retryConfig) {
		c.classify("WithRetryOn")
		c.retryOn, c.retryOnSet = append(c.retryOn, errs...), true
	})
}

// classify records that option decides which errors to retry, and panics
// if another already does: two ways to classify would override each other
// silently.
func (c *retryConfig) classify(option string) {
	if c.classifiedBy != "" && c.classifiedBy != option {
		panic(fmt.Sprintf("resilience: Retry: %s and %s both decide which errors to retry; give one (WithRetryIf can say what both say)", c.classifiedBy, option))
	}
	c.classifiedBy = option
}

func checkErrs(fn string, errs []error) {
	for i, e := range errs {
		if isNil(e) {
			panic(fmt.Sprintf("resilience: %s: error %d is %s", fn, i, nilName(e)))
		}
	}
}

// WithRetryIf retries an error when f returns true and returns it at once
// when f returns false. It panics if f is nil; [Retry] panics if given two
// of [WithRetryOn], [WithAbortOn] and WithRetryIf.
func WithRetryIf(f func(err error) bool) RetryOption {
	if f == nil {
		panic("resilience: WithRetryIf: predicate is nil")
	}
	return retryOptionFunc(func(c *retryConfig) {
		c.classify("WithRetryIf")
		c.retryIf = f
	})
}

// WithRetryIfResult retries a successful attempt whose result f returns
// true for ("not ready yet"); when the attempts run out on one, it is
// returned with an error matching [ErrRetriesExhausted]. It panics if f is
// nil, and [Retry] if T is not its result type.
func WithRetryIfResult[T any](f func(result T) bool) RetryOption {
	if f == nil {
		panic("resilience: WithRetryIfResult: predicate is nil")
	}
	return retryOptionFunc(func(c *retryConfig) { c.resultPred = f })
}

// Permanent marks err as one not to retry, whatever [WithRetryOn] or
// [WithRetryIf] say; [Retry] returns err itself. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// RetryError is the error of a [Retry] that gave up. errors.Is matches both
// the reason and the last error.
type RetryError struct {
	// Attempts is the number of attempts made.
	Attempts int
	// Last is the last attempt's error; nil when its result was rejected by
	// WithRetryIfResult.
	Last error
	// Reason is ErrRetriesExhausted, ErrRetryBudgetExhausted or the
	// caller's context's error.
	Reason error
}

// Error describes the reason and the last error: "resilience: retries
// exhausted after 3 attempts: EOF", or a guard's refusal of the last
// attempt first, then the reason in parentheses.
func (e *RetryError) Error() string {
	gaveUp := e.Reason == ErrRetriesExhausted || e.Reason == ErrRetryBudgetExhausted
	if gaveUp && e.Last != nil && refusedByGuard(e.Last) {
		s := e.Last.Error() + " (gave up after " + attempts(e.Attempts) + ": "
		if e.Reason == ErrRetriesExhausted {
			return s + "retries exhausted)"
		}
		return s + "retry budget exhausted; " + budgetOptions + ")"
	}
	s := e.Reason.Error() + " after " + attempts(e.Attempts)
	if e.Reason == ErrRetryBudgetExhausted {
		s += " (" + budgetOptions + ")"
	}
	if e.Last != nil {
		return s + ": " + e.Last.Error()
	}
	return s + ": result rejected"
}

// budgetOptions says, in a give-up's message, what changes a retry budget.
const budgetOptions = "WithBudget or WithoutBudget changes it"

// attempts is "1 attempt", "2 attempts".
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// refusedByGuard reports whether err is a guard's refusal (ErrRefused): a
// call that never reached the service, whose refusal then leads the
// give-up's message.
func refusedByGuard(err error) bool { return errors.Is(err, ErrRefused) }

// Unwrap returns the reason and the last error, for errors.Is and errors.As.
func (e *RetryError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Last}
}

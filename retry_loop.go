package resilience

import (
	"context"
	"errors"
	"time"
)

type retry[T any] struct {
	retryConfig
	retryResult func(T) bool
	discard     func(T)
	direct      chain[T] // fn alone, for Execute

	// lean says that a first attempt that succeeds needs no more than a
	// quota's deposit: no deposit when the call begins, no result to
	// judge, no time to read, no outcome to report.
	lean bool
}

func (r *retry[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Retry: fn is nil")
	}
	if r.lean {
		v, err := fn(ctx)
		if err == nil {
			r.budget.succeededFirst()
			return v, nil
		}
		return r.retryFirst(ctx, r.direct, fn, v, err)
	}
	return r.run(ctx, r.direct, fn, r.outcomes)
}

func (r *retry[T]) link(next chain[T]) chain[T] {
	if r.lean {
		return func(ctx context.Context, fn Func[T]) (T, error) {
			v, err := next(ctx, fn)
			if err == nil {
				r.budget.succeededFirst()
				return v, nil
			}
			return r.retryFirst(ctx, next, fn, v, err)
		}
	}
	return func(ctx context.Context, fn Func[T]) (T, error) { return r.run(ctx, next, fn, r.outcomes) }
}

// retryFirst goes on after a first attempt that failed, for a lean Retry.
func (r *retry[T]) retryFirst(ctx context.Context, next chain[T], fn Func[T], v T, err error) (T, error) {
	v, _, err = r.again(ctx, next, fn, time.Time{}, v, err)
	return v, err
}

func (r *retry[T]) reportsOutcomes() bool { return r.outcomes }

func (r *retry[T]) linkQuiet(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return r.run(ctx, next, fn, false) }
}

// run makes the first attempt, and hands what did not plainly succeed to
// again. report says whether the call's EventCallEnded is reported.
func (r *retry[T]) run(ctx context.Context, next chain[T], fn Func[T], report bool) (T, error) {
	if r.budget != nil {
		r.budget.called()
	}
	var start time.Time
	if report || r.maxElapsed > 0 { // for EventCallEnded, or WithMaxElapsed
		start = r.now()
	}
	v, err := next(ctx, fn)
	if r.plainSuccess(err) {
		r.succeeded(0)
		if report {
			r.callEnded(ctx, start, 1, nil)
		}
		return v, nil
	}
	v, attempts, err := r.again(ctx, next, fn, start, v, err)
	if report {
		r.callEnded(ctx, start, attempts, err)
	}
	return v, err
}

// again goes on after a first attempt that did not plainly succeed: each
// turn decides about the outcome, pays for the retry, announces it, sleeps
// and calls again. It returns the outcome and the attempts made.
func (r *retry[T]) again(ctx context.Context, next chain[T], fn Func[T], start time.Time, v T, err error) (T, int, error) {
	var prev time.Duration
	var paid int64 // what the last retry took from a budget
	for attempt := 1; ; attempt++ {
		verdict, wait, reason := r.decide(ctx, attempt, prev, start, v, err)
		if verdict != verdictRetry {
			return v, attempt, r.settle(ctx, attempt, err, verdict, paid)
		}
		r.attemptFailed(ctx, attempt, err, true)
		if reason == nil {
			paid, reason = r.pay(ctx, attempt, err)
		}
		if reason != nil {
			return v, attempt, r.giveUp(ctx, attempt, err, reason)
		}
		r.announce(ctx, attempt, err, wait)
		// A rejected result is let go before the wait, so that what it holds
		// (a response's connection) is not held through it.
		if r.drop(ctx, attempt, v, err) {
			var zero T
			v = zero
		}
		if !r.pause(ctx, wait) {
			r.refund(paid) // the retry it paid for will never be made
			return v, attempt, r.giveUp(ctx, attempt, err, ctx.Err())
		}
		prev = wait
		v, err = next(ctx, fn)
		if r.plainSuccess(err) {
			r.succeeded(paid)
			return v, attempt + 1, nil
		}
	}
}

// decide classifies an attempt's outcome and, for one to retry, works out
// the wait before the next attempt, or why none is made (see nextWait). An
// open breaker that outlasts the wait makes the outcome one not to retry.
func (r *retry[T]) decide(ctx context.Context, attempt int, prev time.Duration, start time.Time, v T, err error) (verdict, time.Duration, error) {
	verdict := r.classify(ctx, v, err)
	if verdict != verdictRetry {
		return verdict, 0, nil
	}
	wait, reason := r.nextWait(ctx, attempt, prev, err, start)
	if reason == errBreakerOutlasts {
		return verdictFail, 0, nil
	}
	return verdict, wait, reason
}

// plainSuccess reports whether an attempt's outcome is a success with no
// need to look at its result.
func (r *retry[T]) plainSuccess(err error) bool { return err == nil && r.retryResult == nil }

// succeeded records a success with the budget; paid is what the retry
// that made it took from a quota.
func (r *retry[T]) succeeded(paid int64) {
	if r.budget != nil {
		r.budget.succeeded(paid)
	}
}

// pause sleeps wait, and reports false if the caller's context ended first.
func (r *retry[T]) pause(ctx context.Context, wait time.Duration) bool {
	return wait == 0 || r.sleep(ctx, wait)
}

// verdict is what classify decides about an attempt's outcome.
type verdict int

const (
	verdictSucceed verdict = iota // a success: the retries end
	verdictFail                   // an error not to retry: returned as it is
	verdictRetry                  // another attempt, if attempts, time and budget allow
)

// classify decides about one attempt's outcome.
func (r *retry[T]) classify(ctx context.Context, v T, err error) verdict {
	if err == nil {
		if r.retryResult != nil && r.retryResult(v) {
			return verdictRetry
		}
		return verdictSucceed
	}
	if asPermanent(err) != nil || ctx.Err() != nil || matchesAny(err, r.abortOn) {
		return verdictFail
	}
	switch {
	case r.retryOnSet && !matchesAny(err, r.retryOn),
		r.retryIf != nil && !r.retryIf(err):
		return verdictFail
	}
	return verdictRetry
}

// matchesAny reports whether err matches one of errs, as errors.Is sees it.
func matchesAny(err error, errs []error) bool {
	for _, e := range errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// settle ends the retries on an outcome not to retry, and returns its
// error: the attempt's own, without a Permanent mark.
func (r *retry[T]) settle(ctx context.Context, attempt int, err error, verdict verdict, paid int64) error {
	if verdict == verdictSucceed {
		r.succeeded(paid)
	} else if err != nil {
		r.attemptFailed(ctx, attempt, err, false)
	}
	if perm := asPermanent(err); perm != nil {
		err = perm.err
	}
	return err
}

// attemptFailed records a failed attempt: one the policy would retry
// costs a throttle a token.
func (r *retry[T]) attemptFailed(ctx context.Context, attempt int, err error, retryable bool) {
	if retryable && r.budget != nil {
		r.budget.failed()
	}
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventAttemptFailed, Component: KindRetry, Attempt: attempt, Err: err})
	}
}

// nextWait returns the wait before the retry after attempt, or why no
// retry is made: ErrRetriesExhausted, the context's error, or
// errBreakerOutlasts.
func (r *retry[T]) nextWait(ctx context.Context, attempt int, prev time.Duration, err error, start time.Time) (time.Duration, error) {
	if r.attempts > 0 && attempt >= r.attempts {
		return 0, ErrRetriesExhausted
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	wait, ok := r.backoff.Delay(attempt, prev)
	if !ok {
		return 0, ErrRetriesExhausted
	}
	if wait, ok = r.hinted(err, wait); !ok {
		return 0, errBreakerOutlasts
	}
	if !r.fits(ctx, start, wait) {
		return 0, ErrRetriesExhausted
	}
	return wait, nil
}

// errBreakerOutlasts says that an open breaker refused the attempt and
// stays open past the backoff's wait: the retry would be refused too.
var errBreakerOutlasts = errors.New("resilience: breaker open past the wait")

// hinted returns the wait err's retry hint asks for, cut to
// WithMaxRetryAfter, or else the backoff's wait (0 if a backoff of the
// user's went below 0). Unless WithWaitForBreaker was given, it reports
// false for an open breaker's refusal whose hint is longer than the
// backoff's wait: failing fast is what the breaker is for, and its cool-down
// ends with a probe or a few, not a retry for every caller that waited.
func (r *retry[T]) hinted(err error, wait time.Duration) (time.Duration, bool) {
	hint, ok := retryAfter(err)
	if !ok || hint <= 0 || r.maxRetryAfter == 0 {
		return max(wait, 0), true
	}
	if hint > wait && !r.waitBreaker && openBreaker(err) {
		return 0, false
	}
	return min(hint, r.maxRetryAfter), true
}

// openBreaker reports whether err is an open breaker's refusal.
func openBreaker(err error) bool {
	return inChain(err, func(e error) bool {
		_, ok := e.(*BreakerOpenError)
		return ok
	})
}

// pay takes the retry after attempt from the budget, if there is one, and
// returns what it took from a quota or budget, or ErrRetryBudgetExhausted.
func (r *retry[T]) pay(ctx context.Context, attempt int, err error) (int64, error) {
	if r.budget == nil {
		return 0, nil
	}
	paid, ok := r.budget.allow(ctx, attempt, err)
	if !ok {
		return 0, ErrRetryBudgetExhausted
	}
	return paid, nil
}

// refund gives back what a retry took when it is not made after all.
func (r *retry[T]) refund(paid int64) {
	if paid > 0 {
		r.budget.deposit(paid)
	}
}

// fits reports whether a wait ends within the time limit and before the
// caller's deadline. Neither sum can overflow: a wait near the largest
// duration is weighed against the time left, not added to the time spent.
func (r *retry[T]) fits(ctx context.Context, start time.Time, wait time.Duration) bool {
	if r.maxElapsed > 0 && wait > r.maxElapsed-max(r.since(start), 0) {
		return false
	}
	if deadline, ok := ctx.Deadline(); ok && wait > 0 && r.until(deadline) < wait {
		// The wait would end past the caller's deadline: give up now
		// rather than sleep into it.
		return false
	}
	return true
}

// announce tells the observer about a retry to come.
func (r *retry[T]) announce(ctx context.Context, attempt int, err error, wait time.Duration) {
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventRetry, Component: KindRetry, Attempt: attempt, Err: err, Wait: wait})
	}
}

// drop hands a result WithRetryIfResult rejected to the discard hook, if
// there is one, before the wait for the next attempt, and reports whether
// it did: the result is then no longer the caller's to have.
func (r *retry[T]) drop(ctx context.Context, attempt int, v T, err error) bool {
	if err != nil || r.discard == nil {
		return false
	}
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventDiscarded, Component: KindRetry, Attempt: attempt})
	}
	r.discard(v)
	return true
}

// giveUp is the error when no further attempt is made for reason, after
// attempt failed with last (nil for a rejected result).
func (r *retry[T]) giveUp(ctx context.Context, attempt int, last, reason error) error {
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventGiveUp, Component: KindRetry, Attempt: attempt, Err: last, Reason: reason})
	}
	return &RetryError{Attempts: attempt, Last: last, Reason: reason}
}

// callEnded reports a call's outcome to an observer that asked for it.
func (r *retry[T]) callEnded(ctx context.Context, start time.Time, attempts int, err error) {
	r.observe(ctx, Event{Kind: EventCallEnded, Component: KindRetry, Attempt: attempts, Err: err, Duration: r.since(start)})
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

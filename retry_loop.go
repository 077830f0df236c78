package resilience

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// componentRetry names a Retry in its events.
const componentRetry = "retry"

type retry[T any] struct {
	retryConfig
	retryResult func(T) bool
	discard     func(T)
	clocked     bool     // the start of a call is read: for WithMaxElapsed, or for EventCallEnded
	last        chain[T] // fn alone, for Execute
}

func (r *retry[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Retry: fn is nil")
	}
	return r.run(ctx, r.last, fn)
}

func (r *retry[T]) link(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return r.run(ctx, next, fn) }
}

// run makes the first attempt, and hands what did not plainly succeed to
// again.
func (r *retry[T]) run(ctx context.Context, next chain[T], fn Func[T]) (T, error) {
	if r.budget != nil {
		r.budget.called()
	}
	var start time.Time
	if r.clocked {
		start = r.now()
	}
	v, err := next(ctx, fn)
	if err == nil && r.retryResult == nil {
		if r.budget != nil {
			r.budget.succeeded()
		}
		if r.outcomes {
			r.callEnded(ctx, start, 1, nil)
		}
		return v, nil
	}
	v, err, attempts := r.again(ctx, next, fn, start, v, err)
	if r.outcomes {
		r.callEnded(ctx, start, attempts, err)
	}
	return v, err
}

// again goes on after a first attempt that did not plainly succeed: each
// turn classifies the outcome, works out the next wait, announces it,
// sleeps and calls again. It returns the outcome and the attempts made.
func (r *retry[T]) again(ctx context.Context, next chain[T], fn Func[T], start time.Time, v T, err error) (T, error, int) {
	var prev time.Duration
	for attempt := 1; ; attempt++ {
		verdict := r.classify(ctx, v, err)
		if verdict != VerdictRetry {
			return v, r.settle(ctx, attempt, err, verdict), attempt
		}
		r.attemptFailed(ctx, attempt, err, true)
		wait, reason := r.nextWait(ctx, attempt, prev, err, start)
		if reason != nil {
			return v, r.giveUp(ctx, attempt, err, reason), attempt
		}
		r.announce(ctx, attempt, err, wait)
		if wait > 0 && !r.sleep(ctx, wait) {
			return v, r.giveUp(ctx, attempt, err, ctx.Err()), attempt
		}
		prev = wait
		if err == nil && r.discard != nil {
			r.drop(ctx, attempt, v) // a result WithRetryIfResult rejected
		}
		v, err = next(ctx, fn)
		if err == nil && r.retryResult == nil {
			if r.budget != nil {
				r.budget.succeeded()
			}
			return v, nil, attempt + 1
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
	if r.retryOnSet {
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
		if v := r.classifier(err); validVerdict(v) {
			return v
		} else {
			panic(badVerdict(v))
		}
	}
	return VerdictRetry
}

func badVerdict(v Verdict) string {
	return fmt.Sprintf("resilience: Retry: classifier returned %v, want VerdictSucceed, VerdictFail or VerdictRetry", v)
}

// settle ends the retries on an outcome not to retry, and returns its
// error: the attempt's own, without a Permanent mark.
func (r *retry[T]) settle(ctx context.Context, attempt int, err error, verdict Verdict) error {
	if verdict == VerdictSucceed {
		if r.budget != nil {
			r.budget.succeeded()
		}
	} else if err != nil {
		r.attemptFailed(ctx, attempt, err, false)
	}
	if perm := asPermanent(err); perm != nil {
		err = perm.err
	}
	return err
}

// attemptFailed records a failed attempt: one the policy would retry
// costs its throttle a token.
func (r *retry[T]) attemptFailed(ctx context.Context, attempt int, err error, retryable bool) {
	if retryable && r.budget != nil {
		r.budget.failed()
	}
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventAttemptFailed, Component: componentRetry, Attempt: attempt, Err: err})
	}
}

// nextWait returns the wait before the retry after attempt, or why no
// retry is made: ErrRetriesExhausted, ErrRetryBudgetExhausted or the
// context's error.
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
	wait = max(wait, 0) // a backoff of the user's that went below 0
	if hint, ok := retryAfter(err); ok && hint > 0 && r.maxRetryAfter > 0 {
		wait = min(hint, r.maxRetryAfter)
	}
	if !r.fits(ctx, start, wait) {
		return 0, ErrRetriesExhausted
	}
	if r.budget != nil && !r.budget.allow(ctx, attempt) {
		return 0, ErrRetryBudgetExhausted
	}
	return wait, nil
}

// fits reports whether a wait ends within the time limit and before the
// caller's deadline. Neither sum can overflow: a wait near the largest
// duration is weighed against the time left, not added to the time spent.
func (r *retry[T]) fits(ctx context.Context, start time.Time, wait time.Duration) bool {
	if r.maxElapsed > 0 && wait > r.maxElapsed-max(r.since(start), 0) {
		return false
	}
	if deadline, ok := ctx.Deadline(); ok && wait > 0 && -r.since(deadline) < wait {
		// The wait would end past the caller's deadline: give up now
		// rather than sleep into it.
		return false
	}
	return true
}

// announce tells the hook and the observer about a retry to come.
func (r *retry[T]) announce(ctx context.Context, attempt int, err error, wait time.Duration) {
	if r.onRetry != nil {
		r.onRetry(attempt, err, wait)
	}
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventRetry, Component: componentRetry, Attempt: attempt, Err: err, Wait: wait})
	}
}

// drop hands a rejected result to the discard hook.
func (r *retry[T]) drop(ctx context.Context, attempt int, v T) {
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventDiscarded, Component: componentRetry, Attempt: attempt})
	}
	r.discard(v)
}

// giveUp is the error when no further attempt is made for reason, after
// attempt failed with last (nil for a rejected result).
func (r *retry[T]) giveUp(ctx context.Context, attempt int, last, reason error) error {
	if r.observer != nil {
		r.observe(ctx, Event{Kind: EventGiveUp, Component: componentRetry, Attempt: attempt, Err: last, Reason: reason})
	}
	ctxEnded := reason != ErrRetriesExhausted && reason != ErrRetryBudgetExhausted
	if ctxEnded && r.lastErrOnEnd && last != nil {
		return last
	}
	return &RetryError{Attempts: attempt, Last: last, Reason: reason}
}

// callEnded reports a call's outcome to an observer that asked for it.
func (r *retry[T]) callEnded(ctx context.Context, start time.Time, attempts int, err error) {
	r.observe(ctx, Event{Kind: EventCallEnded, Component: componentRetry, Attempt: attempts, Err: err, Duration: r.since(start)})
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

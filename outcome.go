package resilience

import "strconv"

// Outcome is how a guard that judges outcomes counts a call's error: as a
// success, a failure, or neither. A [Breaker] ([WithBreakerClassifier]), an
// [AdaptiveLimiter] ([WithAdaptiveClassifier]) and an [AdaptiveThrottler]
// ([WithThrottleClassifier]) each take a classifier of the same shape,
// func(err error) Outcome, with the same meaning of each value. The zero
// value is OutcomeSuccess.
type Outcome uint8

const (
	// OutcomeSuccess counts the call as one the service handled: it closes
	// a run of a breaker's failures, is an adaptive limiter's latency
	// sample, is a throttler's accept.
	OutcomeSuccess Outcome = iota
	// OutcomeFailure counts the call against the service: a breaker's
	// failure, an adaptive limiter's drop (a sign of overload that cuts the
	// limit), a request a throttler's service did not accept.
	OutcomeFailure
	// OutcomeIgnored counts the call neither way, as resilience4j's
	// ignoreExceptions does: the call frees what it held (its slot, its
	// probe) and changes no count. [WithBreakerClassifier],
	// [WithAdaptiveClassifier] and [WithThrottleClassifier] say what that
	// means for each guard.
	OutcomeIgnored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeFailure:
		return "failure"
	case OutcomeIgnored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// classify asks f about a call's error, which is not nil. A value f
// should not return counts as a failure, and so does a panic in f, which
// is returned so that the guard counts the outcome before it lets the
// panic go on through the call: the guard's own state is settled first, as
// with a breaker's cool-down backoff that panics.
func classify(f func(error) Outcome, err error) (o Outcome, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			o, panicked = OutcomeFailure, r
		}
	}()
	if o = f(err); o > OutcomeIgnored {
		o = OutcomeFailure
	}
	return o, nil
}

// checkClassifier panics, naming the option fn, if f is nil.
func checkClassifier(fn string, f func(error) Outcome) {
	if f == nil {
		panic("resilience: " + fn + ": classifier is nil")
	}
}

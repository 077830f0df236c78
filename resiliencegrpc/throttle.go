package resiliencegrpc

import (
	"context"
	"errors"

	"github.com/faf87a20/resilience"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ThrottleOutcome classifies an attempt's outcome, as the client
// interceptors tell their guards, by whether the server took the call:
// give it to resilience.WithThrottleClassifier when a
// resilience.AdaptiveThrottler is a guard of [WithClientGuard], so that the
// throttle counts what the server refuses:
//
//	throttle := resilience.NewAdaptiveThrottler(resilience.WithThrottleClassifier(resiliencegrpc.ThrottleOutcome))
//	interceptor := resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithClientGuard(resiliencegrpc.PerTarget,
//		func(string) resilience.Guard { return throttle }))
//
// Not accepted (resilience.OutcomeFailure): RESOURCE_EXHAUSTED and
// UNAVAILABLE, with which a server
// refuses a call it cannot take now (as this package's server
// interceptors do) or the call finds no server; DEADLINE_EXCEEDED, a call
// the server did not answer in time; a refusal by a guard after the
// throttle, which reads as UNAVAILABLE and matches resilience.ErrRefused.
// Accepted
// (resilience.OutcomeSuccess): every other outcome, INTERNAL included: the
// server answered, even if wrongly. (The throttle's default reads a
// status's code not at all, and counts a server's RESOURCE_EXHAUSTED
// without pushback as accepted.) A call its
// caller cancelled counts for nothing, whatever ThrottleOutcome says: the
// throttle sees to that.
func ThrottleOutcome(err error) resilience.Outcome {
	if accepted(err) {
		return resilience.OutcomeSuccess
	}
	return resilience.OutcomeFailure
}

// accepted reports whether the server took the call (see
// ThrottleOutcome).
func accepted(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded:
		return false
	}
	return !errors.Is(err, resilience.ErrRefused) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, resilience.ErrTimeout)
}

// outcome is what the guards are told of an attempt that ended with err
// under ctx: err itself, or, for the CANCELED status of a call whose
// caller cancelled it, an error that matches context.Canceled too, for the
// guards count a call their caller cancelled for nothing (a breaker as
// neither a failure nor a success, a throttle not at all), and grpc-go's
// status does not match it.
func outcome(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != context.Canceled || status.Code(err) != codes.Canceled || errors.Is(err, context.Canceled) {
		return err
	}
	return &canceledError{err: err}
}

// canceledError is a call's CANCELED status that matches context.Canceled.
type canceledError struct{ err error }

func (e *canceledError) Error() string   { return e.err.Error() }
func (e *canceledError) Unwrap() []error { return []error{context.Canceled, e.err} }

// GRPCStatus returns the status of the call's error.
func (e *canceledError) GRPCStatus() *status.Status {
	s, _ := status.FromError(e.err)
	return s
}

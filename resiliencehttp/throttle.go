package resiliencehttp

import (
	"errors"
	"net/http"

	"github.com/faf87a20/resilience"
)

// ThrottleOutcome classifies an attempt's outcome, as a [Transport] tells
// its guards, by whether the server took the request: give it to
// resilience.WithThrottleClassifier when a resilience.AdaptiveThrottler is
// among the guards of [WithGuards] or [WithHostGuard], so that the
// throttle counts what this server refuses:
//
//	throttle := resilience.NewAdaptiveThrottler(resilience.WithThrottleClassifier(resiliencehttp.ThrottleOutcome))
//	client := resiliencehttp.NewClient(resiliencehttp.WithGuards(throttle))
//
// Accepted (resilience.OutcomeSuccess): a response (err nil), and a
// *[StatusError] of any status but 429, 502, 503 and 504: a 500 is the
// server's answer, even if a wrong one. Not accepted
// (resilience.OutcomeFailure): those four statuses, with which a server or
// the gateway in front of it says it cannot take the request now; and
// every other error, which means that no answer came: a connection refused
// or reset, an attempt that timed out, a refusal by a guard after the
// throttle. (The throttle's default reads no status: it counts a 503
// without Retry-After and a connection refused as accepted.) A call its
// caller cancelled counts for nothing, whatever ThrottleOutcome says: the
// throttle sees to that.
func ThrottleOutcome(err error) resilience.Outcome {
	if accepted(err) {
		return resilience.OutcomeSuccess
	}
	return resilience.OutcomeFailure
}

// accepted reports whether the server took the request (see
// ThrottleOutcome).
func accepted(err error) bool {
	if err == nil {
		return true
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return false
	}
	return true
}

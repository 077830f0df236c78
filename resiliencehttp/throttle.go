package resiliencehttp

import (
	"errors"
	"net/http"
)

// Accepted reports whether an attempt's outcome, as a [Transport] tells
// its guards, means that the server took the request: give it to
// resilience.WithThrottleAcceptedIf when a resilience.AdaptiveThrottler is
// among the guards of [WithGuards] or [WithHostGuard], so that the
// throttle counts what this server refuses:
//
//	throttle := resilience.NewAdaptiveThrottler(resilience.WithThrottleAcceptedIf(resiliencehttp.Accepted))
//	client := resiliencehttp.NewClient(resiliencehttp.WithGuards(throttle))
//
// Accepted: a response (err nil), and a *[StatusError] of any status but
// 429, 502, 503 and 504: a 500 is the server's answer, even if a wrong
// one. Not accepted: those four statuses, with which a server or the
// gateway in front of it says it cannot take the request now; and every
// other error, which means that no answer came: a connection refused or
// reset, an attempt that timed out, a refusal by a guard after the
// throttle. (The throttle's default reads no status: it counts a 503
// without Retry-After and a connection refused as accepted.) A call its caller cancelled counts for nothing, whatever
// Accepted says: the throttle sees to that.
func Accepted(err error) bool {
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

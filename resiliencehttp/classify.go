package resiliencehttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/faf87a20/resilience"
)

// Idempotent reports whether req is safe to send more than once, by the
// rule net/http applies before it resends a request on a fresh connection,
// widened to every method RFC 9110 calls idempotent: GET, HEAD, OPTIONS,
// TRACE, PUT and DELETE (an empty method is GET), or any request that
// carries an Idempotency-Key or X-Idempotency-Key header (present in the
// header map, even with a nil value, as net/http reads it). A POST or PATCH
// without such a header is not: the server may have acted on the first
// one. It is the [Transport]'s default for [WithIdempotent].
func Idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	_, ok := req.Header["X-Idempotency-Key"]
	return ok
}

// sendable reports whether net/http's Transport would send req: a URL
// with an http or https scheme and a host, a method and header and trailer
// fields that RFC 9110 allows, and a header map. A request it refuses
// fails the same way on every attempt, so the Transport sends it once.
//
// The Transport checks the request itself, before the first attempt,
// rather than reading the error net/http returns: net/http makes those
// errors with errors.New and fmt.Errorf, with no type or sentinel to match,
// and their text is not part of its API. The rules below are the standard's
// (the token and field-value grammar of RFC 9110), which net/http applies
// as golang.org/x/net/http/httpguts writes them. A base transport that
// speaks another scheme (http.Transport.RegisterProtocol, or a
// RoundTripper of its own) still gets such a request, once.
func sendable(req *http.Request) bool {
	if req.URL == nil || req.Header == nil || req.URL.Host == "" {
		return false
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return false
	}
	if req.Method != "" && !validToken(req.Method) {
		return false
	}
	return validFields(req.Header) && validFields(req.Trailer)
}

// validFields reports whether every name in h is a token and every value
// a field value.
func validFields(h http.Header) bool {
	for name, values := range h {
		if !validToken(name) {
			return false
		}
		for _, v := range values {
			if !validFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// validToken reports whether s is an RFC 9110 token: one or more letters,
// digits and the characters !#$%&'*+-.^_`|~.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", b) < 0:
			return false
		}
	}
	return true
}

// validFieldValue reports whether v holds no control character other than
// a horizontal tab (RFC 9110 field-value; bytes from 0x80 are obs-text,
// allowed).
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// Retryable is the [Transport]'s default for [WithRetryable]: it reports
// whether an attempt that ended with resp or err is worth repeating. It is
// asked only about requests that are safe to repeat (see [Idempotent]) and
// that net/http's Transport sends at all (one it refuses, such as an
// unsupported URL scheme or an invalid header, is sent once).
//
// Retried: 408 Request Timeout, 429 Too Many Requests, 502 Bad Gateway,
// 503 Service Unavailable and 504 Gateway Timeout, which say the same
// request may well succeed later, and every error but those that cannot
// heal by themselves (a certificate that does not verify, a host name that
// does not resolve), those of the caller's own context, and a
// resilience.AdaptiveThrottler's refusal (resilience.ErrThrottled), made
// to spare the server the load a retry would add. Other statuses
// are answers: a 500 or 501 mostly comes from a fault a repeat meets again,
// and another 4xx is about the request itself.
func Retryable(resp *http.Response, err error) bool {
	if err != nil {
		return retryableError(err)
	}
	if resp == nil {
		return false
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func retryableError(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalidCert      x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		dns              *net.DNSError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &invalidCert),
		errors.As(err, &hostname), errors.As(err, &verification):
		return false
	case errors.As(err, &dns) && dns.IsNotFound:
		return false
	case errors.Is(err, resilience.ErrThrottled):
		// A client-side throttle refused the attempt to spare the server:
		// another attempt would add to the load it sheds.
		return false
	}
	return true
}

// failure reports whether an attempt's response counts as a failure for the
// guards: a status the retry predicate retries, or any 5xx.
func failure(resp *http.Response, retried bool) bool {
	return retried || resp.StatusCode >= 500
}

// StatusError is the error of a response whose status is a failure: a
// status the retry predicate retries, or any 5xx. The [Transport] hands it
// to its guards as the attempt's outcome and to its retry as the attempt's
// error; the caller receives it only with [WithStatusErrors], when the
// retries have run out on such a response (then inside a
// resilience.RetryError that matches resilience.ErrRetriesExhausted) or
// when the request was not retried at all. [Handler] hands one to its guards
// for a 5xx answer.
//
// It carries the server's Retry-After, if any, as a retry hint
// (resilience.RetryHint).
type StatusError struct {
	// Method is the request's method.
	Method string
	// URL is the request's URL, without its user information.
	URL string
	// StatusCode is the response's status code, such as 503.
	StatusCode int
	// Status is the response's status line, such as "503 Service
	// Unavailable".
	Status string

	retryAfter time.Duration
}

// Error reports the status. http.Client's *url.Error adds the method and
// URL in front of it.
func (e *StatusError) Error() string {
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	}
	return "resiliencehttp: server answered " + status
}

// RetryAfter returns the wait the response's Retry-After header asked for,
// as seconds or as an HTTP-date, and 0 when there was no such header or it
// asked for no wait.
func (e *StatusError) RetryAfter() time.Duration { return e.retryAfter }

func newStatusError(req *http.Request, resp *http.Response, retryAfter time.Duration) *StatusError {
	return &StatusError{
		Method:     methodOf(req),
		URL:        req.URL.Redacted(),
		StatusCode: resp.StatusCode,
		Status:     resp.Status,
		retryAfter: retryAfter,
	}
}

func methodOf(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

// parseRetryAfter reads a Retry-After header value at time now: a number
// of seconds, or an HTTP-date. It returns 0 for a value that is missing,
// malformed, zero, negative or in the past; a huge value saturates.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return math.MaxInt64
			}
			return 0
		}
		if secs > uint64(math.MaxInt64/time.Second) {
			return math.MaxInt64
		}
		return time.Duration(secs) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return max(at.Sub(now), 0)
}

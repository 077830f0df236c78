package resiliencehttp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/faf87a20/resilience"
)

// Defaults of a [Transport], each changed by the option named beside it.
const (
	// DefaultTimeout bounds a whole call, retries and the reading of the
	// response body included ([WithTimeout]).
	DefaultTimeout = 30 * time.Second
	// DefaultAttemptTimeout bounds one attempt, the reading of the body of
	// the response returned included ([WithAttemptTimeout]).
	DefaultAttemptTimeout = 10 * time.Second
	// DefaultBodyBuffer is how many bytes of a request body that has no
	// GetBody are kept in memory to send it again ([WithBodyBuffer]).
	DefaultBodyBuffer = 64 << 10
	// DefaultDrainLimit is how many bytes of a response that is dropped or
	// retried are read so that its connection can serve another request
	// ([WithDrainLimit]).
	DefaultDrainLimit = 64 << 10
	// DefaultMaxHosts bounds how many hosts keep guards of their own
	// ([WithMaxHosts]).
	DefaultMaxHosts = 1024
)

// TransportOption configures [NewTransport] and [NewClient].
type TransportOption func(*config)

type config struct {
	timeout        time.Duration
	attemptTimeout time.Duration
	retryOpts      []resilience.RetryOption
	retryIf        func(*http.Response, error) bool
	idempotent     func(*http.Request) bool
	guards         []resilience.Guard
	hostGuards     []func(host string) resilience.Guard
	maxHosts       int
	statusErrors   bool
	bodyBuffer     int64
	drainLimit     int64
	clock          resilience.Clock
	priorityHeader string
}

func defaultConfig() config {
	return config{
		timeout:        DefaultTimeout,
		attemptTimeout: DefaultAttemptTimeout,
		retryIf:        Retryable,
		idempotent:     Idempotent,
		maxHosts:       DefaultMaxHosts,
		bodyBuffer:     DefaultBodyBuffer,
		drainLimit:     DefaultDrainLimit,
	}
}

func checkNonNegative(fn, what string, d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("resiliencehttp: %s: %s must not be negative, got %v", fn, what, d))
	}
}

// WithTimeout bounds a whole call: every attempt, every wait between them,
// and the reading of the returned response's body, which fails with an
// error matching resilience.ErrTimeout once d has passed. The request's own
// context still applies. The default is [DefaultTimeout]; 0 means no bound
// but the request context's. It panics if d is negative.
func WithTimeout(d time.Duration) TransportOption {
	checkNonNegative("WithTimeout", "timeout", d)
	return func(c *config) { c.timeout = d }
}

// WithAttemptTimeout bounds each attempt, from the moment its guards admit
// it: an attempt still waiting for its response after d fails with an
// error matching resilience.ErrTimeout and is retried like a transport
// error; for the response returned, the bound covers the reading of its
// body too. The default is [DefaultAttemptTimeout]; 0 means no bound. It
// panics if d is negative.
func WithAttemptTimeout(d time.Duration) TransportOption {
	checkNonNegative("WithAttemptTimeout", "timeout", d)
	return func(c *config) { c.attemptTimeout = d }
}

// WithRetry sets the retry's schedule with the core package's options:
// resilience.WithAttempts, WithBackoff, WithMaxRetryAfter, WithBudget,
// WithObserver and so on. Without it the transport retries with
// resilience.Retry's defaults: 3 attempts in all, full-jitter exponential
// waits from 100ms capped at 10s, Retry-After hints honoured up to 10s.
// resilience.WithAttempts(1) turns retries off. Which outcomes are retried
// is [WithRetryable]'s business, which requests [WithIdempotent]'s; a
// classifier given here sees only the errors WithRetryable retries. It panics
// if an option is nil.
func WithRetry(opts ...resilience.RetryOption) TransportOption {
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("resiliencehttp: WithRetry: option %d is nil", i))
		}
	}
	opts = append([]resilience.RetryOption(nil), opts...)
	return func(c *config) { c.retryOpts = append(c.retryOpts, opts...) }
}

// WithRetryable decides which outcomes of an attempt are retried: f receives
// the response (err nil) or the error (resp nil) and returns true to try
// again. It is asked only about requests that [WithIdempotent] calls safe
// to repeat and that net/http sends at all (see [Retryable]), and never
// about a resilience.AdaptiveThrottler's refusal (resilience.ErrThrottled),
// which is not retried whatever f would say. The default is [Retryable].
// It panics if f is nil.
func WithRetryable(f func(resp *http.Response, err error) bool) TransportOption {
	if f == nil {
		panic("resiliencehttp: WithRetryable: predicate is nil")
	}
	return func(c *config) { c.retryIf = f }
}

// WithIdempotent decides which requests are safe to send more than once;
// the others are sent once, whatever their outcome, as is a request that
// net/http refuses to send (see [Retryable]). The default is
// [Idempotent], net/http's rule; a predicate that always returns true
// retries a bare POST too. It panics if f is nil.
func WithIdempotent(f func(req *http.Request) bool) TransportOption {
	if f == nil {
		panic("resiliencehttp: WithIdempotent: predicate is nil")
	}
	return func(c *config) { c.idempotent = f }
}

// WithGuards puts guards shared by every host in front of each attempt, in
// the order given, outermost first: a resilience.Breaker, a
// resilience.Bulkhead, a rate limiter. A guard is told an attempt's outcome
// (nil, a transport error, or a *[StatusError]) when the attempt's response
// is dropped or the returned body is closed or read to the end, so a
// bulkhead slot is held for as long as the response is being read. It
// panics if a guard is nil.
func WithGuards(guards ...resilience.Guard) TransportOption {
	for i, g := range guards {
		if g == nil {
			panic(fmt.Sprintf("resiliencehttp: WithGuards: guard %d is nil", i))
		}
	}
	guards = append([]resilience.Guard(nil), guards...)
	return func(c *config) { c.guards = append(c.guards, guards...) }
}

// WithHostGuard gives each host (the request URL's host and port) a guard
// of its own, made by newGuard the first time the host is called. Given
// more than once, each host gets one guard from each, in the order given,
// after the guards of [WithGuards]. At most [WithMaxHosts] hosts keep their
// guards, as a resilience.Keyed keeps them: a host's guards go once they
// rest, never while a request is in flight on them nor while its breaker is
// not closed. It panics if newGuard is nil; the transport panics if
// newGuard returns nil.
func WithHostGuard(newGuard func(host string) resilience.Guard) TransportOption {
	if newGuard == nil {
		panic("resiliencehttp: WithHostGuard: constructor is nil")
	}
	return func(c *config) { c.hostGuards = append(c.hostGuards, newGuard) }
}

// WithMaxHosts bounds how many hosts keep the guards of [WithHostGuard]. A
// new host beyond the bound takes the place of one whose guards rest (a
// closed breaker, no request in flight), which are made anew when that host
// is called again; while none rests, the new host's requests go without
// host guards, so that a breaker kept open for a host that is down is never
// forgotten. The default is [DefaultMaxHosts]. It panics if n is less
// than 1.
func WithMaxHosts(n int) TransportOption {
	if n < 1 {
		panic(fmt.Sprintf("resiliencehttp: WithMaxHosts: hosts must be at least 1, got %d", n))
	}
	return func(c *config) { c.maxHosts = n }
}

// WithStatusErrors makes a call whose last response has a failure status
// (one the retry predicate retries) return an error instead of that
// response: a *[StatusError], inside a resilience.RetryError matching
// resilience.ErrRetriesExhausted when retries were made. The response is
// drained and closed. By default the last response is returned as it is,
// as net/http's Client would return it, its body readable.
func WithStatusErrors() TransportOption {
	return func(c *config) { c.statusErrors = true }
}

// WithBodyBuffer sets how many bytes of a request body without GetBody are
// read into memory before the first attempt, so that the request can be
// sent again. A larger body is sent once, as it streams, and the request is
// not retried. Requests made with http.NewRequest from a *bytes.Buffer,
// *bytes.Reader or *strings.Reader have GetBody and need no buffer. The
// default is [DefaultBodyBuffer]; 0 never buffers. It panics if n is
// negative.
func WithBodyBuffer(n int64) TransportOption {
	if n < 0 {
		panic(fmt.Sprintf("resiliencehttp: WithBodyBuffer: size must not be negative, got %d", n))
	}
	return func(c *config) { c.bodyBuffer = n }
}

// WithDrainLimit sets how many bytes of a response that is not returned (a
// retried 503, a response that arrived as its deadline passed) are read
// before it is closed, so that its connection goes back to the pool; a
// longer body is closed unread and its connection dropped. The body of a
// response that may be retried is read into memory up to this limit, so
// that it stays readable if it turns out to be the last. The default is
// [DefaultDrainLimit]; 0 closes such responses unread. It panics if n is
// negative.
func WithDrainLimit(n int64) TransportOption {
	if n < 0 {
		panic(fmt.Sprintf("resiliencehttp: WithDrainLimit: size must not be negative, got %d", n))
	}
	return func(c *config) { c.drainLimit = n }
}

// WithClock makes the transport read the time and wait on c: its timeouts,
// the reading of Retry-After dates, and the retry's waits (given to the
// retry as resilience.WithClock before the options of [WithRetry]). Tests
// pass a *clock.Mock of github.com/benbjohnson/clock. By default the real
// clock is used. It panics if c is nil.
func WithClock(c resilience.Clock) TransportOption {
	if c == nil {
		panic("resiliencehttp: WithClock: clock is nil")
	}
	return func(cfg *config) { cfg.clock = c }
}

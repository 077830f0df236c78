package resiliencehttp

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/faf87a20/resilience"
)

// Transport is an http.RoundTripper that sends each request through a
// base transport under a whole-call timeout, a retry, guards shared by
// every host or kept per host (breakers, bulkheads, rate limiters) and a
// per-attempt timeout, in that order from the outside in.
//
// It retries only requests that are safe to repeat ([WithIdempotent]) and
// outcomes worth repeating ([WithRetryable]), honours Retry-After as the
// retry's hint, replays request bodies, and drains and closes every
// response it does not return, so connections are reused. The response it
// returns stays readable after RoundTrip returns: the deadlines and the
// guards' outcome wait until its body is read to the end or closed. The
// base transport must honour the request's context, as http.Transport
// does. A Transport is safe for concurrent use; build one and share it.
type Transport struct {
	base       http.RoundTripper
	retry      resilience.Policy[*http.Response]
	retryIf    func(*http.Response, error) bool
	idempotent func(*http.Request) bool
	guards     []resilience.Guard
	hosts      *hostGuards // nil without per-host guards
	clock      resilience.Clock

	timeout, attemptTimeout time.Duration
	callErr, attemptErr     *timeoutError
	bodyBuffer, drainLimit  int64
	statusErrors            bool
	priorityHeader          string // canonical; "" sends none
}

// NewTransport returns a [Transport] over base; a nil base means
// http.DefaultTransport. With no option it times a whole call out after
// [DefaultTimeout] and an attempt after [DefaultAttemptTimeout], and
// retries idempotent requests on transport errors and on 408, 429, 502,
// 503 and 504 with resilience.Retry's defaults (3 attempts in all). It
// panics if an option is nil.
func NewTransport(base http.RoundTripper, opts ...TransportOption) *Transport {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			panic("resiliencehttp: NewTransport: option " + strconv.Itoa(i) + " is nil")
		}
		o(&cfg)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:           base,
		retryIf:        cfg.retryIf,
		idempotent:     cfg.idempotent,
		guards:         cfg.guards,
		clock:          cfg.clock,
		timeout:        cfg.timeout,
		attemptTimeout: cfg.attemptTimeout,
		callErr:        &timeoutError{what: "call", d: cfg.timeout},
		attemptErr:     &timeoutError{what: "attempt", d: cfg.attemptTimeout},
		bodyBuffer:     cfg.bodyBuffer,
		drainLimit:     cfg.drainLimit,
		statusErrors:   cfg.statusErrors,
		priorityHeader: cfg.priorityHeader,
	}
	if cfg.hostGuards != nil {
		t.hosts = newHostGuards(cfg.hostGuards, cfg.maxHosts)
	}
	var retryOpts []resilience.RetryOption
	if cfg.clock != nil {
		retryOpts = append(retryOpts, resilience.WithClock(cfg.clock))
	}
	retryOpts = append(retryOpts, cfg.retryOpts...)
	// A result is dropped only under a resilience.WithRetryIfResult the
	// user gave: its connection must still go back to the pool.
	retryOpts = append(retryOpts, resilience.WithDiscard(t.discard))
	t.retry = resilience.Retry[*http.Response](retryOpts...)
	return t
}

// NewClient returns an *http.Client whose transport is a [Transport] over
// http.DefaultTransport, configured by opts: with none, a client that
// retries what is safe to retry and never hangs for more than
// [DefaultTimeout]. The client itself has no Timeout, for the transport's
// covers the reading of the body. It panics if an option is nil.
func NewClient(opts ...TransportOption) *http.Client {
	return &http.Client{Transport: NewTransport(nil, opts...)}
}

// RoundTrip sends req as the Transport is configured to and returns the
// response to keep, or an error. After retries that ran out on a failure
// status it returns the last response with a nil error (or, with
// [WithStatusErrors], an error matching resilience.ErrRetriesExhausted and
// holding a *[StatusError]). A timeout's error matches
// resilience.ErrTimeout and context.DeadlineExceeded. As the
// http.RoundTripper contract asks, it never changes req and always closes
// its body.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := &call{t: t, req: req}
	return c.run()
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it can.
func (t *Transport) CloseIdleConnections() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// discard reads up to the drain limit of a response the retry dropped and
// closes it, so that its connection can serve another request.
func (t *Transport) discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, t.drainLimit) // with a limit of 0, reads nothing
	_ = resp.Body.Close()
}

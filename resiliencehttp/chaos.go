package resiliencehttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faf87a20/resilience"
)

// Chaos is a fault to inject into HTTP traffic: on the client side with
// [NewChaosTransport], on the server side with [ChaosHandler] or
// [ChaosMiddleware]. Make one with [ChaosStatus], [ChaosLatency],
// [ChaosDrop] or [ChaosTruncate]; to inject several, wrap one transport or
// handler in another. Which requests it is injected into is decided per
// request by the core package's chaos options, as for its Chaos policies:
// resilience.WithChaosRate, WithChaosEvery, WithRand, and
// WithChaosEnabled, whose predicate receives the request's context. The
// zero Chaos is no fault: the functions that take one panic on it.
type Chaos struct {
	kind chaosKind
	code int
	body string
	d    time.Duration
	n    int64
}

type chaosKind uint8

const (
	chaosNone chaosKind = iota
	chaosStatus
	chaosLatency
	chaosDrop
	chaosTruncate
)

// ChaosStatus is a response with status code and body, text/plain, in
// place of the real one: the client transport answers without sending the
// request, the server middleware without calling its handler. It panics
// unless 200 <= code <= 599.
func ChaosStatus(code int, body string) Chaos {
	if code < 200 || code > 599 {
		panic(fmt.Sprintf("resiliencehttp: ChaosStatus: status must be in [200, 599], got %d", code))
	}
	return Chaos{kind: chaosStatus, code: code, body: body}
}

// ChaosLatency is a wait of d before the request goes on: before the
// client transport sends it, before the server middleware calls its
// handler. The wait is on the clock of resilience.WithClock, if given, and
// ends when the request's context ends: the client transport then returns
// the context's error and the server middleware returns without an answer,
// neither having sent the request on. It panics if d is negative.
func ChaosLatency(d time.Duration) Chaos {
	if d < 0 {
		panic(fmt.Sprintf("resiliencehttp: ChaosLatency: latency must not be negative, got %v", d))
	}
	return Chaos{kind: chaosLatency, d: d}
}

// ChaosDrop is a connection that breaks before the answer. The client
// transport returns, without sending the request, an error that matches
// syscall.ECONNRESET, as a connection the server reset gives, and that
// [Retryable] retries. The server middleware aborts the request without
// calling its handler (panic(http.ErrAbortHandler), which net/http answers
// by closing an HTTP/1 connection and resetting an HTTP/2 stream, and
// does not log); net/http's client itself sends an idempotent request
// again, once, when this happens on a connection it had used before.
func ChaosDrop() Chaos { return Chaos{kind: chaosDrop} }

// ChaosTruncate is a response whose body breaks off after n bytes. The
// client transport sends the request and hands on the response, whose
// body gives at most its first n bytes and then io.ErrUnexpectedEOF, as
// net/http's gives when a connection breaks in the middle of a body. The
// server middleware calls its handler, sends at most the first n bytes of
// the body it writes under a Content-Length larger than that (the
// handler's own, if larger, or n+1), and then aborts the request as
// [ChaosDrop] does. A client that reads the body to the end sees the
// fault; one that reads the status alone does not. It panics if n is
// negative.
func ChaosTruncate(n int64) Chaos {
	if n < 0 {
		panic(fmt.Sprintf("resiliencehttp: ChaosTruncate: length must not be negative, got %d", n))
	}
	return Chaos{kind: chaosTruncate, n: n}
}

// chaosError is what an injection reports to the observer, and, for a
// dropped connection, the client's error.
type chaosError struct {
	msg   string
	cause error
}

func (e *chaosError) Error() string { return e.msg }
func (e *chaosError) Unwrap() error { return e.cause }

// chaos is what the client transport and the server middleware share: the
// fault and the core policy that decides which requests get it and
// reports each injection.
type chaos struct {
	c Chaos
	// p is a resilience.ChaosLatency for a latency, which waits, and a
	// resilience.ChaosFault failing with err for the others, whose error
	// says that the request is injected into.
	p   resilience.Policy[struct{}]
	err error
}

// newChaos checks c and opts for the function fn and builds the policy.
// The core's constructor checks the options; its panics are given fn's
// name.
func newChaos(fn string, c Chaos, opts []resilience.ChaosOption) (ch chaos) {
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("resiliencehttp: %s: option %d is nil", fn, i))
		}
	}
	ch.c = c
	switch c.kind {
	case chaosNone:
		panic("resiliencehttp: " + fn + ": chaos is the zero Chaos (make one with ChaosStatus, ChaosLatency, ChaosDrop or ChaosTruncate)")
	case chaosStatus:
		ch.err = &chaosError{msg: "resiliencehttp: chaos: status " + strconv.Itoa(c.code)}
	case chaosDrop:
		ch.err = &chaosError{msg: "resiliencehttp: chaos: connection reset", cause: syscall.ECONNRESET}
	case chaosTruncate:
		ch.err = &chaosError{msg: "resiliencehttp: chaos: body cut after " + strconv.FormatInt(c.n, 10) + " bytes", cause: io.ErrUnexpectedEOF}
	}
	defer func() {
		if v := recover(); v != nil {
			panic(renamePanic(v, fn))
		}
	}()
	if c.kind == chaosLatency {
		ch.p = resilience.ChaosLatency[struct{}](c.d, opts...)
	} else {
		ch.p = resilience.ChaosFault[struct{}](ch.err, opts...)
	}
	return ch
}

// renamePanic gives a panic message of the core's chaos constructors the
// name of this package's function fn.
func renamePanic(v any, fn string) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	for _, core := range []string{"resilience: ChaosFault: ", "resilience: ChaosLatency: "} {
		if rest, ok := strings.CutPrefix(s, core); ok {
			return "resiliencehttp: " + fn + ": " + rest
		}
	}
	return s
}

// pass is the call the core policy makes when it lets a request through.
func pass(context.Context) (struct{}, error) { return struct{}{}, nil }

// inject reports whether the request of ctx is injected into, and, for a
// latency, waits; err is the context's if it ended during the wait.
func (ch *chaos) inject(ctx context.Context) (injected bool, err error) {
	_, err = ch.p.Execute(ctx, pass)
	if ch.c.kind == chaosLatency {
		return false, err
	}
	return err != nil, nil
}

// ChaosTransport is an http.RoundTripper that injects a [Chaos] into some
// of the requests it sends through its base transport, to prove what a
// client does when its server misbehaves. Put it innermost, as the base
// of a [Transport], so that the Transport's retry, guards and timeouts see
// the faults as they would see the server's own:
//
//	client := &http.Client{Transport: resiliencehttp.NewTransport(
//		resiliencehttp.NewChaosTransport(http.DefaultTransport, resiliencehttp.ChaosStatus(503, "chaos"),
//			resilience.WithChaosRate(0.2)))}
//
// A ChaosTransport is safe for concurrent use.
type ChaosTransport struct {
	base http.RoundTripper
	ch   chaos
}

// NewChaosTransport returns a [ChaosTransport] that injects c into the
// requests opts choose (by default every request: give a rate or a
// predicate), over base; a nil base means http.DefaultTransport. With
// resilience.WithObserver it reports a resilience.EventChaos for every
// injection, as the core's policies do: component "chaos-latency" with the
// Wait for a latency, "chaos-fault" with an Err that describes the fault
// for the others. Disabled, by a rate of 0 or a predicate that turns the
// request down, it costs a few nanoseconds and allocates nothing. It
// panics if c is the zero Chaos or an option is nil or invalid.
func NewChaosTransport(base http.RoundTripper, c Chaos, opts ...resilience.ChaosOption) *ChaosTransport {
	ch := newChaos("NewChaosTransport", c, opts)
	if base == nil {
		base = http.DefaultTransport
	}
	return &ChaosTransport{base: base, ch: ch}
}

// RoundTrip sends req through the base transport, or injects the fault
// into it. As the http.RoundTripper contract asks, it never changes req
// and always closes its body.
func (t *ChaosTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	injected, err := t.ch.inject(req.Context())
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	if !injected {
		return t.base.RoundTrip(req)
	}
	switch t.ch.c.kind {
	case chaosStatus:
		closeRequestBody(req)
		return t.ch.response(req), nil
	case chaosDrop:
		closeRequestBody(req)
		return nil, t.ch.err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &truncatedBody{rc: resp.Body, left: t.ch.c.n}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it can.
func (t *ChaosTransport) CloseIdleConnections() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// response is the injected answer to req.
func (ch *chaos) response(req *http.Request) *http.Response {
	c := ch.c
	return &http.Response{
		Status:     strconv.Itoa(c.code) + " " + http.StatusText(c.code),
		StatusCode: c.code,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":   {"text/plain; charset=utf-8"},
			"Content-Length": {strconv.Itoa(len(c.body))},
		},
		Body:          io.NopCloser(strings.NewReader(c.body)),
		ContentLength: int64(len(c.body)),
		Request:       req,
	}
}

// truncatedBody gives at most left bytes of rc, then
// io.ErrUnexpectedEOF.
type truncatedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *truncatedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *truncatedBody) Close() error { return b.rc.Close() }

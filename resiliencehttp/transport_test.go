package resiliencehttp_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

func TestTransportStatuses(t *testing.T) {
	tests := []struct {
		name     string
		codes    []int
		opts     []resiliencehttp.TransportOption
		want     int
		requests int64
	}{
		{"503 503 200", []int{503, 503, 200}, nil, 200, 3},
		{"408 then 200", []int{408, 200}, nil, 200, 2},
		{"429 then 200", []int{429, 200}, nil, 200, 2},
		{"502 then 200", []int{502, 200}, nil, 200, 2},
		{"504 then 200", []int{504, 200}, nil, 200, 2},
		{"500 is an answer", []int{500, 200}, nil, 500, 1},
		{"501 is an answer", []int{501, 200}, nil, 501, 1},
		{"404 is an answer", []int{404, 200}, nil, 404, 1},
		{"200 at once", []int{200}, nil, 200, 1},
		{"503 to the end gives the last 503", []int{503}, nil, 503, 3},
		{"one attempt", []int{503, 200}, []resiliencehttp.TransportOption{
			resiliencehttp.WithRetry(resilience.WithAttempts(1))}, 503, 1},
		{"five attempts", []int{503, 503, 503, 503, 200}, []resiliencehttp.TransportOption{
			resiliencehttp.WithRetry(resilience.WithAttempts(5))}, 200, 5},
		{"a predicate that retries 500", []int{500, 200}, []resiliencehttp.TransportOption{
			resiliencehttp.WithRetryable(func(resp *http.Response, err error) bool {
				return resiliencehttp.Retryable(resp, err) || resp != nil && resp.StatusCode == 500
			})}, 200, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(tc.codes...))
			tr := resiliencehttp.NewTransport(base(t), append([]resiliencehttp.TransportOption{noWait}, tc.opts...)...)
			resp, err := get(t, tr, srv.URL)
			require.NoError(t, err)
			assert.Equal(t, tc.want, resp.StatusCode)
			assert.Equal(t, "status "+strconv.Itoa(tc.want), readAll(t, resp))
			assert.Equal(t, tc.requests, srv.requests.Load(), "requests")
		})
	}
}

func TestTransportStatusErrors(t *testing.T) {
	srv := newServer(t, statuses(503))
	client := &http.Client{Transport: resiliencehttp.NewTransport(base(t), noWait, resiliencehttp.WithStatusErrors())}

	resp, err := client.Get(srv.URL + "/users?id=7")
	require.Nil(t, resp)
	require.Error(t, err)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	var se *resiliencehttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.MethodGet, se.Method)
	assert.Equal(t, srv.URL+"/users?id=7", se.URL)
	assert.Equal(t, 503, se.StatusCode)
	assert.Equal(t, `Get "`+srv.URL+`/users?id=7": resilience: retries exhausted after 3 attempts: resiliencehttp: server answered 503 Service Unavailable`, err.Error())
	var re *resilience.RetryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 3, re.Attempts)
	assert.Equal(t, int64(3), srv.requests.Load())

	// A POST is sent once: its failure status is the error, with no retry
	// to have run out.
	resp, err = client.Post(srv.URL, "text/plain", strings.NewReader("x"))
	require.Nil(t, resp)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.MethodPost, se.Method)
	assert.NotErrorIs(t, err, resilience.ErrRetriesExhausted)
	assert.Equal(t, int64(4), srv.requests.Load())
}

func TestTransportMethods(t *testing.T) {
	always := resiliencehttp.WithIdempotent(func(*http.Request) bool { return true })
	tests := []struct {
		method   string
		header   string
		opts     []resiliencehttp.TransportOption
		requests int64
	}{
		{method: http.MethodGet, requests: 3},
		{method: "", requests: 3},
		{method: http.MethodHead, requests: 3},
		{method: http.MethodOptions, requests: 3},
		{method: http.MethodTrace, requests: 3},
		{method: http.MethodPut, requests: 3},
		{method: http.MethodDelete, requests: 3},
		{method: http.MethodPost, requests: 1},
		{method: http.MethodPatch, requests: 1},
		{method: http.MethodPost, header: "Idempotency-Key", requests: 3},
		{method: http.MethodPost, header: "X-Idempotency-Key", requests: 3},
		{method: http.MethodPost, opts: []resiliencehttp.TransportOption{always}, requests: 3},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.header, func(t *testing.T) {
			srv := newServer(t, statuses(503))
			tr := resiliencehttp.NewTransport(base(t), append([]resiliencehttp.TransportOption{noWait}, tc.opts...)...)
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader("body"))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header[tc.header] = []string{"k-1"}
			}
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, 503, resp.StatusCode)
			resp.Body.Close()
			assert.Equal(t, tc.requests, srv.requests.Load(), "requests")
		})
	}
}

func TestIdempotent(t *testing.T) {
	for _, m := range []string{"", "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"} {
		assert.True(t, resiliencehttp.Idempotent(&http.Request{Method: m, Header: http.Header{}}), m)
	}
	for _, m := range []string{"POST", "PATCH", "CONNECT", "PROPFIND"} {
		assert.False(t, resiliencehttp.Idempotent(&http.Request{Method: m, Header: http.Header{}}), m)
	}
	// net/http reads a nil value as "do not send, but the request is idempotent".
	assert.True(t, resiliencehttp.Idempotent(&http.Request{Method: "POST", Header: http.Header{"Idempotency-Key": nil}}))
	assert.True(t, resiliencehttp.Idempotent(&http.Request{Method: "POST", Header: http.Header{"X-Idempotency-Key": {"a"}}}))
}

func TestTransportGoroutinesAndConnections(t *testing.T) {
	// 100 calls against a server answering 503, 503, 200: every retried
	// response is drained and closed, so its connection serves the next
	// attempt.
	ignore := goleak.IgnoreCurrent()
	tests := []struct {
		name  string
		opts  []resiliencehttp.TransportOption
		conns int64
	}{
		{"defaults", nil, 2},
		{"no timeouts", []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0)}, 2},
		// A drain limit below the 503's body drops each retried
		// connection: what draining saves.
		{"drain limit below the body", []resiliencehttp.TransportOption{resiliencehttp.WithDrainLimit(1)}, 201},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(503, 503, 200))
			tr := resiliencehttp.NewTransport(base(t), append([]resiliencehttp.TransportOption{noWait}, tc.opts...)...)
			for range 100 {
				resp, err := get(t, tr, srv.URL)
				require.NoError(t, err)
				require.Equal(t, 200, resp.StatusCode)
				readAll(t, resp)
			}
			assert.Equal(t, int64(300), srv.requests.Load())
			assert.LessOrEqual(t, srv.conns.Load(), tc.conns, "TCP connections")
		})
	}
	goleak.VerifyNone(t, ignore)
}

func TestTransportDropsRejectedResults(t *testing.T) {
	// A result rejected by a resilience.WithRetryIfResult the user gave
	// is drained and closed too. Two of every three responses are
	// rejected, which the default retry throttle would soon stop retrying.
	var n atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 != 0 {
			w.Header().Set("X-Not-Ready", "1")
		}
		_, _ = w.Write([]byte("body"))
	})
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithRetry(
		resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget(),
		resilience.WithRetryIfResult(func(resp *http.Response) bool { return resp.Header.Get("X-Not-Ready") != "" }),
	))
	for range 30 {
		resp, err := get(t, tr, srv.URL)
		require.NoError(t, err)
		assert.Empty(t, resp.Header.Get("X-Not-Ready"))
		assert.Equal(t, "body", readAll(t, resp))
	}
	assert.LessOrEqual(t, srv.conns.Load(), int64(2), "TCP connections")
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		resp *http.Response
		err  error
		want bool
	}{
		{"408", &http.Response{StatusCode: 408}, nil, true},
		{"429", &http.Response{StatusCode: 429}, nil, true},
		{"502", &http.Response{StatusCode: 502}, nil, true},
		{"503", &http.Response{StatusCode: 503}, nil, true},
		{"504", &http.Response{StatusCode: 504}, nil, true},
		{"200", &http.Response{StatusCode: 200}, nil, false},
		{"500", &http.Response{StatusCode: 500}, nil, false},
		{"501", &http.Response{StatusCode: 501}, nil, false},
		{"400", &http.Response{StatusCode: 400}, nil, false},
		{"neither", nil, nil, false},
		{"connection reset", nil, &url.Error{Op: "Get", Err: errors.New("read: connection reset by peer")}, true},
		{"timeout", nil, resilience.ErrTimeout, true},
		{"bulkhead full", nil, resilience.ErrBulkheadFull, true},
		{"throttled locally", nil, fmt.Errorf("attempt: %w", resilience.ErrThrottled), false},
		{"unknown host", nil, &url.Error{Op: "Get", Err: dnsNotFound}, false},
		{"bad certificate", nil, &url.Error{Op: "Get", Err: badCert}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resiliencehttp.Retryable(tc.resp, tc.err))
		})
	}
}

var (
	dnsNotFound = &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}
	badCert     = x509.UnknownAuthorityError{}
)

// TestTransportThrottledByDefault: against a server that fails every call
// twice, the default retry throttle soon stops the retries, sparing it.
func TestTransportThrottledByDefault(t *testing.T) {
	srv := newServer(t, statuses(503, 503, 200))
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(0))))
	ok := 0
	for range 100 {
		resp, err := get(t, tr, srv.URL)
		require.NoError(t, err)
		if resp.StatusCode == 200 {
			ok++
		}
		readAll(t, resp)
	}
	assert.Less(t, srv.requests.Load(), int64(150), "the throttle held the load well under 3 attempts a call")
	assert.Greater(t, ok, 0, "the first calls were retried")
}

package resiliencehttp_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestTransportInvalidRequestSentOnce: a request net/http refuses to send
// (go-retryablehttp's TestClient_DefaultRetryPolicy_invalidscheme,
// _invalidheadername and _invalidheadervalue, and their kin) fails the same
// way on every attempt. The Transport sends it once, begins no wait, and
// returns net/http's own error.
func TestTransportInvalidRequestSentOnce(t *testing.T) {
	tests := []struct {
		name  string
		build func(req *http.Request)
	}{
		{"unsupported scheme", func(req *http.Request) { req.URL.Scheme = "ftp" }},
		{"no scheme", func(req *http.Request) { req.URL.Scheme = "" }},
		{"a scheme in capitals", func(req *http.Request) { req.URL.Scheme = "HTTP" }},
		{"invalid header name", func(req *http.Request) { req.Header.Set("Header-Name-\033", "header value") }},
		{"empty header name", func(req *http.Request) { req.Header[""] = []string{"header value"} }},
		{"header name with a space", func(req *http.Request) { req.Header["Header Name"] = []string{"header value"} }},
		{"invalid header value", func(req *http.Request) { req.Header.Set("Header-Name", "bad header value \033") }},
		{"header value with a newline", func(req *http.Request) { req.Header.Set("Header-Name", "bad\r\nInjected: 1") }},
		{"header value with DEL", func(req *http.Request) { req.Header.Set("Header-Name", "bad \x7f") }},
		{"invalid trailer name", func(req *http.Request) { req.Trailer = http.Header{"Trailer Name": nil} }},
		{"invalid trailer value", func(req *http.Request) { req.Trailer = http.Header{"Trailer-Name": {"bad \000"}} }},
		{"invalid method", func(req *http.Request) {
			req.Method = "GET /"
			req.Header.Set("Idempotency-Key", "1") // retried, were it valid
		}},
		{"no host", func(req *http.Request) { req.URL.Host = "" }},
		{"nil header", func(req *http.Request) { req.Header = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(503))
			newReq := func() *http.Request {
				req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				tc.build(req)
				return req
			}
			// What net/http alone answers, for comparison.
			_, want := base(t).RoundTrip(newReq())
			require.Error(t, want, "net/http refuses the request")

			clk := newWaitClock()
			rec := &ctxRecorder{base: base(t)}
			tr := resiliencehttp.NewTransport(rec, resiliencehttp.WithClock(clk),
				resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0),
				resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(time.Hour)), resilience.WithoutBudget()))
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := tr.RoundTrip(newReq())
				done <- result{resp, err}
			}()
			var res result
			waited := false
		loop:
			for {
				select {
				case res = <-done:
					break loop
				case d := <-clk.waits: // a retry's wait: let it end
					waited = true
					clk.Add(d)
				}
			}
			assert.False(t, waited, "a wait before a retry")
			assert.Nil(t, res.resp)
			require.Error(t, res.err)
			assert.Equal(t, want.Error(), res.err.Error(), "net/http's own error")
			assert.Len(t, rec.ctxs, 1, "attempts")
			assert.Zero(t, srv.requests.Load(), "requests the server saw")
		})
	}
}

// TestTransportValidRequestsRetried: requests at the edges of what net/http
// accepts are retried as any other.
func TestTransportValidRequestsRetried(t *testing.T) {
	tests := []struct {
		name  string
		build func(req *http.Request)
	}{
		{"every token character in a name", func(req *http.Request) {
			req.Header["!#$%&'*+-.^_`|~09azAZ"] = []string{"v"}
		}},
		{"tab, space and obs-text in a value", func(req *http.Request) { req.Header.Set("X-V", "a\tb c \x80\xff") }},
		{"an empty value", func(req *http.Request) { req.Header.Set("X-V", "") }},
		{"a valid trailer", func(req *http.Request) { req.Trailer = http.Header{"X-T": {"v"}} }},
		{"an extension method", func(req *http.Request) { req.Method = "PURGE" }},
		{"an empty method is GET", func(req *http.Request) { req.Method = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(503, 200))
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			tc.build(req)
			if req.Method == "PURGE" {
				req.Header.Set("Idempotency-Key", "1")
			}
			tr := resiliencehttp.NewTransport(base(t), noWait)
			resp, err := tr.RoundTrip(req)
			if !assert.NoError(t, err) {
				return
			}
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.True(t, strings.HasPrefix(readAll(t, resp), "status 200"))
			assert.Equal(t, int64(2), srv.requests.Load(), "requests")
		})
	}
}

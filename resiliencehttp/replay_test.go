package resiliencehttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience/resiliencehttp"
)

// bodyReader is a base transport that reads each request's body itself,
// as a signing or logging transport does, records it, and sends a copy on
// to base.
type bodyReader struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (r *bodyReader) RoundTrip(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		var err error
		if b, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	r.mu.Unlock()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.ContentLength = int64(len(b))
	return r.base.RoundTrip(out)
}

// TestTransportReplaysBodiesToAnyBase: every attempt hands the base
// transport a fresh copy of the request's body, whatever the base does
// with the last one, and whether the body has GetBody, is buffered by the
// Transport, or is http.NoBody without GetBody.
func TestTransportReplaysBodiesToAnyBase(t *testing.T) {
	const payload = "the request body"
	tests := []struct {
		name string
		req  func(url string) *http.Request
		want string
	}{
		{"GetBody", func(u string) *http.Request {
			req, err := http.NewRequest(http.MethodPut, u, strings.NewReader(payload))
			require.NoError(t, err)
			return req
		}, payload},
		{"no GetBody: buffered", func(u string) *http.Request {
			req, err := http.NewRequest(http.MethodPut, u, &closeCounter{Reader: strings.NewReader(payload)})
			require.NoError(t, err)
			return req
		}, payload},
		{"http.NoBody without GetBody", func(u string) *http.Request {
			parsed, err := url.Parse(u)
			require.NoError(t, err)
			return &http.Request{Method: http.MethodGet, URL: parsed, Header: http.Header{}, Body: http.NoBody}
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(503, 503, 200))
			rd := &bodyReader{base: base(t)}
			tr := resiliencehttp.NewTransport(rd, noWait)
			resp, err := tr.RoundTrip(tc.req(srv.URL))
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			readAll(t, resp)
			rd.mu.Lock()
			defer rd.mu.Unlock()
			assert.Equal(t, []string{tc.want, tc.want, tc.want}, rd.bodies)
		})
	}
}

package resiliencehttp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestTransportTimeouts runs requests into a server that hangs and moves a
// mock clock past the deadline once each hanging request has arrived.
func TestTransportTimeouts(t *testing.T) {
	tests := []struct {
		name     string
		hangs    int // requests that hang before the server answers 200
		opts     []resiliencehttp.TransportOption
		advance  time.Duration // per hanging request
		want     int           // status, or 0 for an error
		requests int64
		errIs    []error
		timeout  bool // the error is a net.Error whose Timeout is true
	}{
		{name: "attempt timeout, then success", hangs: 1, advance: time.Second,
			opts: []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(time.Second)},
			want: 200, requests: 2},
		{name: "attempt timeouts to the end", hangs: 3, advance: time.Second,
			opts:     []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(time.Second)},
			requests: 3, errIs: []error{resilience.ErrRetriesExhausted, resilience.ErrTimeout, context.DeadlineExceeded}},
		{name: "call timeout", hangs: 1, advance: 2 * time.Second,
			opts:     []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(2 * time.Second), resiliencehttp.WithAttemptTimeout(0)},
			requests: 1, errIs: []error{resilience.ErrTimeout, context.DeadlineExceeded}, timeout: true},
		{name: "call timeout of a POST", hangs: 1, advance: 2 * time.Second,
			opts: []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(2 * time.Second),
				resiliencehttp.WithIdempotent(func(*http.Request) bool { return false })},
			requests: 1, errIs: []error{resilience.ErrTimeout, context.DeadlineExceeded}, timeout: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arrived := make(chan struct{})
			var n atomic.Int64
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= int64(tc.hangs) {
					hang(arrived)(w, r)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			clk := clock.NewMock()
			opts := append([]resiliencehttp.TransportOption{noWait, resiliencehttp.WithClock(clk)}, tc.opts...)
			client := &http.Client{Transport: resiliencehttp.NewTransport(base(t), opts...)}
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := client.Get(srv.URL)
				done <- result{resp, err}
			}()
			var res result
			for waiting := true; waiting; {
				select {
				case <-arrived:
					clk.Add(tc.advance)
				case res = <-done:
					waiting = false
				}
			}
			assert.Equal(t, tc.requests, srv.requests.Load(), "requests")
			if tc.want != 0 {
				require.NoError(t, res.err)
				assert.Equal(t, tc.want, res.resp.StatusCode)
				readAll(t, res.resp)
				return
			}
			require.Error(t, res.err)
			for _, target := range tc.errIs {
				assert.ErrorIs(t, res.err, target)
			}
			var ne net.Error
			require.True(t, errors.As(res.err, &ne))
			assert.Equal(t, tc.timeout, ne.Timeout(), "net.Error.Timeout")
		})
	}
}

func TestTransportCallerCancels(t *testing.T) {
	// The caller's own context ends the call with its error, not a timeout,
	// and no retry follows.
	arrived := make(chan struct{})
	srv := newServer(t, hang(arrived))
	tr := resiliencehttp.NewTransport(base(t), noWait)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	go func() {
		<-arrived
		cancel()
	}()
	_, err = tr.RoundTrip(req)
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, resilience.ErrTimeout)
	assert.Equal(t, int64(1), srv.requests.Load())
}

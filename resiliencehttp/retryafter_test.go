package resiliencehttp_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestTransportRetryAfter checks the wait before the retry that follows a
// 503 or 429 with a Retry-After header: the retry asks the clock for a
// deadline that far ahead, and the test moves the clock there.
func TestTransportRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		header func(now time.Time) string
		opts   []resilience.RetryOption
		want   time.Duration
	}{
		{"seconds", 503, func(time.Time) string { return "2" }, nil, 2 * time.Second},
		{"429 seconds", 429, func(time.Time) string { return "4" }, nil, 4 * time.Second},
		{"seconds with a leading zero", 503, func(time.Time) string { return "05" }, nil, 5 * time.Second},
		{"HTTP-date", 503, func(now time.Time) string { return now.Add(5 * time.Second).UTC().Format(http.TimeFormat) }, nil, 5 * time.Second},
		{"cut to the maximum", 503, func(time.Time) string { return "120" },
			[]resilience.RetryOption{resilience.WithMaxRetryAfter(3 * time.Second)}, 3 * time.Second},
		// The largest Retry-After Handler sends (an isolated breaker's)
		// and a date centuries ahead saturate: cut to the default
		// maximum, never a negative wait.
		{"the largest seconds: cut to the default", 503, func(time.Time) string { return "9223372037" }, nil, 10 * time.Second},
		{"seconds past int64: cut to the default", 503, func(time.Time) string { return "99999999999999999999" }, nil, 10 * time.Second},
		{"a date centuries ahead: cut to the default", 503, func(time.Time) string { return "Fri, 31 Dec 9999 23:59:59 GMT" }, nil, 10 * time.Second},
		{"zero: the backoff decides", 503, func(time.Time) string { return "0" }, nil, 7 * time.Second},
		{"a date past: the backoff decides", 503, func(now time.Time) string { return now.Add(-time.Hour).UTC().Format(http.TimeFormat) }, nil, 7 * time.Second},
		{"garbage: the backoff decides", 503, func(time.Time) string { return "soon" }, nil, 7 * time.Second},
		{"no header: the backoff decides", 503, func(time.Time) string { return "" }, nil, 7 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newWaitClock()
			clk.Add(time.Hour) // a clock whose dates are after the epoch
			var first atomic.Bool
			first.Store(true)
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if first.CompareAndSwap(true, false) {
					if h := tc.header(clk.Now()); h != "" {
						w.Header().Set("Retry-After", h)
					}
					w.WriteHeader(tc.code)
					return
				}
				_, _ = io.WriteString(w, "ok")
			})
			opts := append([]resilience.RetryOption{resilience.WithBackoff(resilience.Constant(7 * time.Second))}, tc.opts...)
			tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithClock(clk),
				resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0), resiliencehttp.WithRetry(opts...))
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := get(t, tr, srv.URL)
				done <- result{resp, err}
			}()
			wait := <-clk.waits
			assert.Equal(t, tc.want, wait)
			clk.Add(wait)
			res := <-done
			require.NoError(t, res.err)
			assert.Equal(t, "ok", readAll(t, res.resp))
			assert.Equal(t, int64(2), srv.requests.Load())
		})
	}
}

func TestTransportRetryAfterPastDeadline(t *testing.T) {
	// A Retry-After that would end past the request's deadline: no wait,
	// the last response at once.
	clk := newWaitClock()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "later")
	})
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithClock(clk),
		resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0))
	ctx, cancel := clk.Mock.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "later", readAll(t, resp))
	assert.Equal(t, int64(1), srv.requests.Load())
	assert.Empty(t, clk.waits, "no wait was begun")

	// The same under the transport's own call timeout, with the error.
	tr = resiliencehttp.NewTransport(base(t), resiliencehttp.WithClock(clk), resiliencehttp.WithStatusErrors(),
		resiliencehttp.WithTimeout(3*time.Second), resiliencehttp.WithAttemptTimeout(0))
	_, err = get(t, tr, srv.URL)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	var se *resiliencehttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 5*time.Second, se.RetryAfter())
	assert.Equal(t, 3*time.Second, <-clk.waits, "only the call's deadline was asked for")
	assert.Empty(t, clk.waits)
}

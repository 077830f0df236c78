package resiliencehttp_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

func TestTransportBulkheadHoldsUntilBodyDone(t *testing.T) {
	srv := newServer(t, statuses(200))
	bh := resilience.NewBulkhead(1)
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithGuards(bh), resiliencehttp.WithRetry(resilience.WithAttempts(1)))

	first, err := get(t, tr, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 1, bh.InFlight(), "the slot is held while the body is unread")
	_, err = get(t, tr, srv.URL)
	assert.ErrorIs(t, err, resilience.ErrBulkheadFull)
	assert.Equal(t, int64(1), srv.requests.Load())

	readAll(t, first)
	assert.Equal(t, 0, bh.InFlight(), "the slot is freed with the body")
	resp, err := get(t, tr, srv.URL)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, 0, bh.InFlight())
}

func TestTransportGuardOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		codes  []int
		status []int // the StatusError code each attempt's outcome carries, 0 for nil
	}{
		{"200", []int{200}, []int{0}},
		{"503 503 200", []int{503, 503, 200}, []int{503, 503, 0}},
		{"500 counts as a failure and is not retried", []int{500}, []int{500}},
		{"404 is a success", []int{404}, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(tc.codes...))
			g := &recordGuard{}
			tr := resiliencehttp.NewTransport(base(t), noWait, resiliencehttp.WithGuards(g))
			resp, err := get(t, tr, srv.URL)
			require.NoError(t, err)
			readAll(t, resp)
			told := g.told()
			require.Len(t, told, len(tc.status))
			for i, code := range tc.status {
				if code == 0 {
					assert.NoError(t, told[i], "attempt %d", i+1)
					continue
				}
				var se *resiliencehttp.StatusError
				require.ErrorAs(t, told[i], &se, "attempt %d", i+1)
				assert.Equal(t, code, se.StatusCode)
			}
		})
	}
}

func TestTransportHostGuards(t *testing.T) {
	// Each host gets a breaker of its own, made on its first call: a host
	// that fails is cut off, the others are not.
	bad := newServer(t, statuses(500))
	good := newServer(t, statuses(200))
	var made atomic.Int32
	tr := resiliencehttp.NewTransport(base(t),
		resiliencehttp.WithRetry(resilience.WithAttempts(1)),
		resiliencehttp.WithHostGuard(func(host string) resilience.Guard {
			made.Add(1)
			return resilience.NewBreaker(resilience.WithBreakerThreshold(1))
		}))

	resp, err := get(t, tr, bad.URL)
	require.NoError(t, err)
	assert.Equal(t, 500, resp.StatusCode)
	readAll(t, resp)
	_, err = get(t, tr, bad.URL)
	assert.ErrorIs(t, err, resilience.ErrBreakerOpen)
	_, hinted := resilience.RetryAfter(err)
	assert.True(t, hinted, "the refusal keeps its retry hint")
	assert.Equal(t, int64(1), bad.requests.Load())

	resp, err = get(t, tr, good.URL)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, int32(2), made.Load())
}

func TestTransportMaxHosts(t *testing.T) {
	a, b := newServer(t, statuses(200)), newServer(t, statuses(200))
	var made []string
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithMaxHosts(1),
		resiliencehttp.WithHostGuard(func(host string) resilience.Guard {
			made = append(made, host)
			return &recordGuard{}
		}))
	for _, url := range []string{a.URL, a.URL, b.URL, a.URL} {
		resp, err := get(t, tr, url)
		require.NoError(t, err)
		readAll(t, resp)
	}
	assert.Equal(t, []string{a.Listener.Addr().String(), b.Listener.Addr().String(), a.Listener.Addr().String()}, made)
}

// TestTransportMaxHostsKeepsOpenBreakers: with room for one host, a host
// whose breaker is open keeps it while other hosts are called (their
// requests go without host guards meanwhile), so the host that is down is
// not called again before its cool-down.
func TestTransportMaxHostsKeepsOpenBreakers(t *testing.T) {
	down, up := newServer(t, statuses(500)), newServer(t, statuses(200))
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithMaxHosts(1), resiliencehttp.WithRetry(resilience.WithAttempts(1)),
		resiliencehttp.WithHostGuard(func(string) resilience.Guard {
			return resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Hour))
		}))
	resp, err := get(t, tr, down.URL)
	require.NoError(t, err)
	readAll(t, resp)
	for range 3 {
		resp, err := get(t, tr, up.URL)
		require.NoError(t, err, "a call to another host is never refused")
		readAll(t, resp)
		_, err = get(t, tr, down.URL)
		require.ErrorIs(t, err, resilience.ErrBreakerOpen, "the open breaker is kept")
	}
	assert.Equal(t, int64(1), down.requests.Load())
	assert.Equal(t, int64(3), up.requests.Load())
}

func TestTransportRefusalsReleaseOuterGuards(t *testing.T) {
	outer := &recordGuard{}
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithRetry(resilience.WithAttempts(1)),
		resiliencehttp.WithGuards(outer, hintGuard(0)))
	_, err := get(t, tr, "http://127.0.0.1:1/")
	var refusal hintError
	assert.ErrorAs(t, err, &refusal)
	told := outer.told()
	require.Len(t, told, 1)
	assert.EqualError(t, told[0], "test: refused")
}

// TestTransportOpenBreaker: a request the host's open breaker refuses fails
// at once with the refusal, not retried. With resilience.WithWaitForBreaker
// the retry would wait for the breaker's hint (30s, cut to the retry's
// 10s), which ends past the request's deadline: it gives up at once too.
func TestTransportOpenBreaker(t *testing.T) {
	tests := []struct {
		name      string
		opts      []resiliencehttp.TransportOption
		wantRetry bool // the error matches ErrRetriesExhausted
	}{
		{"the refusal as it is", nil, false},
		{"WithWaitForBreaker: the hint past the deadline", []resiliencehttp.TransportOption{
			resiliencehttp.WithRetry(resilience.WithWaitForBreaker())}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := resilience.NewBreaker()
			br.Trip()
			opts := append([]resiliencehttp.TransportOption{resiliencehttp.WithGuards(br), resiliencehttp.WithTimeout(0)}, tc.opts...)
			tr := resiliencehttp.NewTransport(base(t), opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/", nil)
			require.NoError(t, err)
			_, err = tr.RoundTrip(req)
			assert.ErrorIs(t, err, resilience.ErrBreakerOpen)
			assert.Equal(t, tc.wantRetry, errors.Is(err, resilience.ErrRetriesExhausted), "RoundTrip(…) = %v, retries exhausted", err)
			d, ok := resilience.RetryAfter(err)
			assert.True(t, ok && d > 0, "RetryAfter(%v) = %v, %t: the breaker's hint reaches the caller", err, d, ok)
		})
	}
}

// TestTransportOneHostDown: five hosts on 127.0.0.1, one of them down
// (every answer a 500), called in turn 40 times each, through breakers that
// open at 10% of failures over their last 50 calls (10 at least), or at 5
// failures in a row (the default). With a
// breaker per host (WithHostGuard) no call to the four others is ever
// refused; with one breaker shared by every host (WithGuards), the down
// host's one call in five opens it for all five. The counts are the
// per-key guide's figures.
func TestTransportOneHostDown(t *testing.T) {
	newBreaker := func() *resilience.Breaker {
		return resilience.NewBreaker(resilience.WithBreakerFailureRate(0.1, 10, 50), resilience.WithBreakerCoolDown(time.Hour))
	}
	tests := []struct {
		name        string
		opt         resiliencehttp.TransportOption
		refusedUp   bool // some call to a host that is up is refused
		downReached int64
	}{
		{"a breaker per host", resiliencehttp.WithHostGuard(func(string) resilience.Guard { return newBreaker() }), false, 5},
		{"one breaker for every host", resiliencehttp.WithGuards(newBreaker()), true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			down := newServer(t, statuses(500))
			up := make([]*server, 4)
			for i := range up {
				up[i] = newServer(t, statuses(200))
			}
			tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithRetry(resilience.WithAttempts(1)), tc.opt)
			var refused, served int
			for range 40 {
				if resp, err := get(t, tr, down.URL); err == nil {
					readAll(t, resp)
				}
				for _, s := range up {
					resp, err := get(t, tr, s.URL)
					if errors.Is(err, resilience.ErrBreakerOpen) {
						refused++
						continue
					}
					require.NoError(t, err)
					readAll(t, resp)
					served++
				}
			}
			t.Logf("%s: the four hosts up: %d of 160 calls served, %d refused; the host down reached %d times of 40",
				tc.name, served, refused, down.requests.Load())
			assert.Equal(t, tc.refusedUp, refused > 0)
			assert.Equal(t, tc.downReached, down.requests.Load())
		})
	}
}

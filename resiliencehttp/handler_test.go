package resiliencehttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

func TestHandlerRefusals(t *testing.T) {
	full := resilience.NewBulkhead(1)
	require.True(t, full.TryAcquire())
	defer full.Release()
	open := resilience.NewBreaker(resilience.WithClock(clock.NewMock()))
	open.Trip()
	isolated := resilience.NewBreaker(resilience.WithClock(clock.NewMock()))
	isolated.Isolate()
	limited := resilience.NewRateLimiter(1, 1, resilience.WithClock(clock.NewMock()))
	require.True(t, limited.Allow())
	adaptive := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 1), resilience.WithAdaptiveInitial(1))
	held, err := adaptive.Enter(resilience.WithPriority(context.Background(), resilience.PriorityCritical))
	require.NoError(t, err)
	defer held(nil)

	tests := []struct {
		name       string
		guards     []resilience.Guard
		want       int
		retryAfter string
	}{
		{"admitted", []resilience.Guard{resilience.NewBulkhead(1)}, 200, ""},
		{"no guard", nil, 200, ""},
		{"bulkhead full", []resilience.Guard{full}, 503, ""},
		// The breaker's hint is its 30s cool-down and a millisecond of
		// margin: rounded up, so a client waiting that long finds it
		// half-open.
		{"breaker open", []resilience.Guard{open}, 503, "31"},
		{"a hint rounded up", []resilience.Guard{hintGuard(1500 * time.Millisecond)}, 503, "2"},
		{"a hint of zero is none", []resilience.Guard{hintGuard(0)}, 503, ""},
		// The largest hint, an isolated breaker's, gives the largest whole
		// number of seconds a time.Duration holds: never a negative number
		// (RFC 9110's delay-seconds is non-negative), and never one a
		// client overflows when it makes a Duration of it.
		{"an isolated breaker", []resilience.Guard{isolated}, 503, "9223372036"},
		{"the largest hint", []resilience.Guard{hintGuard(math.MaxInt64)}, 503, "9223372036"},
		{"a hint just under the largest, rounded up", []resilience.Guard{hintGuard(9223372035*time.Second + 1)}, 503, "9223372036"},
		{"rate limited: 429", []resilience.Guard{resiliencehttp.RefusalStatus(hintGuard(time.Second), http.StatusTooManyRequests)}, 429, "1"},
		{"a later guard refuses", []resilience.Guard{resilience.NewBulkhead(1), full}, 503, ""},
		{"a rate limiter", []resilience.Guard{limited}, 503, "1"},
		{"a rate limiter: 429", []resilience.Guard{resiliencehttp.RefusalStatus(limited, http.StatusTooManyRequests)}, 429, "1"},
		{"an adaptive limiter, its hint rounded up", []resilience.Guard{adaptive}, 503, "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var called atomic.Bool
			srv := newServer(t, resiliencehttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called.Store(true)
				_, _ = io.WriteString(w, "served")
			}), tc.guards...).ServeHTTP)
			resp, err := http.Get(srv.URL)
			require.NoError(t, err)
			body := readAll(t, resp)
			assert.Equal(t, tc.want, resp.StatusCode)
			assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
			assert.Equal(t, tc.want == 200, called.Load(), "next called")
			if tc.want != 200 {
				assert.Equal(t, http.StatusText(tc.want)+"\n", body)
			}
		})
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestHandlerOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		next   http.HandlerFunc
		status int // the StatusError code told to the guard, 0 for nil
	}{
		{"200", func(w http.ResponseWriter, r *http.Request) {}, 0},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, 0},
		{"500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, 500},
		{"503 after a 100 Continue", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusContinue)
			w.WriteHeader(503)
		}, 503},
		{"flushed 200", func(w http.ResponseWriter, r *http.Request) {
			require.NoError(t, http.NewResponseController(w).Flush())
			w.(http.Flusher).Flush()
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &recordGuard{}
			rec := httptest.NewRecorder()
			resiliencehttp.Handler(tc.next, g).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
			told := g.told()
			require.Len(t, told, 1)
			if tc.status == 0 {
				assert.NoError(t, told[0])
				return
			}
			var se *resiliencehttp.StatusError
			require.ErrorAs(t, told[0], &se)
			assert.Equal(t, tc.status, se.StatusCode)
			assert.Equal(t, "/x", se.URL)
		})
	}
}

func TestHandlerPanicFreesTheSlot(t *testing.T) {
	tests := []struct {
		name  string
		value any
	}{
		{"a panic", "boom"},
		{"an abort", http.ErrAbortHandler},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bh := resilience.NewBulkhead(1)
			g := &recordGuard{}
			var panicking atomic.Bool
			panicking.Store(true)
			srv := newServer(t, resiliencehttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if panicking.Load() {
					panic(tc.value)
				}
			}), g, bh).ServeHTTP)
			client := &http.Client{Transport: base(t)}
			_, err := client.Get(srv.URL)
			require.Error(t, err, "net/http drops the connection of a handler that panicked")
			assert.Equal(t, 0, bh.InFlight(), "the slot is free")
			told := g.told()
			require.Len(t, told, 1)
			var pe *resilience.PanicError
			require.ErrorAs(t, told[0], &pe)
			assert.Equal(t, tc.value, pe.Value)

			panicking.Store(false)
			resp, err := client.Get(srv.URL)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, 200, resp.StatusCode)
		})
	}
}

func TestHandlerGoexitFreesTheSlot(t *testing.T) {
	bh := resilience.NewBulkhead(1)
	g := &recordGuard{}
	h := resiliencehttp.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { runtime.Goexit() }), g, bh)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	<-done
	assert.Equal(t, 0, bh.InFlight())
	told := g.told()
	require.Len(t, told, 1)
	var pe *resilience.PanicError
	assert.ErrorAs(t, told[0], &pe)
}

func TestHandlerWaitEndsWithTheClient(t *testing.T) {
	// A bulkhead wait is asked with the request's context: a client that
	// goes away stops waiting.
	bh := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Hour))
	require.True(t, bh.TryAcquire())
	defer bh.Release()
	h := resiliencehttp.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), bh)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	assert.Equal(t, 503, rec.Code)
}

func TestRefusalStatusKeepsTheError(t *testing.T) {
	bh := resilience.NewBulkhead(1)
	require.True(t, bh.TryAcquire())
	defer bh.Release()
	_, err := resiliencehttp.RefusalStatus(bh, 429).Enter(context.Background())
	assert.ErrorIs(t, err, resilience.ErrBulkheadFull)
	assert.ErrorIs(t, err, resilience.ErrRefused)
	assert.Equal(t, resilience.ErrBulkheadFull.Error(), err.Error())
	assert.False(t, errors.Is(err, resilience.ErrBreakerOpen))
}

// TestHandlerLaterRefusalReleasesEarlierGuards: when a guard refuses, the
// guards before it, which admitted the request, are told the refusal, so
// that a bulkhead's slot is freed.
func TestHandlerLaterRefusalReleasesEarlierGuards(t *testing.T) {
	g := &recordGuard{}
	bh := resilience.NewBulkhead(1)
	var refuse atomic.Bool
	refuse.Store(true)
	srv := newServer(t, resiliencehttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "served")
	}), g, bh, guardFunc(func(ctx context.Context) (func(error), error) {
		if refuse.Load() {
			return nil, hintError(0)
		}
		return func(error) {}, nil
	})).ServeHTTP)
	client := &http.Client{Transport: base(t)}

	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Zero(t, bh.InFlight(), "the bulkhead's slot is free")
	told := g.told()
	require.Len(t, told, 1)
	assert.ErrorIs(t, told[0], hintError(0))

	refuse.Store(false)
	resp, err = client.Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "served", readAll(t, resp))
	assert.Zero(t, bh.InFlight())
}

// TestHandlerOutcomeIsWhatTheClientGot: the guards are told the status the
// client received: a 5xx written with a body, or flushed, is a failure,
// and a 200 a success even when next then asks for another status.
func TestHandlerOutcomeIsWhatTheClientGot(t *testing.T) {
	tests := []struct {
		name    string
		next    http.HandlerFunc
		status  int    // the status the client receives
		failure string // the error told to the guard, "" for nil
	}{
		{"503 with a body", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}, 503, "resiliencehttp: server answered 503 Service Unavailable"},
		{"503 flushed", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.(http.Flusher).Flush()
		}, 503, "resiliencehttp: server answered 503 Service Unavailable"},
		{"500 flushed through a ResponseController", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_ = http.NewResponseController(w).Flush()
		}, 500, "resiliencehttp: server answered 500 Internal Server Error"},
		{"200, then a 500 too late", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.WriteHeader(http.StatusInternalServerError) // net/http logs it and sends nothing
		}, 200, ""},
		{"a body, then a 500 too late", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "done")
			w.WriteHeader(http.StatusInternalServerError)
		}, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &recordGuard{}
			srv := newServer(t, resiliencehttp.Handler(tc.next, g).ServeHTTP)
			resp, err := (&http.Client{Transport: base(t)}).Get(srv.URL)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode, "the status the client got")
			told := g.told()
			require.Len(t, told, 1)
			if tc.failure == "" {
				assert.NoError(t, told[0])
				return
			}
			var se *resiliencehttp.StatusError
			require.ErrorAs(t, told[0], &se)
			assert.Equal(t, tc.status, se.StatusCode)
			assert.EqualError(t, told[0], tc.failure)
		})
	}
}

// TestRefusalStatusRange: RefusalStatus takes every 4xx and 5xx status and
// panics for any other, naming itself and the status.
func TestRefusalStatusRange(t *testing.T) {
	for _, status := range []int{400, 429, 503, 599} {
		assert.NotPanics(t, func() { resiliencehttp.RefusalStatus(resilience.NewBulkhead(1), status) }, "status %d", status)
	}
	for _, status := range []int{0, 200, 399, 600} {
		assert.PanicsWithValue(t,
			fmt.Sprintf("resiliencehttp: RefusalStatus: status must be a 4xx or 5xx status, got %d", status),
			func() { resiliencehttp.RefusalStatus(resilience.NewBulkhead(1), status) })
	}
}

// guardFunc adapts a function to resilience.Guard.
type guardFunc func(ctx context.Context) (func(error), error)

func (f guardFunc) Enter(ctx context.Context) (func(error), error) { return f(ctx) }

// TestHandlerClientLeft: when the client hangs up before the answer, the
// guards are told an error matching context.Canceled whatever next then
// answers, so that a breaker counts the request neither way: a call whose
// caller left is not a sample.
func TestHandlerClientLeft(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"nothing written (200)", func(http.ResponseWriter) {}},
		{"200 with a body", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "late") }},
		{"500", func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }},
		{"503 with a body", func(w http.ResponseWriter) { http.Error(w, "busy", http.StatusServiceUnavailable) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerFailureRate(0.5, 1, 10))
			told := make(chan error, 1)
			outermost := guardFunc(func(context.Context) (func(error), error) {
				return func(err error) { told <- err }, nil // told after the breaker
			})
			arrived := make(chan struct{})
			srv := newServer(t, resiliencehttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(arrived)
				<-r.Context().Done() // the client hung up
				tc.answer(w)
			}), outermost, br).ServeHTTP)

			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			errc := make(chan error, 1)
			go func() {
				resp, err := (&http.Client{Transport: base(t)}).Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			<-arrived
			cancel()
			assert.ErrorIs(t, <-errc, context.Canceled, "the client's error")

			outcome := <-told
			assert.ErrorIs(t, outcome, context.Canceled, "the outcome told to the guards")
			var se *resiliencehttp.StatusError
			assert.False(t, errors.As(outcome, &se), "the outcome %v is a status", outcome)
			m := br.Snapshot()
			assert.Equal(t, resilience.BreakerClosed, m.State)
			assert.Zero(t, m.WindowCalls, "outcomes the breaker counted")
		})
	}
}

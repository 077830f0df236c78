package resiliencehttp_test

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// body is what ok answers.
const okBody = "hello, world: a body of 29 b."

// ok answers 200 with okBody.
func ok(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, okBody)
}

// outcome is what a test saw of one request: the status and body read, or
// the error of the round trip or of reading the body.
type outcome struct {
	status int
	body   string
	err    error
}

// fetch sends a GET to url through rt and reads the whole body.
func fetch(t *testing.T, rt http.RoundTripper, url string) outcome {
	t.Helper()
	resp, err := get(t, rt, url)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return outcome{status: resp.StatusCode, body: string(b), err: err}
}

// noKeepAlive is a base transport that opens a connection per request, so
// that net/http's client does not resend a request whose connection broke
// (it does that only on a connection it used before).
func noKeepAlive(t *testing.T) *http.Transport {
	tr := base(t)
	tr.DisableKeepAlives = true
	return tr
}

// TestChaosInjects: every second request gets the fault, on the client
// side (ChaosTransport) and on the server side (ChaosHandler), against a
// real server; the others go through untouched; each injection is
// reported as the core's chaos policies report theirs.
func TestChaosInjects(t *testing.T) {
	tests := []struct {
		name      string
		chaos     resiliencehttp.Chaos
		component string
		check     func(t *testing.T, o outcome)
		sent      bool // the client side sends an injected request
	}{
		{"status", resiliencehttp.ChaosStatus(503, "chaos says no"), "chaos-fault", func(t *testing.T, o outcome) {
			require.NoError(t, o.err)
			assert.Equal(t, 503, o.status)
			assert.Equal(t, "chaos says no", o.body)
		}, false},
		{"drop", resiliencehttp.ChaosDrop(), "chaos-fault", func(t *testing.T, o outcome) {
			require.Error(t, o.err)
			assert.True(t, resiliencehttp.Retryable(nil, o.err), "Retryable(%v)", o.err)
		}, false},
		{"truncate", resiliencehttp.ChaosTruncate(10), "chaos-fault", func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, io.ErrUnexpectedEOF)
			assert.Equal(t, 200, o.status)
			assert.Equal(t, okBody[:10], o.body)
		}, true},
		{"truncate beyond the body", resiliencehttp.ChaosTruncate(100), "chaos-fault", func(t *testing.T, o outcome) {
			assert.ErrorIs(t, o.err, io.ErrUnexpectedEOF)
			assert.Equal(t, okBody, o.body)
		}, true},
		{"latency 0", resiliencehttp.ChaosLatency(0), "chaos-latency", func(t *testing.T, o outcome) {
			require.NoError(t, o.err)
			assert.Equal(t, okBody, o.body)
		}, true},
	}
	for _, tc := range tests {
		t.Run("client/"+tc.name, func(t *testing.T) {
			srv := newServer(t, ok)
			rec := &recorder{}
			rt := resiliencehttp.NewChaosTransport(base(t), tc.chaos, resilience.WithChaosEvery(2),
				resilience.WithObserver(rec), resilience.WithName("client-chaos"))
			for i := range 4 {
				o := fetch(t, rt, srv.URL)
				if i%2 == 0 {
					require.NoError(t, o.err, "request %d", i)
					assert.Equal(t, okBody, o.body, "request %d", i)
					continue
				}
				tc.check(t, o)
			}
			want := int64(2)
			if tc.sent {
				want = 4
			}
			assert.Equal(t, want, srv.requests.Load(), "requests the server saw")
			es := rec.all()
			require.Len(t, es, 2)
			for _, e := range es {
				assert.Equal(t, resilience.EventChaos, e.Kind)
				assert.Equal(t, tc.component, e.Component)
				assert.Equal(t, "client-chaos", e.Name)
			}
		})
		t.Run("server/"+tc.name, func(t *testing.T) {
			rec := &recorder{}
			var served int
			srv := newServer(t, resiliencehttp.ChaosHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served++
				ok(w, r)
			}), tc.chaos, resilience.WithChaosEvery(2), resilience.WithObserver(rec)).ServeHTTP)
			rt := noKeepAlive(t)
			for i := range 4 {
				o := fetch(t, rt, srv.URL)
				if i%2 == 0 {
					require.NoError(t, o.err, "request %d", i)
					assert.Equal(t, okBody, o.body, "request %d", i)
					continue
				}
				tc.check(t, o)
			}
			assert.Len(t, rec.all(), 2, "events")
			want := 2
			if tc.sent {
				want = 4
			}
			assert.Equal(t, want, served, "requests the handler served")
		})
	}
}

// TestChaosDropIsAReset: the client side's dropped connection matches
// syscall.ECONNRESET and says it is chaos.
func TestChaosDropIsAReset(t *testing.T) {
	closed := &closeRecorder{Reader: strings.NewReader("body")}
	rt := resiliencehttp.NewChaosTransport(unreachable{}, resiliencehttp.ChaosDrop())
	req := httptest.NewRequest(http.MethodPost, "http://example.com/", closed)
	resp, err := rt.RoundTrip(req)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Equal(t, "resiliencehttp: chaos: connection reset", err.Error())
	assert.True(t, closed.closed, "the request's body is closed")
}

// unreachable is a base transport that fails the test if it is used.
type unreachable struct{}

func (unreachable) RoundTrip(*http.Request) (*http.Response, error) {
	panic("the base transport was called")
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

// TestChaosLatency: an injected latency waits on the given clock before
// the request goes on, on either side, and a request whose context ends
// meanwhile stops waiting and goes no further.
func TestChaosLatency(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		for _, cancel := range []bool{false, true} {
			name := side + "/waits"
			if cancel {
				name = side + "/cancelled"
			}
			t.Run(name, func(t *testing.T) {
				clk := newWaitClock()
				rec := &recorder{}
				opts := []resilience.ChaosOption{resilience.WithClock(clk), resilience.WithObserver(rec)}
				served := make(chan struct{}, 1)
				app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					served <- struct{}{}
					ok(w, r)
				})
				rt := http.RoundTripper(base(t))
				var srv *server
				if side == "client" {
					srv = newServer(t, app)
					rt = resiliencehttp.NewChaosTransport(rt, resiliencehttp.ChaosLatency(time.Minute), opts...)
				} else {
					srv = newServer(t, resiliencehttp.ChaosMiddleware(resiliencehttp.ChaosLatency(time.Minute), opts...)(app).ServeHTTP)
				}
				ctx, stop := context.WithCancel(context.Background())
				defer stop()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				errc := make(chan error, 1)
				go func() {
					resp, err := rt.RoundTrip(req)
					if err == nil {
						_, err = io.ReadAll(resp.Body)
						_ = resp.Body.Close()
					}
					errc <- err
				}()
				assert.Equal(t, time.Minute, <-clk.waits, "the wait asked of the clock")
				if cancel {
					stop()
					assert.ErrorIs(t, <-errc, context.Canceled)
					if side == "server" {
						// The server notices the client has gone when it
						// reads the closed connection; its handler ends
						// without calling the application.
						srv.Close()
					}
					assert.Empty(t, served, "the application was called")
				} else {
					clk.Add(time.Minute)
					require.NoError(t, <-errc)
					assert.Len(t, served, 1, "the application was called")
				}
				es := rec.all()
				require.Len(t, es, 1)
				assert.Equal(t, resilience.EventChaos, es[0].Kind)
				assert.Equal(t, "chaos-latency", es[0].Component)
				assert.Equal(t, time.Minute, es[0].Wait)
			})
		}
	}
}

// TestChaosHealedByTransport: the faults a ChaosTransport injects into
// every second attempt, or a ChaosHandler into every second request it
// serves, are healed by a Transport's retry: every call gets its answer.
func TestChaosHealedByTransport(t *testing.T) {
	faults := []struct {
		name  string
		chaos resiliencehttp.Chaos
	}{
		{"503", resiliencehttp.ChaosStatus(503, "unavailable")},
		{"429", resiliencehttp.ChaosStatus(429, "too many")},
		{"drop", resiliencehttp.ChaosDrop()},
	}
	for _, f := range faults {
		t.Run("client/"+f.name, func(t *testing.T) {
			srv := newServer(t, ok)
			rec := &recorder{}
			rt := resiliencehttp.NewTransport(
				resiliencehttp.NewChaosTransport(base(t), f.chaos, resilience.WithChaosEvery(2), resilience.WithObserver(rec)),
				noWait)
			for i := range 10 {
				o := fetch(t, rt, srv.URL)
				require.NoError(t, o.err, "call %d", i)
				assert.Equal(t, okBody, o.body, "call %d", i)
			}
			// Every second attempt: each call after the first has one
			// attempt injected into and one answered.
			assert.Len(t, rec.all(), 9, "faults injected")
		})
		t.Run("server/"+f.name, func(t *testing.T) {
			rec := &recorder{}
			srv := newServer(t, resiliencehttp.ChaosHandler(http.HandlerFunc(ok), f.chaos,
				resilience.WithChaosEvery(2), resilience.WithObserver(rec)).ServeHTTP)
			rt := resiliencehttp.NewTransport(noKeepAlive(t), noWait)
			for i := range 10 {
				o := fetch(t, rt, srv.URL)
				require.NoError(t, o.err, "call %d", i)
				assert.Equal(t, okBody, o.body, "call %d", i)
			}
			// Every second attempt: each call after the first has one
			// attempt injected into and one answered.
			assert.Len(t, rec.all(), 9, "faults injected")
		})
	}
}

// TestChaosLatencyHealedByAttemptTimeout: an attempt held by an injected
// latency is cut by the Transport's attempt timeout and retried, and the
// retry gets the answer.
func TestChaosLatencyHealedByAttemptTimeout(t *testing.T) {
	srv := newServer(t, ok)
	clk := newWaitClock()
	rt := resiliencehttp.NewTransport(
		resiliencehttp.NewChaosTransport(base(t), resiliencehttp.ChaosLatency(time.Minute),
			resilience.WithChaosEvery(2), resilience.WithClock(clk)),
		resiliencehttp.WithClock(clk), resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(time.Second),
		resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(time.Millisecond)), resilience.WithoutBudget()))
	// Call 1: its one attempt is not delayed.
	errc := make(chan outcome, 1)
	go func() { errc <- fetch(t, rt, srv.URL) }()
	assert.Equal(t, time.Second, <-clk.waits, "attempt 1's timeout")
	o := <-errc
	require.NoError(t, o.err)
	// Call 2: its first attempt is delayed, cut after 1s and retried.
	go func() { errc <- fetch(t, rt, srv.URL) }()
	assert.Equal(t, time.Second, <-clk.waits, "attempt 1's timeout")
	assert.Equal(t, time.Minute, <-clk.waits, "the injected latency")
	clk.Add(time.Second)
	assert.Equal(t, time.Millisecond, <-clk.waits, "the retry's wait")
	clk.Add(time.Millisecond)
	assert.Equal(t, time.Second, <-clk.waits, "attempt 2's timeout")
	o = <-errc
	require.NoError(t, o.err)
	assert.Equal(t, okBody, o.body)
	assert.Equal(t, int64(2), srv.requests.Load())
}

// TestChaosTruncateHealedByRetry: a body cut short fails after the
// Transport has returned its response, so only a retry around the whole
// exchange, reading the body included, heals it; Retryable retries
// io.ErrUnexpectedEOF.
func TestChaosTruncateHealedByRetry(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		t.Run(side, func(t *testing.T) {
			var rt http.RoundTripper
			var srv *server
			if side == "client" {
				srv = newServer(t, ok)
				rt = resiliencehttp.NewTransport(resiliencehttp.NewChaosTransport(base(t), resiliencehttp.ChaosTruncate(5), resilience.WithChaosEvery(2)), noWait)
			} else {
				srv = newServer(t, resiliencehttp.ChaosHandler(http.HandlerFunc(ok), resiliencehttp.ChaosTruncate(5), resilience.WithChaosEvery(2)).ServeHTTP)
				rt = resiliencehttp.NewTransport(base(t), noWait)
			}
			client := &http.Client{Transport: rt}
			retry := resilience.Retry[string](resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget(),
				resilience.WithRetryIf(func(err error) bool { return resiliencehttp.Retryable(nil, err) }))
			for i := range 6 {
				body, err := resilience.Do(context.Background(), retry, func(ctx context.Context) (string, error) {
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
					if err != nil {
						return "", resilience.Permanent(err)
					}
					resp, err := client.Do(req)
					if err != nil {
						return "", err
					}
					defer resp.Body.Close()
					b, err := io.ReadAll(resp.Body)
					return string(b), err
				})
				require.NoError(t, err, "call %d", i)
				assert.Equal(t, okBody, body, "call %d", i)
			}
			// Every second request is cut: each call after the first is
			// cut once and retried.
			assert.Equal(t, int64(11), srv.requests.Load(), "requests for 6 calls")
		})
	}
}

// TestChaosServerTruncate: a handler that declares its length keeps it
// when it is larger than what is sent, a handler that writes nothing still
// gets a body cut short, and a length that cannot grow past the cut is
// declared as the largest there is.
func TestChaosServerTruncate(t *testing.T) {
	tests := []struct {
		name     string
		app      http.HandlerFunc
		n        int64
		wantLen  int64
		wantBody string
	}{
		{"declared length kept", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "29")
			_, _ = io.WriteString(w, okBody)
		}, 4, 29, okBody[:4]},
		{"declared length too short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2")
			_, _ = io.WriteString(w, okBody[:2])
		}, 4, 5, okBody[:2]},
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {}, 4, 5, ""},
		{"flushed in parts", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusOK) // ignored, as net/http ignores it
			_, _ = io.WriteString(w, okBody[:3])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, okBody[3:])
		}, 4, 5, okBody[:4]},
		{"flushed before writing", func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, okBody)
		}, 0, 1, ""},
		{"a length that cannot grow", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, okBody)
		}, math.MaxInt64, math.MaxInt64, okBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, resiliencehttp.ChaosHandler(tc.app, resiliencehttp.ChaosTruncate(tc.n)).ServeHTTP)
			resp, err := get(t, base(t), srv.URL)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.wantLen, resp.ContentLength)
			b, err := io.ReadAll(resp.Body)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Equal(t, tc.wantBody, string(b))
		})
	}
}

// TestChaosServerInformational: an informational header the handler sends
// goes through a truncating writer as it is.
func TestChaosServerInformational(t *testing.T) {
	srv := newServer(t, resiliencehttp.ChaosHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		_, _ = io.WriteString(w, okBody)
	}), resiliencehttp.ChaosTruncate(3)).ServeHTTP)
	resp, err := get(t, base(t), srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, okBody[:3], string(b))
}

// TestChaosEnabledByContext: WithChaosEnabled sees the request's context,
// on both sides; a disabled request goes through untouched.
func TestChaosEnabledByContext(t *testing.T) {
	type key struct{}
	enabled := resilience.WithChaosEnabled(func(ctx context.Context) bool { return ctx.Value(key{}) != nil })
	srv := newServer(t, ok)
	rt := resiliencehttp.NewChaosTransport(base(t), resiliencehttp.ChaosStatus(500, "chaos"), enabled)
	for _, on := range []bool{false, true} {
		ctx := context.Background()
		if on {
			ctx = context.WithValue(ctx, key{}, true)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		want := map[bool]int{false: 200, true: 500}[on]
		assert.Equal(t, want, resp.StatusCode, "enabled: %t", on)
		assert.Equal(t, req, resp.Request)
		readAll(t, resp)
	}
}

// TestChaosTransportPassesErrors: the base transport's error reaches the
// caller, injected into or not, and CloseIdleConnections reaches the base.
func TestChaosTransportPassesErrors(t *testing.T) {
	errBase := errors.New("base failed")
	fake := &fakeTransport{err: errBase}
	for _, c := range []resiliencehttp.Chaos{resiliencehttp.ChaosTruncate(1), resiliencehttp.ChaosStatus(503, "")} {
		rt := resiliencehttp.NewChaosTransport(fake, c, resilience.WithChaosRate(0))
		_, err := get(t, rt, "http://example.com/")
		assert.ErrorIs(t, err, errBase)
		rt = resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosTruncate(1))
		_, err = get(t, rt, "http://example.com/")
		assert.ErrorIs(t, err, errBase)
	}
	rt := resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosDrop())
	rt.CloseIdleConnections()
	assert.Equal(t, 1, fake.closedIdle)
	resiliencehttp.NewChaosTransport(unreachable{}, resiliencehttp.ChaosDrop()).CloseIdleConnections() // no such method: nothing
	assert.NotNil(t, resiliencehttp.NewChaosTransport(nil, resiliencehttp.ChaosDrop()), "a nil base is http.DefaultTransport")
}

// fakeTransport answers every request with resp or err, in memory.
type fakeTransport struct {
	resp       *http.Response
	err        error
	closedIdle int
}

func (f *fakeTransport) RoundTrip(*http.Request) (*http.Response, error) { return f.resp, f.err }
func (f *fakeTransport) CloseIdleConnections()                           { f.closedIdle++ }

// TestChaosRefused: bad values panic at construction, naming the function,
// the option and the value.
func TestChaosRefused(t *testing.T) {
	app := http.HandlerFunc(ok)
	drop := resiliencehttp.ChaosDrop()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"status too low", func() { resiliencehttp.ChaosStatus(199, "") }, "resiliencehttp: ChaosStatus: status must be in [200, 599], got 199"},
		{"status too high", func() { resiliencehttp.ChaosStatus(600, "") }, "resiliencehttp: ChaosStatus: status must be in [200, 599], got 600"},
		{"negative latency", func() { resiliencehttp.ChaosLatency(-time.Second) }, "resiliencehttp: ChaosLatency: latency must not be negative, got -1s"},
		{"negative length", func() { resiliencehttp.ChaosTruncate(-1) }, "resiliencehttp: ChaosTruncate: length must not be negative, got -1"},
		{"zero chaos", func() { resiliencehttp.NewChaosTransport(nil, resiliencehttp.Chaos{}) },
			"resiliencehttp: NewChaosTransport: chaos is the zero Chaos (make one with ChaosStatus, ChaosLatency, ChaosDrop or ChaosTruncate)"},
		{"nil option", func() { resiliencehttp.NewChaosTransport(nil, drop, nil) }, "resiliencehttp: NewChaosTransport: option 0 is nil"},
		{"two triggers", func() {
			resiliencehttp.ChaosHandler(app, drop, resilience.WithChaosEvery(2), resilience.WithChaosRate(0.5))
		}, "resiliencehttp: ChaosHandler: WithChaosEvery(2) and WithChaosRate(0.5) both decide which calls to inject into; give one"},
		{"two triggers, latency", func() {
			resiliencehttp.ChaosMiddleware(resiliencehttp.ChaosLatency(time.Second), resilience.WithChaosRate(0.5), resilience.WithChaosEvery(3))
		}, "resiliencehttp: ChaosMiddleware: WithChaosEvery(3) and WithChaosRate(0.5) both decide which calls to inject into; give one"},
		{"zero option", func() { resiliencehttp.ChaosMiddleware(drop, resilience.Option{}) },
			"resiliencehttp: ChaosMiddleware: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
		{"nil next", func() { resiliencehttp.ChaosHandler(nil, drop) }, "resiliencehttp: ChaosHandler: next is nil"},
		{"nil next, middleware", func() { resiliencehttp.ChaosMiddleware(drop)(nil) }, "resiliencehttp: ChaosMiddleware: next is nil"},
		{"a rate out of range", func() { resiliencehttp.NewChaosTransport(nil, drop, resilience.WithChaosRate(2)) },
			"resilience: WithChaosRate: rate must be in [0, 1], got 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestChaosStatusEdges: ChaosStatus takes every status from 200 to 599,
// the edges too, and the client transport answers with it.
func TestChaosStatusEdges(t *testing.T) {
	for _, code := range []int{200, 599} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			fake := &fakeTransport{resp: &http.Response{StatusCode: 204, Body: http.NoBody}}
			rt := resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosStatus(code, "edge"))
			resp, err := rt.RoundTrip(httptest.NewRequest(http.MethodGet, "http://example.com/", nil))
			require.NoError(t, err)
			assert.Equal(t, code, resp.StatusCode)
			assert.Equal(t, "edge", readAll(t, resp))
		})
	}
}

// TestChaosDisabledAllocatesNothing: a chaos transport or handler that a
// predicate or a rate of 0 turns off allocates nothing.
func TestChaosDisabledAllocatesNothing(t *testing.T) {
	off := resilience.WithChaosEnabled(func(context.Context) bool { return false })
	req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	fake := &fakeTransport{resp: &http.Response{StatusCode: 200, Body: http.NoBody}}
	w := httptest.NewRecorder()
	for _, opt := range []resilience.ChaosOption{off, resilience.WithChaosRate(0)} {
		for _, c := range []resiliencehttp.Chaos{resiliencehttp.ChaosStatus(503, ""), resiliencehttp.ChaosLatency(time.Second)} {
			rt := resiliencehttp.NewChaosTransport(fake, c, opt)
			allocs := testing.AllocsPerRun(100, func() { _, _ = rt.RoundTrip(req) })
			assert.Zero(t, allocs, "RoundTrip")
			h := resiliencehttp.ChaosHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), c, opt)
			allocs = testing.AllocsPerRun(100, func() { h.ServeHTTP(w, req) })
			assert.Zero(t, allocs, "ServeHTTP")
		}
	}
}

// BenchmarkChaosTransport: a disabled chaos transport beside the bare
// transport under it, in memory.
func BenchmarkChaosTransport(b *testing.B) {
	req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	fake := &fakeTransport{resp: &http.Response{StatusCode: 200, Body: http.NoBody}}
	off := resilience.WithChaosEnabled(func(context.Context) bool { return false })
	rows := []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", fake},
		{"status-predicate-off", resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosStatus(503, ""), off)},
		{"status-rate-0", resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosStatus(503, ""), resilience.WithChaosRate(0))},
		{"latency-predicate-off", resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosLatency(time.Second), off)},
		{"status-injected", resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosStatus(503, ""))},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = r.rt.RoundTrip(req)
			}
		})
	}
}

// TestChaosSeeded: with a seeded source, the same requests are injected
// into on every run, about as many as the rate says.
func TestChaosSeeded(t *testing.T) {
	fake := &fakeTransport{resp: &http.Response{StatusCode: 200, Body: http.NoBody}}
	pattern := func() string {
		rt := resiliencehttp.NewChaosTransport(fake, resiliencehttp.ChaosStatus(503, ""),
			resilience.WithChaosRate(0.2), resilience.WithRand(rand.New(rand.NewPCG(1, 2))))
		var b strings.Builder
		for range 200 {
			resp, err := get(t, rt, "http://example.com/")
			require.NoError(t, err)
			b.WriteByte(map[int]byte{200: '.', 503: 'x'}[resp.StatusCode])
		}
		return b.String()
	}
	first := pattern()
	assert.Equal(t, first, pattern(), "the second run")
	injected := strings.Count(first, "x")
	assert.Equal(t, 35, injected, "injected at a rate of 0.2, PCG(1, 2): %s", first)
}

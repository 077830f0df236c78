package resiliencehttp_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// server is a loopback test server that counts requests and TCP
// connections.
type server struct {
	*httptest.Server
	requests atomic.Int64
	conns    atomic.Int64
}

// newServer starts h on 127.0.0.1 and closes it when the test ends.
func newServer(t testing.TB, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // panics the tests provoke
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// statuses answers the i-th request with codes[i % len(codes)] and a body
// naming it.
func statuses(codes ...int) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		code := codes[int(n.Add(1)-1)%len(codes)]
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "status "+strconv.Itoa(code))
	}
}

// hang answers only when the client goes away.
func hang(arrived chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}
}

// base returns a fresh http.Transport whose idle connections are closed
// when the test ends, so no goroutine of it outlives the test.
func base(t testing.TB) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// noWait makes retries immediate and unthrottled: the scripted servers
// fail most calls on purpose, which the default retry throttle would soon
// stop retrying (TestTransportThrottledByDefault shows that).
var noWait = resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget())

// get sends a GET to url through rt.
func get(t testing.TB, rt http.RoundTripper, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

// readAll reads and closes resp's body.
func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return string(b)
}

// waitClock is a mock clock that reports every deadline it is asked for,
// as the wait from now, so a test knows what a retry waits for and when
// to move the clock.
type waitClock struct {
	*clock.Mock
	waits chan time.Duration
}

func newWaitClock() *waitClock {
	return &waitClock{Mock: clock.NewMock(), waits: make(chan time.Duration, 16)}
}

func (c *waitClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := c.Mock.WithDeadline(parent, d)
	c.waits <- d.Sub(c.Mock.Now())
	return ctx, cancel
}

// recorder is the tests' observer: it keeps every event it is told of, in
// order. It is safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	events []resilience.Event
}

func (r *recorder) Observe(_ context.Context, e resilience.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// all returns the events so far.
func (r *recorder) all() []resilience.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]resilience.Event(nil), r.events...)
}

// ctxRecorder is a base transport that records the context of each
// request it sends.
type ctxRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	ctxs []context.Context
}

func (r *ctxRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.ctxs = append(r.ctxs, req.Context())
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

func (r *ctxRecorder) last() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctxs[len(r.ctxs)-1]
}

// hintGuard refuses every call with a retry hint.
type hintGuard time.Duration

func (g hintGuard) Enter(context.Context) (func(error), error) { return nil, hintError(g) }

type hintError time.Duration

func (e hintError) Error() string             { return "test: refused" }
func (e hintError) RetryAfter() time.Duration { return time.Duration(e) }

// recordGuard admits every call and records the outcomes it is told.
type recordGuard struct {
	mu       sync.Mutex
	admitted int
	outcomes []error
}

func (g *recordGuard) Enter(context.Context) (func(error), error) {
	g.mu.Lock()
	g.admitted++
	g.mu.Unlock()
	return func(err error) {
		g.mu.Lock()
		g.outcomes = append(g.outcomes, err)
		g.mu.Unlock()
	}, nil
}

func (g *recordGuard) told() []error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]error(nil), g.outcomes...)
}

package resiliencehttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/faf87a20/resilience"
)

// Handler returns a handler that sheds load in front of next: each request
// asks guards, in order, to admit it (any resilience.Guard), and a refused
// request is answered at once, without calling next, with 503 Service
// Unavailable or the status [RefusalStatus] gave that guard, and a
// Retry-After header of the refusal's retry hint in seconds, rounded up and
// saturated (an isolated breaker's gives 9223372036).
//
// Each guard that admitted a request is told its outcome when next
// returns: nil, or a *[StatusError] for a 5xx answer, or, when the client
// went away first (the request's context was cancelled), an error matching
// context.Canceled whatever next answered, which a breaker, an adaptive
// limiter or a throttler counts neither way; when one guard refuses, those
// before it are told the refusal. A panic in next frees
// what the guards hold (they receive a *resilience.PanicError) and goes on
// for net/http. The guards are asked with the request's context; the
// writer next receives unwraps to the server's (http.ResponseController).
// Handler panics if next or a guard is nil. See the package doc for more.
func Handler(next http.Handler, guards ...resilience.Guard) http.Handler {
	if next == nil {
		panic("resiliencehttp: Handler: next is nil")
	}
	for i, g := range guards {
		if g == nil {
			panic(fmt.Sprintf("resiliencehttp: Handler: guard %d is nil", i))
		}
	}
	h := &handler{next: next, guards: append([]resilience.Guard(nil), guards...)}
	for _, g := range guards {
		h.keyed = h.keyed || keysByRequest(g)
	}
	return h
}

// Middleware is [Handler] in the form routers take (net/http's patterns,
// chi, alice): Middleware(guards...)(next) is Handler(next, guards...). It
// panics if a guard is nil.
func Middleware(guards ...resilience.Guard) func(http.Handler) http.Handler {
	for i, g := range guards {
		if g == nil {
			panic(fmt.Sprintf("resiliencehttp: Middleware: guard %d is nil", i))
		}
	}
	return func(next http.Handler) http.Handler { return Handler(next, guards...) }
}

type handler struct {
	next   http.Handler
	guards []resilience.Guard
	keyed  bool // a guard keys its decisions by the request (see PerKey)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var buf [4]func(error)
	dones := buf[:0]
	ctx := r.Context()
	if h.keyed {
		ctx = context.WithValue(ctx, requestKey{}, r)
	}
	for _, g := range h.guards {
		done, err := g.Enter(ctx)
		if err != nil {
			lease{dones: dones}.end(err)
			refuse(w, err)
			return
		}
		dones = append(dones, done)
	}
	if len(dones) == 0 {
		h.next.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	finished := false
	defer func() {
		if finished {
			return
		}
		v := recover()
		pe := &resilience.PanicError{Value: v, Stack: debug.Stack()}
		if v == nil {
			pe.Value = errGoexit // recover returns nil only under runtime.Goexit
		}
		lease{dones: dones}.end(pe)
		if v != nil {
			panic(v)
		}
	}()
	h.next.ServeHTTP(sw, r)
	finished = true
	lease{dones: dones}.end(outcome(r, sw.status))
}

// outcome is what the guards are told of a request next answered with
// status: errClientLeft when the client went away first, whatever next
// answered; a *StatusError for a 5xx; nil otherwise.
func outcome(r *http.Request, status int) error {
	switch {
	case r.Context().Err() == context.Canceled:
		return errClientLeft
	case status >= 500:
		return &StatusError{Method: methodOf(r), URL: r.URL.Redacted(), StatusCode: status}
	}
	return nil
}

// errClientLeft is the outcome of a request whose client went away before
// the answer (net/http cancels the request's context): it matches
// context.Canceled, which the guards that judge outcomes count neither way,
// for a call whose caller left says nothing of the server's health.
var errClientLeft = fmt.Errorf("resiliencehttp: the client went away before the answer: %w", context.Canceled)

var errGoexit = errors.New("resiliencehttp: handler called runtime.Goexit")

// refuse answers a request a guard refused.
func refuse(w http.ResponseWriter, err error) {
	status := http.StatusServiceUnavailable
	var rs *refusal
	if errors.As(err, &rs) {
		status = rs.status
	}
	if d, ok := resilience.RetryAfter(err); ok {
		w.Header().Set("Retry-After", strconv.FormatInt(secondsUp(d), 10))
	}
	http.Error(w, http.StatusText(status), status)
}

// secondsUp returns d, which is positive, in whole seconds rounded up, at
// most maxSeconds. It divides before rounding: adding a second's margin
// first wraps the largest hint (an isolated breaker's, math.MaxInt64) to a
// negative number. The cap is the largest number of seconds a
// time.Duration holds, so that a client that multiplies the header by
// time.Second, as many do, cannot overflow either.
func secondsUp(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 && s < maxSeconds {
		s++
	}
	return s
}

// maxSeconds is the largest number of whole seconds in a time.Duration.
const maxSeconds = int64(math.MaxInt64 / time.Second)

// RefusalStatus returns g with its refusals answered by [Handler] with
// status instead of 503: RefusalStatus(limiter, http.StatusTooManyRequests)
// for a rate limiter whose refusals mean "this client asks too much". The
// guard's refusal errors are wrapped, matching what they matched before;
// admitted calls are g's own. It panics if g is nil or status is not a 4xx
// or 5xx status.
func RefusalStatus(g resilience.Guard, status int) resilience.Guard {
	if g == nil {
		panic("resiliencehttp: RefusalStatus: guard is nil")
	}
	if status < 400 || status > 599 {
		panic(fmt.Sprintf("resiliencehttp: RefusalStatus: status must be a 4xx or 5xx status, got %d", status))
	}
	return &statusGuard{g: g, status: status}
}

type statusGuard struct {
	g      resilience.Guard
	status int
}

func (s *statusGuard) Enter(ctx context.Context) (func(error), error) {
	done, err := s.g.Enter(ctx)
	if err != nil {
		return nil, &refusal{err: err, status: s.status}
	}
	return done, nil
}

// refusal is a guard's refusal with the status to answer it with.
type refusal struct {
	err    error
	status int
}

func (e *refusal) Error() string { return e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

// statusWriter records the status next answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the server's writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends what was written so far, if the server's writer can.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over, if the server's writer can.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

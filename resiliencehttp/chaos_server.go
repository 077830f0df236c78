package resiliencehttp

import (
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/faf87a20/resilience"
)

// ChaosHandler returns a handler that injects c into some of the requests
// it serves, before or instead of next, to prove what the clients of a
// server do when it misbehaves (or, put inside a [Handler], what its
// guards do). Which requests, and the events it reports, are as for
// [NewChaosTransport]; the predicate of resilience.WithChaosEnabled
// receives the request's context. It panics if next is nil, c is the zero
// Chaos or an option is nil or invalid.
func ChaosHandler(next http.Handler, c Chaos, opts ...resilience.ChaosOption) http.Handler {
	if next == nil {
		panic("resiliencehttp: ChaosHandler: next is nil")
	}
	return &chaosHandler{next: next, ch: newChaos("ChaosHandler", c, opts)}
}

// ChaosMiddleware is [ChaosHandler] in the form routers take:
// ChaosMiddleware(c, opts...)(next) acts as ChaosHandler(next, c,
// opts...), but the handlers it wraps share one decision of which requests
// to inject into (resilience.WithChaosEvery counts their requests
// together). It panics if c is the zero Chaos or an option
// is nil or invalid; the function it returns panics if next is nil.
func ChaosMiddleware(c Chaos, opts ...resilience.ChaosOption) func(http.Handler) http.Handler {
	ch := newChaos("ChaosMiddleware", c, opts)
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("resiliencehttp: ChaosMiddleware: next is nil")
		}
		return &chaosHandler{next: next, ch: ch}
	}
}

type chaosHandler struct {
	next http.Handler
	ch   chaos
}

func (h *chaosHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	injected, err := h.ch.inject(r.Context())
	if err != nil {
		return // the client has gone
	}
	if !injected {
		h.next.ServeHTTP(w, r)
		return
	}
	switch h.ch.c.kind {
	case chaosStatus:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(h.ch.c.body)))
		w.WriteHeader(h.ch.c.code)
		_, _ = io.WriteString(w, h.ch.c.body)
		return
	case chaosDrop:
		panic(http.ErrAbortHandler)
	}
	tw := &truncatingWriter{ResponseWriter: w, n: h.ch.c.n}
	h.next.ServeHTTP(tw, r)
	if !tw.wrote {
		tw.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// truncatingWriter sends at most n bytes of a body under a Content-Length
// larger than n.
type truncatingWriter struct {
	http.ResponseWriter
	n, sent int64
	wrote   bool // the header is written
}

func (w *truncatingWriter) WriteHeader(code int) {
	if code < 200 { // an informational header goes as it is
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.wrote {
		return
	}
	w.wrote = true
	declared := w.n
	if declared < math.MaxInt64 {
		declared++
	}
	if cl, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil && cl > declared {
		declared = cl
	}
	w.Header().Set("Content-Length", strconv.FormatInt(declared, 10))
	w.ResponseWriter.WriteHeader(code)
}

// Write sends what fits in the n bytes and drops the rest, as if sent.
func (w *truncatingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if keep := min(int64(len(p)), w.n-w.sent); keep > 0 {
		n, err := w.ResponseWriter.Write(p[:keep])
		w.sent += int64(n)
		if err != nil {
			return n, err
		}
	}
	return len(p), nil
}

// Flush sends what was written so far.
func (w *truncatingWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the server's writer, for http.ResponseController.
func (w *truncatingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

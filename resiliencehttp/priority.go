package resiliencehttp

import (
	"net/http"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/internal/prioritytext"
)

// PriorityFromHeader returns middleware that gives each request the
// priority its header name carries (resilience.WithPriority on the
// request's context), so that the guards of a [Handler] or [Middleware]
// behind it, an adaptive limiter's shares among them, and the handler
// itself see it:
//
//	mux.Handle("/", resiliencehttp.PriorityFromHeader("X-Priority")(resiliencehttp.Handler(app, limiter)))
//
// The header holds a priority's name as resilience.Priority.String writes
// it ("critical", "high", "normal", "low", "sheddable"; any case) or its
// number (2 to -2); the [Transport]'s [WithPriorityHeader] writes it so.
// A request without the header, or with any other value, keeps the
// priority of its context, which is resilience.PriorityNormal unless an
// earlier middleware set one. A client chooses what it sends: authenticate
// it, or strip the header at the edge, before a priority decides who is
// shed. PriorityFromHeader panics if name is empty.
func PriorityFromHeader(name string) func(http.Handler) http.Handler {
	if name == "" {
		panic("resiliencehttp: PriorityFromHeader: header name is empty")
	}
	name = http.CanonicalHeaderKey(name)
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("resiliencehttp: PriorityFromHeader: next is nil")
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if v := r.Header.Get(name); v != "" {
				if p, ok := prioritytext.Parse(v); ok {
					r = r.WithContext(resilience.WithPriority(r.Context(), p))
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// WithPriorityHeader makes the [Transport] send the priority of each
// request's context (resilience.WithPriority) in its header name, as
// [PriorityFromHeader] on the server reads it: a service that calls
// another passes on the priority of the request it serves. A request
// whose context carries no priority or resilience.PriorityNormal, the
// priority a server gives a request without the header, is sent as it
// is, as is one that has the header already. The default sends none. It
// panics if name is empty.
func WithPriorityHeader(name string) TransportOption {
	if name == "" {
		panic("resiliencehttp: WithPriorityHeader: header name is empty")
	}
	name = http.CanonicalHeaderKey(name)
	return func(c *config) { c.priorityHeader = name }
}

// setPriority writes the priority of r's context into r's header, on a
// copy of the header, for the caller's request is not to be changed.
func (t *Transport) setPriority(r *http.Request) {
	if t.priorityHeader == "" {
		return
	}
	p := resilience.PriorityFrom(r.Context())
	if p == resilience.PriorityNormal {
		return
	}
	if _, ok := r.Header[t.priorityHeader]; ok {
		return
	}
	r.Header = r.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(t.priorityHeader, prioritytext.Format(p))
}

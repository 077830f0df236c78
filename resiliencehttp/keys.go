package resiliencehttp

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/faf87a20/resilience"
)

// PerKey returns a guard for [Handler] and [Middleware] that limits each
// key of the request on its own, with l: a per-user, per-tenant or per-IP
// limit, without a context key or a middleware of the caller's. key finds
// the key in the request; [Header] and [RemoteAddr] are the common ones.
// Its refusals are answered 429 Too Many Requests with a Retry-After
// header. Outside Handler and Middleware the guard refuses every call
// with an error matching [ErrNoRequest]. PerKey panics if l or key is nil.
func PerKey[K comparable](l *resilience.KeyedRateLimiter[K], key func(r *http.Request) K) resilience.Guard {
	if l == nil {
		panic("resiliencehttp: PerKey: limiter is nil")
	}
	if key == nil {
		panic("resiliencehttp: PerKey: key function is nil")
	}
	return RefusalStatus(ByRequest(l.Guard(RequestKey(key))), http.StatusTooManyRequests)
}

// RequestKey returns a key function for a guard that keys by the request
// (a [resilience.Keyed], a resilience.KeyedRateLimiter's Guard): it finds
// the key of the request that [Handler] or [Middleware] serves, with key.
// Give the guard to Handler through [ByRequest], which puts the request
// where RequestKey finds it. It panics if key is nil.
func RequestKey[K comparable](key func(r *http.Request) K) func(ctx context.Context) K {
	if key == nil {
		panic("resiliencehttp: RequestKey: key function is nil")
	}
	return func(ctx context.Context) K {
		r, _ := ctx.Value(requestKey{}).(*http.Request)
		if r == nil { // outside Handler: ByRequest refuses before asking
			var zero K
			return zero
		}
		return key(r)
	}
}

// ByRequest returns g, a guard whose key function is a [RequestKey]'s, as
// a guard for [Handler] and [Middleware]: they put the request in the
// context for it. A tenant's own bulkhead:
//
//	tenants := resilience.NewKeyed(resiliencehttp.RequestKey(resiliencehttp.Header("X-Tenant")),
//		func(string) *resilience.Bulkhead { return resilience.NewBulkhead(8) })
//	h := resiliencehttp.Handler(app, resiliencehttp.ByRequest(tenants))
//
// Outside Handler and Middleware the guard refuses every call with an
// error matching [ErrNoRequest]. It panics if g is nil.
func ByRequest(g resilience.Guard) resilience.Guard {
	if g == nil {
		panic("resiliencehttp: ByRequest: guard is nil")
	}
	return requestGuard{g}
}

// ErrNoRequest is the refusal of a [PerKey] or [ByRequest] guard asked outside [Handler]
// and [Middleware], which give it the request.
var ErrNoRequest = errors.New("resiliencehttp: a guard keyed by the request (PerKey, ByRequest) used outside Handler or Middleware: no request to key by")

// Header returns a key function that keys a request by its header name:
// "X-User", "X-Tenant". A request without the header has the key "".
func Header(name string) func(r *http.Request) string {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) string { return r.Header.Get(name) }
}

// RemoteAddr keys a request by the address of the client that sent it,
// without the port. Behind a proxy that is the proxy's: key by the header
// it sets instead (with [Header]), if you trust it.
func RemoteAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// requestKey is the context key under which Handler puts the request for
// the guards that key by it.
type requestKey struct{}

// keysByRequest reports whether g, perhaps given a status by
// RefusalStatus, needs the request in the context.
func keysByRequest(g resilience.Guard) bool {
	if s, ok := g.(*statusGuard); ok {
		g = s.g
	}
	_, ok := g.(requestGuard)
	return ok
}

// requestGuard is a guard that needs the request in the context.
type requestGuard struct{ g resilience.Guard }

func (g requestGuard) Enter(ctx context.Context) (func(error), error) {
	if _, ok := ctx.Value(requestKey{}).(*http.Request); !ok {
		return nil, ErrNoRequest
	}
	return g.g.Enter(ctx)
}

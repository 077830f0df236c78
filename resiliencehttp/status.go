package resiliencehttp

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/faf87a20/resilience"
)

// StatusHandler returns a handler that serves a status page of the guards
// in reg, as net/http/pprof serves profiles: one row per guard with its
// state in words and colour, its counts and its recent events, refreshed
// every second without reloading the page (every 5 seconds by reloading
// it when scripts are off). The same snapshots come as JSON, a list of
// resilience.Snapshot, with ?format=json or an Accept header that asks
// for application/json rather than text/html.
//
// Both are bounded, whatever the registry holds: at most 200 guards, the
// most critical first, with a line on the page (the JSON: a header
// Resilience-Guards-Omitted) saying how many more there are; each guard's
// 32 newest events; names cut to 80 characters, keys to 64, error texts to
// 300, each ending in "…" when cut. A breaker whose name was cut has no
// actions on the page. Read everything with reg.Snapshots.
//
// The page shows the internals of a service and the keys of its users:
// mount it behind the service's admin authentication, never on a public
// route. It changes nothing unless [WithStatusActions] is given. It is
// safe for concurrent use. StatusHandler panics if reg is nil or an
// option is nil.
func StatusHandler(reg *resilience.Registry, opts ...StatusOption) http.Handler {
	if reg == nil {
		panic("resiliencehttp: StatusHandler: registry is nil")
	}
	h := &statusHandler{reg: reg, refresh: time.Second}
	for _, o := range opts {
		if o == nil {
			panic("resiliencehttp: StatusHandler: option is nil")
		}
		o(h)
	}
	if !h.actions {
		return h
	}
	// Actions are POST forms alone, and a request another site's page
	// makes the browser send is refused (403) before it gets here.
	return http.NewCrossOriginProtection().Handler(h)
}

// StatusOption configures [StatusHandler].
type StatusOption func(*statusHandler)

// WithStatusActions lets an operator isolate or reset a breaker from the
// status page, through POST forms that net/http's CrossOriginProtection
// guards against cross-site requests. By default the page is read-only
// and answers any method but GET and HEAD with 405.
func WithStatusActions() StatusOption {
	return func(h *statusHandler) { h.actions = true }
}

// WithStatusRefresh sets how often the page fetches new snapshots: every
// second by default. A d beyond 2^31−1 ms (24.8 days), the longest a
// browser's timer waits, is taken as 24.8 days. It panics if d is less
// than 100ms.
func WithStatusRefresh(d time.Duration) StatusOption {
	if d < 100*time.Millisecond {
		panic(fmt.Sprintf("resiliencehttp: WithStatusRefresh: refresh must be at least 100ms, got %v", d))
	}
	return func(h *statusHandler) { h.refresh = d }
}

type statusHandler struct {
	reg     *resilience.Registry
	actions bool
	refresh time.Duration
}

func (h *statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Vary", "Accept")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	switch {
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		if wantsJSON(r) {
			h.serveJSON(w)
			return
		}
		h.servePage(w)
	case r.Method == http.MethodPost && h.actions:
		h.act(w, r)
	default:
		allow := "GET, HEAD"
		if h.actions {
			allow += ", POST"
		}
		hdr.Set("Allow", allow)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// wantsJSON reports whether r asks for the snapshots as JSON: with
// ?format=json, or with an Accept header naming application/json and not
// text/html, as a script's request does and a browser's does not.
func wantsJSON(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "json":
		return true
	case "html":
		return false
	}
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

func (h *statusHandler) serveJSON(w http.ResponseWriter) {
	snaps, omitted := shown(h.reg.Snapshots())
	if snaps == nil {
		snaps = []resilience.Snapshot{} // [], not null
	}
	for i := range snaps {
		bound(&snaps[i])
	}
	if n := omitted.Total(); n > 0 {
		w.Header().Set("Resilience-Guards-Omitted", strconv.Itoa(n))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(snaps) // a write error is the client's
}

func (h *statusHandler) servePage(w http.ResponseWriter) {
	nonce := newNonce()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	// The page runs its own script alone, loads nothing, and is framed by
	// no one.
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	page := newStatusPage(h.reg.Snapshots(), h.actions, h.refresh, nonce)
	// The template is the package's own and its data plain values: an
	// error is the client's write failing, and no one is left to answer.
	_ = statusTemplate.Execute(w, page)
}

// newNonce returns a random value for the page's Content-Security-Policy.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's doc)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// act runs an operator's action on a breaker: the form's name and action
// ("isolate" or "reset"), then sends the browser back to the page.
func (h *statusHandler) act(w http.ResponseWriter, r *http.Request) {
	name, action := r.PostFormValue("name"), r.PostFormValue("action")
	g, ok := h.reg.Lookup(name)
	if !ok {
		http.Error(w, "no guard of that name", http.StatusNotFound)
		return
	}
	br, ok := g.(*resilience.Breaker)
	if !ok {
		http.Error(w, "only a breaker has actions", http.StatusBadRequest)
		return
	}
	switch action {
	case "isolate":
		br.Isolate()
	case "reset":
		br.Reset()
	default:
		http.Error(w, "unknown action", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, pagePath(r), http.StatusSeeOther)
}

// pagePath returns the path of the page r was sent to, as the browser named
// it (under http.StripPrefix r.URL.Path has lost the prefix, r.RequestURI
// has not), cleaned so that it starts with exactly one slash: a browser
// reads "//evil.example/" as another host, and a handler served without a
// ServeMux, which cleans paths, gets such paths as they came. The path is
// escaped, so a backslash, which a browser reads as a slash there, comes
// back as %5C.
func pagePath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		p = u.EscapedPath()
	}
	clean := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

package resiliencehttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestPerKey: a keyed limiter's guard keys each request by a header or by
// the client's address, through Handler and Middleware alike, and refuses
// outside them.
func TestPerKey(t *testing.T) {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		name  string
		key   func(*http.Request) string
		wrap  func(http.Handler, resilience.Guard) http.Handler
		users []string
		want  []int
	}{
		{"header, Handler", resiliencehttp.Header("x-user"), func(h http.Handler, g resilience.Guard) http.Handler { return resiliencehttp.Handler(h, g) },
			[]string{"alice", "alice", "bob", "alice", ""}, []int{204, 429, 204, 429, 204}},
		{"header, Middleware", resiliencehttp.Header("X-User"), func(h http.Handler, g resilience.Guard) http.Handler { return resiliencehttp.Middleware(g)(h) },
			[]string{"alice", "alice", "bob"}, []int{204, 429, 204}},
		{"remote address", resiliencehttp.RemoteAddr, func(h http.Handler, g resilience.Guard) http.Handler { return resiliencehttp.Handler(h, g) },
			[]string{"alice", "bob"}, []int{204, 429}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := resilience.NewKeyedRateLimiter[string](1.0/3600, 1)
			srv := httptest.NewServer(tc.wrap(app, resiliencehttp.PerKey(l, tc.key)))
			defer srv.Close()
			defer srv.Client().CloseIdleConnections()
			for i, user := range tc.users {
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				req.Header.Set("X-User", user)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want[i] {
					t.Errorf("request %d (%q): status %d, want %d", i, user, resp.StatusCode, tc.want[i])
				}
				if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
					t.Errorf("request %d: a 429 with no Retry-After", i)
				}
			}
		})
	}
	g := resiliencehttp.PerKey(resilience.NewKeyedRateLimiter[string](1, 1), resiliencehttp.RemoteAddr)
	if _, err := g.Enter(context.Background()); !errors.Is(err, resiliencehttp.ErrNoRequest) {
		t.Errorf("Enter outside Handler = %v, want ErrNoRequest", err)
	}
}

// TestByRequest: a resilience.Keyed bulkhead per tenant through Handler,
// its key the request's header by RequestKey: a tenant whose bulkhead is
// full is refused, the others are served; outside Handler the guard
// refuses.
func TestByRequest(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	tenants := resilience.NewKeyed(resiliencehttp.RequestKey(resiliencehttp.Header("X-Tenant")),
		func(string) *resilience.Bulkhead { return resilience.NewBulkhead(1) })
	srv := httptest.NewServer(resiliencehttp.Handler(app, resiliencehttp.ByRequest(tenants)))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	get := func(tenant string, hold bool) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Tenant", tenant)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	held := make(chan int, 1)
	go func() { held <- get("noisy", true) }()
	<-entered // the noisy tenant's one slot is taken
	for _, tc := range []struct {
		tenant string
		want   int
	}{{"noisy", http.StatusServiceUnavailable}, {"quiet", http.StatusNoContent}, {"other", http.StatusNoContent}} {
		if got := get(tc.tenant, false); got != tc.want {
			t.Errorf("tenant %q: status %d, want %d", tc.tenant, got, tc.want)
		}
	}
	close(release)
	if got := <-held; got != http.StatusNoContent {
		t.Errorf("the held request: status %d, want 204", got)
	}
	if tenants.Len() != 3 {
		t.Errorf("Len() = %d, want 3", tenants.Len())
	}
	if _, err := resiliencehttp.ByRequest(tenants).Enter(context.Background()); !errors.Is(err, resiliencehttp.ErrNoRequest) {
		t.Errorf("Enter outside Handler = %v, want ErrNoRequest", err)
	}
}

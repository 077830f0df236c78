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

package resiliencehttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// userKey is the context key under which withUser puts the caller.
type userKey struct{}

// withUser puts the user a request names in its context, for the limiter
// after it; a real server would take it from a verified token.
func withUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), userKey{}, r.Header.Get("X-User"))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func userOf(ctx context.Context) string {
	user, _ := ctx.Value(userKey{}).(string)
	return user
}

func ExampleHandler_perUserRateLimit() {
	// Each user may make 2 requests an hour, both at once if they like; a
	// user over the limit is answered 429 with the seconds to wait.
	perUser := resilience.NewKeyedRateLimiter[string](2.0/3600, 2)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello ", userOf(r.Context())) })
	guard := resiliencehttp.RefusalStatus(perUser.Guard(userOf), http.StatusTooManyRequests)
	srv := httptest.NewServer(withUser(resiliencehttp.Handler(app, guard)))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	for _, user := range []string{"alice", "alice", "alice", "bob"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-User", user)
		resp, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		if wait := resp.Header.Get("Retry-After"); wait != "" {
			fmt.Println(user, resp.StatusCode, "Retry-After:", wait)
			continue
		}
		fmt.Println(user, resp.StatusCode)
	}
	// Output:
	// alice 200
	// alice 200
	// alice 429 Retry-After: 1800
	// bob 200
}

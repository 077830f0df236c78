package resiliencehttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// Example_retryingClient is the README's recipe: an HTTP client that
// retries what is safe to retry, against an API that fails twice.
func Example_retryingClient() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"id":42}`)
	}))
	defer api.Close()

	// GET, HEAD, PUT, DELETE and requests with an Idempotency-Key are
	// retried on 408, 429, 502, 503, 504 and transport errors, waiting as
	// Retry-After says; bodies are drained, so connections are reused.
	client := resiliencehttp.NewClient() // 30s a call, 10s an attempt, 3 attempts
	resp, err := client.Get(api.URL + "/users/42")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), calls.Load(), "calls")
	// Output: 200 {"id":42} 3 calls
}

// Example_sheddingServer is the README's recipe: a server that sheds load
// past 64 requests at once and limits each user, keyed by a header.
func Example_sheddingServer() {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })

	// At most 64 requests at once (503 past that), and each user 2 requests
	// an hour (429 past that), both with a Retry-After header.
	perUser := resilience.NewKeyedRateLimiter[string](2.0/3600, 2)
	mux := http.NewServeMux()
	mux.Handle("/", resiliencehttp.Handler(app, resilience.NewBulkhead(64),
		resiliencehttp.PerKey(perUser, resiliencehttp.Header("X-User"))))

	srv := httptest.NewServer(mux)
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
			fmt.Println(user, resp.StatusCode, wait)
			continue
		}
		fmt.Println(user, resp.StatusCode)
	}
	// Output:
	// alice 200
	// alice 200
	// alice 429 1800
	// bob 200
}

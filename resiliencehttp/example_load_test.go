package resiliencehttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// A server that sheds load without a guessed number: the adaptive limiter
// finds the limit, and the priority header decides who is shed first.
func ExamplePriorityFromHeader() {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, resilience.PriorityFrom(r.Context()))
	})

	// The limit follows the latency of the requests it admits; under
	// overload those whose X-Priority header says "sheddable" or "low" are
	// refused first (503 with Retry-After), "critical" ones last.
	limiter := resilience.NewAdaptiveLimiter()
	mux := http.NewServeMux()
	mux.Handle("/", resiliencehttp.PriorityFromHeader("X-Priority")(resiliencehttp.Handler(app, limiter)))

	srv := httptest.NewServer(mux)
	defer srv.Close()

	// A client passes on the priority of its context in the same header.
	client := resiliencehttp.NewClient(resiliencehttp.WithPriorityHeader("X-Priority"))
	defer client.CloseIdleConnections()
	ctx := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body := make([]byte, 16)
	n, _ := resp.Body.Read(body)
	fmt.Println(resp.Status, string(body[:n]))
	// Output: 200 OK critical
}

// An AdaptiveThrottler among a Transport's guards, told by ThrottleOutcome what
// the server took: against a server that refuses most requests, the
// client soon refuses some itself, without sending them.
func ExampleThrottleOutcome() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	throttle := resilience.NewAdaptiveThrottler(resilience.WithThrottleClassifier(resiliencehttp.ThrottleOutcome))
	client := resiliencehttp.NewClient(resiliencehttp.WithGuards(throttle), resiliencehttp.WithRetry(resilience.WithAttempts(1)))
	defer client.CloseIdleConnections()

	throttled := 0
	for range 100 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			throttled++
			continue
		}
		resp.Body.Close()
	}
	fmt.Println("some refused locally:", throttled > 0)
	// Output: some refused locally: true
}

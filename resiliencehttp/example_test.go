package resiliencehttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// flaky starts a local server that answers 503 Service Unavailable twice
// in every three requests.
func flaky() *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 != 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
}

func ExampleNewClient() {
	srv := flaky()
	defer srv.Close()

	client := resiliencehttp.NewClient(
		resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(time.Millisecond))),
	)
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output: 200 OK hello
}

func ExampleNewTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	tr := resiliencehttp.NewTransport(http.DefaultTransport.(*http.Transport).Clone(),
		resiliencehttp.WithAttemptTimeout(2*time.Second),
		resiliencehttp.WithRetry(
			resilience.WithAttempts(2),
			resilience.WithMaxRetryAfter(10*time.Millisecond), // the server asks for 1s
		),
		resiliencehttp.WithStatusErrors(),
	)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	_, err := client.Get(srv.URL + "/users/7")
	var se *resiliencehttp.StatusError
	if errors.As(err, &se) {
		fmt.Println(se.Method, se.StatusCode, se.RetryAfter())
	}
	fmt.Println(errors.Is(err, resilience.ErrRetriesExhausted))
	// Output:
	// GET 503 1s
	// true
}

func ExampleWithHostGuard() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()

	// Each host gets a breaker of its own, opened by one failure here.
	tr := resiliencehttp.NewTransport(nil,
		resiliencehttp.WithRetry(resilience.WithAttempts(1)),
		resiliencehttp.WithHostGuard(func(host string) resilience.Guard {
			return resilience.NewBreaker(resilience.WithBreakerThreshold(1))
		}),
	)
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			fmt.Println(errors.Is(err, resilience.ErrBreakerOpen))
			continue
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// 500
	// true
}

func ExampleHandler() {
	bulkhead := resilience.NewBulkhead(1)
	release := make(chan struct{})
	started := make(chan struct{})
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		fmt.Fprint(w, "done")
	})
	srv := httptest.NewServer(resiliencehttp.Handler(app, bulkhead))
	defer srv.Close()

	first := make(chan string)
	go func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		first <- resp.Status + " " + string(body)
	}()
	<-started // the only slot is taken

	resp, err := http.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("second:", resp.Status)

	close(release)
	fmt.Println("first:", <-first)
	// Output:
	// second: 503 Service Unavailable
	// first: 200 OK done
}

// limiter stands for a rate limiter: it refuses every call, asking for
// a wait of 2.5s.
type limiter struct{}

func (limiter) Enter(context.Context) (func(error), error) { return nil, slowDown{} }

type slowDown struct{}

func (slowDown) Error() string             { return "slow down" }
func (slowDown) RetryAfter() time.Duration { return 2500 * time.Millisecond }

func ExampleRefusalStatus() {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	h := resiliencehttp.Handler(app, resiliencehttp.RefusalStatus(limiter{}, http.StatusTooManyRequests))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	// Output: 429 3
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

func init() {
	register(scenario{order: 70, name: "http", title: "HTTP: a client that retries 503s and honours Retry-After; a server that sheds load", run: httpTour})
}

func httpTour(ctx context.Context, w io.Writer) error {
	// A server that answers 503 with "Retry-After: 1" once, then 200. It is
	// served in memory (inMemory below) so that the tour runs anywhere, on
	// fake time in its test; over a network the code is the same.
	var hits atomic.Int32
	api := inMemory(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			rw.Header().Set("Retry-After", "1")
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(rw, "hello")
	}))

	client := &http.Client{Transport: resiliencehttp.NewTransport(api, resiliencehttp.WithRetry(
		resilience.WithObserver(onRetry(func(attempt int, err error, wait time.Duration) {
			fmt.Fprintf(w, "  attempt %d: %v; waiting %s as the server asked\n", attempt, err, wait)
		}))))}
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/greeting", nil)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Fprintf(w, "GET: %d %q after %s, %d requests\n", resp.StatusCode, body, since(start), hits.Load())

	fmt.Fprintln(w, "-- a server with room for one request at a time: the second is shed with 503")
	release := make(chan struct{})
	busy := make(chan struct{})
	app := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		close(busy)
		<-release
	})
	shed := resiliencehttp.Handler(app, resilience.NewBulkhead(1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		shed.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	<-busy
	rec := httptest.NewRecorder()
	shed.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Fprintf(w, "second request: %d %s\n", rec.Code, http.StatusText(rec.Code))
	close(release)
	<-done
	return nil
}

// inMemory is a RoundTripper that serves requests with h, without a
// network.
type inMemory http.HandlerFunc

func (h inMemory) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	h(rec, req)
	return rec.Result(), nil
}

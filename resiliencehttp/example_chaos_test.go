package resiliencehttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// A chaos transport under a Transport: every second attempt is answered
// 503 without reaching the server, and the Transport's retry heals it.
func ExampleNewChaosTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()

	injected := 0
	chaos := resiliencehttp.NewChaosTransport(http.DefaultTransport.(*http.Transport).Clone(),
		resiliencehttp.ChaosStatus(http.StatusServiceUnavailable, "chaos"),
		resilience.WithChaosEvery(2), // tests: every second attempt; in staging, WithChaosRate(0.2)
		resilience.WithObserver(resilience.ObserverFunc(func(ctx context.Context, e resilience.Event) { injected++ })),
	)
	defer chaos.CloseIdleConnections()
	client := &http.Client{Transport: resiliencehttp.NewTransport(chaos,
		resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(0))))}

	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, string(body))
	}
	fmt.Println("injected:", injected)
	// Output:
	// 200 OK hello
	// 200 OK hello
	// 200 OK hello
	// injected: 2
}

// Chaos on the server side: every third request is answered 503 without
// reaching the handler.
func ExampleChaosMiddleware() {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })
	chaos := resiliencehttp.ChaosMiddleware(resiliencehttp.ChaosStatus(http.StatusServiceUnavailable, "chaos"),
		resilience.WithChaosEvery(3))
	srv := httptest.NewServer(chaos(app))
	defer srv.Close()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()

	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, string(body))
	}
	// Output:
	// 200 OK hello
	// 200 OK hello
	// 503 Service Unavailable chaos
}

// A body cut short: the client reads the first 5 bytes, then
// io.ErrUnexpectedEOF.
func ExampleChaosTruncate() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello, world") }))
	defer srv.Close()
	tr := resiliencehttp.NewChaosTransport(http.DefaultTransport.(*http.Transport).Clone(), resiliencehttp.ChaosTruncate(5))
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	fmt.Printf("%q %v\n", body, err)
	// Output: "hello" unexpected EOF
}

package resiliencehttp_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

func ExampleStatusHandler() {
	reg := resilience.NewRegistry()
	payments := resilience.NewBreaker() // named, and heard, by Register
	if err := reg.Register("payments", payments); err != nil {
		panic(err)
	}

	// Mounted behind the service's admin authentication in a real program.
	mux := http.NewServeMux()
	mux.Handle("/debug/resilience/", http.StripPrefix("/debug/resilience", resiliencehttp.StatusHandler(reg)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	payments.Trip()
	resp, err := http.Get(srv.URL + "/debug/resilience/?format=json")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var guards []resilience.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&guards); err != nil {
		panic(err)
	}
	for _, g := range guards {
		fmt.Println(g.Name, g.State, g.Health, g.Events[0].Text)
	}
	// Output:
	// payments open critical closed → open
}

// Example_seeYourGuardsLive is the README's recipe.
func Example_seeYourGuardsLive() {
	admin := http.NewServeMux()

	// Register names each guard, and the registry keeps its recent events.
	reg := resilience.DefaultRegistry()
	payments := resilience.NewBreaker()
	if err := reg.Register("payments", payments); err != nil {
		log.Fatal(err)
	}
	// Behind the admin authentication, as net/http/pprof would be.
	admin.Handle("/debug/resilience/", http.StripPrefix("/debug/resilience", resiliencehttp.StatusHandler(reg)))

	defer reg.Unregister("payments")
	srv := httptest.NewServer(admin)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/resilience/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	// Output:
	// 200 OK text/html; charset=utf-8
}

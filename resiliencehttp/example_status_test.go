package resiliencehttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

func ExampleStatusHandler() {
	reg := resilience.NewRegistry()
	payments := resilience.NewBreaker(resilience.WithName("payments"), resilience.WithObserver(reg))
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

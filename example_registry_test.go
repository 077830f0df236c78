package resilience_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/faf87a20/resilience"
)

func ExampleNewRegistry() {
	reg := resilience.NewRegistry()

	// The registry is the breaker's observer too, so that its recent
	// events are kept under its name.
	breaker := resilience.NewBreaker(resilience.WithName("payments"), resilience.WithObserver(reg))
	pool := resilience.NewBulkhead(16)
	if err := reg.Register("payments", breaker); err != nil {
		panic(err)
	}
	if err := reg.Register("payments-pool", pool); err != nil {
		panic(err)
	}

	// A name is held once.
	err := reg.Register("payments", pool)
	fmt.Println(errors.Is(err, resilience.ErrAlreadyRegistered))

	breaker.Trip()
	_, _ = breaker.Enter(context.Background())
	for _, s := range reg.Snapshots() {
		fmt.Printf("%s: %s %s (%s)\n", s.Name, s.Kind, s.State, s.Health)
		for _, e := range s.Events {
			fmt.Printf("  %d× %s\n", e.Count, e.Kind)
		}
	}
	// Output:
	// true
	// payments: breaker open (critical)
	//   1× refused
	//   1× state-change
	// payments-pool: bulkhead ok (ok)
}

func ExampleDefaultRegistry() {
	// A per-tenant limiter is registered while the tenant is served, and
	// unregistered when it goes, so that the registry does not keep it.
	limiter := resilience.NewRateLimiter(100, 10)
	reg := resilience.DefaultRegistry()
	if err := reg.Register("tenant-42", limiter); err != nil {
		panic(err)
	}
	s, _ := reg.Snapshot("tenant-42")
	fmt.Println(s.Kind, s.State, s.RateLimiter.Burst)
	fmt.Println(reg.Unregister("tenant-42"))
	// Output:
	// rate-limiter ok 10
	// true
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/faf87a20/resilience"
)

func ExampleNewRegistry() {
	reg := resilience.NewRegistry()

	// Register names each guard, and the registry keeps its recent
	// events under that name from then on.
	breaker := resilience.NewBreaker()
	pool := resilience.NewBulkhead(16)
	if err := reg.Register("payments", breaker); err != nil {
		panic(err)
	}
	if err := reg.Register("payments-pool", pool); err != nil {
		panic(err)
	}

	// A name is held once, and a guard has one name.
	err := reg.Register("payments", resilience.NewBulkhead(4))
	fmt.Println(errors.Is(err, resilience.ErrAlreadyRegistered))
	err = reg.Register("payments-again", breaker)
	fmt.Println(errors.Is(err, resilience.ErrNameMismatch))

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

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// A retry proven against injected faults: every other attempt fails, and
// every call still succeeds. An observer counts the injections.
func ExampleChaosFault() {
	errUnavailable := errors.New("503 service unavailable")
	injected := 0
	count := resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
		if e.Kind == resilience.EventChaos {
			injected++
		}
	}))
	users := resilience.Compose(
		resilience.Retry[string](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0))),
		resilience.ChaosFault[string](errUnavailable, resilience.WithChaosEvery(2), count),
	)
	for id := 1; id <= 3; id++ {
		name, err := resilience.Do(context.Background(), users, func(context.Context) (string, error) {
			return fmt.Sprintf("user %d", id), nil
		})
		fmt.Println(name, err)
	}
	fmt.Println("faults injected:", injected)
	// Output:
	// user 1 <nil>
	// user 2 <nil>
	// user 3 <nil>
	// faults injected: 2
}

// A timeout proven against injected latency: the call is held back for a
// second, and the 20ms timeout gives up on it.
func ExampleChaosLatency() {
	p := resilience.Compose(
		resilience.Timeout[int](20*time.Millisecond),
		resilience.ChaosLatency[int](time.Second),
	)
	_, err := resilience.Do(context.Background(), p, func(context.Context) (int, error) { return 42, nil })
	fmt.Println(err, errors.Is(err, resilience.ErrTimeout))
	// Output:
	// resilience: timeout true
}

type tenantCtxKey struct{}

// Stale answers for one tenant only: the enabled predicate reads the
// tenant from the call's context, and a seeded source makes the test
// repeatable. The canary gets the injected empty page on about half of
// its calls; other tenants are never touched.
func ExampleChaosOutcome() {
	emptyPage := []string{}
	p := resilience.ChaosOutcome(emptyPage,
		resilience.WithChaosEnabled(func(ctx context.Context) bool { return ctx.Value(tenantCtxKey{}) == "canary" }),
		resilience.WithChaosRate(0.5),
		resilience.WithRand(rand.New(rand.NewPCG(4, 5))),
	)
	search := func(context.Context) ([]string, error) { return []string{"a", "b"}, nil }
	for _, tenant := range []string{"canary", "canary", "canary", "acme", "canary", "acme"} {
		ctx := context.WithValue(context.Background(), tenantCtxKey{}, tenant)
		page, _ := resilience.Do(ctx, p, search)
		fmt.Println(tenant, page)
	}
	// Output:
	// canary []
	// canary [a b]
	// canary []
	// acme [a b]
	// canary [a b]
	// acme [a b]
}

// A cache that loses its entries now and then: the injected behavior
// clears it before every third call, and the code that reads through it
// must cope.
func ExampleChaosBehavior() {
	cache := map[string]string{}
	dropCache := func(context.Context) { clear(cache) }
	p := resilience.ChaosBehavior[string](dropCache, resilience.WithChaosEvery(3))
	lookup := func(context.Context) (string, error) {
		if v, ok := cache["greeting"]; ok {
			return v + " (cached)", nil
		}
		cache["greeting"] = "hello"
		return "hello", nil
	}
	for range 4 {
		v, _ := resilience.Do(context.Background(), p, lookup)
		fmt.Println(v)
	}
	// Output:
	// hello
	// hello (cached)
	// hello
	// hello (cached)
}

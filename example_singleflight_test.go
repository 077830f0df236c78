package resilience_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

// Three requests for the same user while a lookup is in flight: one
// lookup serves them all.
func ExampleSingleflight() {
	users := resilience.NewSingleflight[int, string]()
	var lookups atomic.Int32
	var wg sync.WaitGroup
	names := make([]string, 3)
	var lookup func(ctx context.Context) (string, error)
	lookup = func(ctx context.Context) (string, error) {
		lookups.Add(1)
		// The other requests come while this lookup is in flight.
		for i := 1; i < len(names); i++ {
			wg.Go(func() { names[i], _ = users.Do(context.Background(), 42, lookup) })
		}
		time.Sleep(50 * time.Millisecond) // the database is slow
		return "Ada", nil
	}
	names[0], _ = users.Do(context.Background(), 42, lookup)
	wg.Wait()
	fmt.Println(names, "lookups:", lookups.Load())
	// Output:
	// [Ada Ada Ada] lookups: 1
}

// A caller who gives up does not disturb the others: the shared lookup
// runs on a context of its own, which ends only when every caller has
// gone, and goes on for the caller still waiting.
func ExampleSingleflight_Do() {
	users := resilience.NewSingleflight[int, string]()
	var wg sync.WaitGroup
	var lookup func(ctx context.Context) (string, error)
	lookup = func(ctx context.Context) (string, error) {
		// An impatient request comes while this lookup is in flight.
		wg.Go(func() {
			impatient, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			_, err := users.Do(impatient, 42, lookup)
			fmt.Println("impatient caller:", err)
		})
		select {
		case <-time.After(50 * time.Millisecond): // the database is slow
			return "Ada", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	name, err := users.Do(context.Background(), 42, lookup)
	wg.Wait()
	fmt.Println("patient caller:", name, err)
	// Output:
	// impatient caller: context deadline exceeded
	// patient caller: Ada <nil>
}

type profileUserKey struct{}

// As a policy, the key comes from the call's context: one retry loop, one
// breaker admission, one call of fn serve every request for a user in
// flight at once. Requests without a user go through alone.
func ExampleSingleflight_Policy() {
	sf := resilience.NewSingleflight[string, string]()
	byUser := func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(profileUserKey{}).(string)
		return id, ok
	}
	profiles := resilience.Compose(
		sf.Policy(byUser),
		resilience.Retry[string](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0))),
	)
	var calls atomic.Int32
	fetch := func(ctx context.Context) (string, error) {
		calls.Add(1)
		return "profile", nil
	}
	ctx := context.WithValue(context.Background(), profileUserKey{}, "ada")
	p, err := profiles.Execute(ctx, fetch)
	fmt.Println(p, err, "calls:", calls.Load())
	// Output:
	// profile <nil> calls: 1
}

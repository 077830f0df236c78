package resilience_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/faf87a20/resilience"
)

// A price service that is down: the policy answers with the last price
// known, after three attempts.
func ExampleFallback() {
	lastKnown := map[string]int{"apples": 120}
	prices := resilience.Compose(
		resilience.Fallback(func(_ context.Context, err error) (int, error) {
			fmt.Println("falling back after:", err)
			return lastKnown["apples"], nil
		}),
		resilience.Retry[int](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0))),
	)
	price, err := resilience.Do(context.Background(), prices, func(context.Context) (int, error) {
		return 0, errors.New("price service unavailable")
	})
	fmt.Println(price, err)
	// Output:
	// falling back after: resilience: retries exhausted after 3 attempts: price service unavailable
	// 120 <nil>
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/faf87a20/resilience"
)

func ExampleNewAdaptiveLimiter() {
	// A server's handlers behind a limit it finds itself; here it starts
	// at 10, and 8 normal calls hold the normal priority's share of it.
	limiter := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(10))
	ctx := context.Background()
	var held []func(error)
	for range 8 {
		done, _ := limiter.Enter(ctx)
		held = append(held, done)
	}

	_, err := limiter.Enter(ctx)
	fmt.Println("normal:", errors.Is(err, resilience.ErrLimitExceeded))

	// A critical call may use the whole limit.
	done, err := limiter.Enter(resilience.WithPriority(ctx, resilience.PriorityCritical))
	fmt.Println("critical:", err, limiter.InFlight(), "in flight, limit", limiter.Limit())
	done(nil)
	for _, done := range held {
		done(nil)
	}
	// Output:
	// normal: true
	// critical: <nil> 9 in flight, limit 10
}

func ExampleWithPriority() {
	ctx := resilience.WithPriority(context.Background(), resilience.PrioritySheddable)
	fmt.Println(resilience.PriorityFrom(ctx), resilience.PriorityFrom(context.Background()))
	// Output: sheddable normal
}

// everyOther is a randomness that draws 0 and the largest number in turn,
// for an example that prints the same on every run.
type everyOther struct{ n uint64 }

func (r *everyOther) Uint64() uint64 { r.n++; return -(r.n & 1) }

func ExampleNewAdaptiveThrottler() {
	// The service refuses everything: after 20 requests the throttle
	// refuses locally with probability (requests − 2·accepts)/(requests + 1).
	throttle := resilience.NewAdaptiveThrottler(resilience.WithRand(&everyOther{}))
	refused := 0
	for range 100 {
		done, err := throttle.Enter(context.Background())
		if err != nil {
			refused++
			continue
		}
		done(resilience.ErrBulkheadFull) // the service's refusal
	}
	fmt.Printf("refused locally: %d of 100; ratio now %.2f\n", refused, throttle.Ratio())
	// Output: refused locally: 40 of 100; ratio now 0.99
}

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 20, name: "retry", title: "Retry: 4 attempts, full-jitter backoff, within a 1s timeout", run: retryTour})
}

func retryTour(ctx context.Context, w io.Writer) error {
	// Fails twice, then answers; then fails four times in a row.
	svc := newService(fail(5*time.Millisecond), fail(5*time.Millisecond), ok(5*time.Millisecond),
		fail(5*time.Millisecond), fail(5*time.Millisecond), fail(5*time.Millisecond), fail(5*time.Millisecond))
	policy := resilience.Compose(
		resilience.Timeout[string](time.Second, logs, resilience.WithName("service")),
		resilience.Retry[string](
			logs, resilience.WithName("service"),
			resilience.WithAttempts(4),
			resilience.WithBackoff(resilience.FullJitter(resilience.Cap(resilience.Exponential(20*time.Millisecond, 2), 200*time.Millisecond))),
			resilience.WithOnRetry(func(attempt int, err error, wait time.Duration) {
				fmt.Fprintf(w, "  attempt %d: %v; retrying after a wait of at most %s\n", attempt, err, 20*time.Millisecond<<(attempt-1))
			}),
		),
	)
	for i := 1; i <= 2; i++ {
		start := time.Now()
		v, err := resilience.Do(ctx, policy, svc.Call)
		if err != nil {
			fmt.Fprintf(w, "call %d: gave up after %s: %v\n", i, since(start), err)
			continue
		}
		fmt.Fprintf(w, "call %d: %s after %s\n", i, v, since(start))
	}
	return nil
}

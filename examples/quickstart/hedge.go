package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 55, name: "hedge", title: "Hedge and Fallback: a second replica after 30ms, a cached answer when all fail", run: hedgeTour})
}

func hedgeTour(ctx context.Context, w io.Writer) error {
	// Two replicas behind one name; every third request lands on one that
	// stalls for a second.
	var requests atomic.Int32
	replica := func(ctx context.Context) (string, error) {
		n := requests.Add(1)
		d := 10 * time.Millisecond
		if n%3 == 1 {
			d = time.Second // the stalled replica
		}
		select {
		case <-time.After(d):
			return fmt.Sprintf("answer from request #%d", n), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	hedged := resilience.Hedge[string](logs, resilience.WithName("replicas"),
		resilience.WithHedgeDelay(30*time.Millisecond),
		resilience.WithHedgeBudget(resilience.NewRetryBudget(0.5, 10)))
	for i := 1; i <= 3; i++ {
		start := time.Now()
		v, err := resilience.Do(ctx, hedged, replica)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "call %d: %s after %s\n", i, v, since(start))
	}
	fmt.Fprintf(w, "3 calls made %d requests: a hedge for each call that landed on the stalled replica\n", requests.Load())

	fmt.Fprintln(w, "-- every replica down: the fallback answers from a cache")
	cached := resilience.Compose(
		resilience.Fallback(func(_ context.Context, err error) (string, error) {
			return "cached answer", nil
		}, logs, resilience.WithName("replicas")),
		resilience.Retry[string](resilience.WithAttempts(2), resilience.WithBackoff(resilience.Constant(10*time.Millisecond))),
	)
	v, err := resilience.Do(ctx, cached, func(context.Context) (string, error) { return "", errors.New("replicas down") })
	fmt.Fprintf(w, "call: %s, %v\n", v, err)
	return nil
}

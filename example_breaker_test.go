package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/faf87a20/resilience"
)

func ExampleNewBreaker() {
	mock := clock.NewMock() // a real program leaves the clock out
	breaker := resilience.NewBreaker(
		resilience.WithBreakerThreshold(2),
		resilience.WithBreakerCoolDown(time.Minute),
		resilience.WithClock(mock),
		resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
			if e.Kind == resilience.EventStateChange {
				fmt.Println("breaker:", e.From, "->", e.To)
			}
		})),
	)
	policy := resilience.Guarded[string](breaker)
	down := func(context.Context) (string, error) { return "", errors.New("down") }
	up := func(context.Context) (string, error) { return "up", nil }

	resilience.Do(context.Background(), policy, down)
	resilience.Do(context.Background(), policy, down)
	_, err := resilience.Do(context.Background(), policy, up)
	var open *resilience.BreakerOpenError
	if errors.As(err, &open) {
		fmt.Println("refused; a probe may go in", open.CoolDownLeft())
	}

	mock.Add(time.Minute)
	v, err := resilience.Do(context.Background(), policy, up) // the probe
	fmt.Println(v, err)
	// Output:
	// breaker: closed -> open
	// refused; a probe may go in 1m0s
	// breaker: open -> half-open
	// breaker: half-open -> closed
	// up <nil>
}

func ExampleWithBreakerFailureRate() {
	// Open when half of the last 20 calls failed, once 10 have been seen.
	breaker := resilience.NewBreaker(
		resilience.WithBreakerThreshold(0), // only the rate opens it
		resilience.WithBreakerFailureRate(0.5, 10, 20),
	)
	policy := resilience.Guarded[int](breaker)
	for i := range 10 {
		resilience.Do(context.Background(), policy, func(context.Context) (int, error) {
			if i%2 == 0 {
				return 0, errors.New("failed")
			}
			return i, nil
		})
	}
	m := breaker.Snapshot()
	fmt.Println(m.State, m.WindowCalls, m.FailureRate)
	// Output: open 10 0.5
}

func ExampleBreaker_Trip() {
	breaker := resilience.NewBreaker()
	breaker.Trip() // e.g. from an admin endpoint
	fmt.Println(breaker.State())
	breaker.Reset()
	fmt.Println(breaker.State())
	// Output:
	// open
	// closed
}

func ExampleWithBreakerClassifier() {
	// A "not found" is the service's answer: it neither opens the breaker
	// nor ends a run of failures.
	errNotFound := errors.New("not found")
	breaker := resilience.NewBreaker(
		resilience.WithBreakerThreshold(2),
		resilience.WithBreakerClassifier(func(err error) resilience.Outcome {
			if errors.Is(err, errNotFound) || errors.Is(err, context.Canceled) {
				return resilience.OutcomeIgnored
			}
			return resilience.OutcomeFailure
		}),
	)
	policy := resilience.Guarded[string](breaker)
	down := func(context.Context) (string, error) { return "", errors.New("down") }
	missing := func(context.Context) (string, error) { return "", errNotFound }

	resilience.Do(context.Background(), policy, down)
	resilience.Do(context.Background(), policy, missing)
	resilience.Do(context.Background(), policy, missing)
	fmt.Println(breaker.State(), breaker.Snapshot().ConsecutiveFailures)
	resilience.Do(context.Background(), policy, down)
	fmt.Println(breaker.State())
	// Output:
	// closed 1
	// open
}

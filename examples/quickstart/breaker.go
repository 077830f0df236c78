package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 30, name: "breaker", title: "Breaker: opens after 3 failures, probes again after 100ms", run: breakerTour})
}

func breakerTour(ctx context.Context, w io.Writer) error {
	// Down for its first four calls, then back.
	d := 2 * time.Millisecond
	svc := newService(fail(d), fail(d), fail(d), fail(d), ok(d), ok(d), ok(d))
	breaker := resilience.NewBreaker(
		logs, resilience.WithName("service"),
		resilience.WithBreakerThreshold(3),
		resilience.WithBreakerCoolDown(100*time.Millisecond),
	) // its state changes are logged at Warn
	policy := resilience.Guarded[string](breaker)
	for i := 1; i <= 9; i++ {
		// A call that finds the breaker half-open is its probe.
		label := fmt.Sprintf("call %d", i)
		if breaker.State() == resilience.BreakerHalfOpen {
			label += " (probe)"
		}
		v, err := resilience.Do(ctx, policy, svc.Call)
		var open *resilience.BreakerOpenError
		switch {
		case err == nil:
			fmt.Fprintf(w, "%s: %s\n", label, v)
		case errors.As(err, &open):
			fmt.Fprintf(w, "%s: refused at once, the service is spared (a probe may go in %s)\n", label, open.RetryAfter().Round(10*time.Millisecond))
		default:
			fmt.Fprintf(w, "%s: %v\n", label, err)
		}
		if i == 5 || i == 7 {
			time.Sleep(110 * time.Millisecond) // let the cool-down pass
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

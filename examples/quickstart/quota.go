package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 25, name: "quota", title: "Retry quota: what every Retry keeps, in a brownout and in an outage", run: quotaTour})
}

func quotaTour(ctx context.Context, w io.Writer) error {
	// A brownout: the service refuses 3 calls in 10. The quota retries every
	// refusal (a retry that succeeds gives back its cost); gRPC's throttle,
	// the default before it, runs dry and gives up on them.
	brownout := func() *service {
		return newService(fail(0), ok(0), ok(0), fail(0), ok(0), ok(0), fail(0), ok(0), ok(0), ok(0))
	}
	for _, p := range []struct {
		name   string
		policy resilience.Policy[string]
	}{
		{"the default quota", resilience.Retry[string](resilience.WithBackoff(resilience.Constant(0)))},
		{"gRPC's throttle", resilience.Retry[string](resilience.WithBackoff(resilience.Constant(0)),
			resilience.WithBudget(resilience.NewRetryThrottle(10, 0.2)))},
	} {
		svc, failed := brownout(), 0
		for range 100 {
			if _, err := resilience.Do(ctx, p.policy, svc.Call); err != nil {
				failed++
			}
		}
		fmt.Fprintf(w, "brownout (3 calls in 10 refused), %s: 100 requests, %d calls, %d failed\n", p.name, svc.calls.Load(), failed)
	}

	// An outage: the quota's 40 tokens pay for 8 retries, then it refuses
	// them, and says so once (the give-ups it causes log at Debug).
	warnings := resilience.WithObserver(resilience.NewSlogObserver(newLogger(w, slog.LevelWarn),
		resilience.WithSlogLevel(resilience.EventGiveUp, slog.LevelDebug)))
	policy := resilience.Retry[string](warnings, resilience.WithName("service"), resilience.WithBackoff(resilience.Constant(0)))
	down := newService(fail(0))
	var err error
	for range 20 {
		_, err = resilience.Do(ctx, policy, down.Call)
	}
	fmt.Fprintf(w, "outage: 20 requests, %d calls; the last one: %v\n", down.calls.Load(), err)
	return nil
}

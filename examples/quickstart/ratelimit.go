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
	register(scenario{order: 45, name: "ratelimit", title: "Rate limiter: an API quota of 10 calls a second, 3 at once", run: rateLimitTour})
}

func rateLimitTour(ctx context.Context, w io.Writer) error {
	svc := newService(ok(0))

	fmt.Fprintln(w, "-- no waiting: a burst of 5 calls, the quota lets 3 through and says when to come back")
	quota := resilience.NewRateLimiter(10, 3, logs, resilience.WithName("api"))
	guarded := resilience.Guarded[string](quota)
	for i := 1; i <= 5; i++ {
		v, err := resilience.Do(ctx, guarded, svc.Call)
		if hint, ok := resilience.RetryAfter(err); ok && errors.Is(err, resilience.ErrRateLimited) {
			fmt.Fprintf(w, "call %d: %v; a token comes in %s\n", i, err, hint.Round(time.Millisecond))
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "call %d: %s\n", i, v)
	}

	fmt.Fprintln(w, "-- a Retry outside the limiter waits exactly the refusal's hint")
	quota = resilience.NewRateLimiter(10, 3, logs, resilience.WithName("api"))
	policy := resilience.Compose(resilience.Retry[string](), resilience.Guarded[string](quota))
	start := time.Now()
	for i := 1; i <= 5; i++ {
		v, err := resilience.Do(ctx, policy, svc.Call)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "call %d: %s at %s\n", i, v, since(start))
	}

	fmt.Fprintln(w, "-- one quota per user: 1 call a second, 2 at once, each user their own")
	perUser := resilience.NewKeyedRateLimiter[string](1, 2, logs, resilience.WithName("per-user"))
	for _, user := range []string{"alice", "alice", "alice", "bob"} {
		fmt.Fprintf(w, "%s: allowed %v\n", user, perUser.Allow(user))
	}
	fmt.Fprintf(w, "the limiter holds %d users; a user idle long enough to refill is forgotten\n", perUser.Len())
	return nil
}

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
	register(scenario{order: 10, name: "timeout", title: "Timeout: no call takes longer than 50ms", run: timeoutTour})
}

func timeoutTour(ctx context.Context, w io.Writer) error {
	svc := newService(ok(10*time.Millisecond), hang(300*time.Millisecond), fail(20*time.Millisecond), ok(20*time.Millisecond))
	policy := resilience.Timeout[string](50*time.Millisecond, logs, resilience.WithName("service"))

	for i := 1; i <= 4; i++ {
		start := time.Now()
		v, err := resilience.Do(ctx, policy, svc.Call)
		switch {
		case err == nil:
			fmt.Fprintf(w, "call %d: %s after %s\n", i, v, since(start))
		case errors.Is(err, resilience.ErrTimeout):
			fmt.Fprintf(w, "call %d: %v after %s (the service ignored its context and is still running)\n", i, err, since(start))
		default:
			fmt.Fprintf(w, "call %d: failed after %s: %v\n", i, since(start), err)
		}
	}
	return nil
}

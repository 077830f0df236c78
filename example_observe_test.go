package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

func ExampleNewSlogObserver() {
	// A text handler on standard output, without the time so that the
	// output is the same on every run; a program would keep it.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: withoutTime}))
	o := resilience.NewSlogObserver(logger)
	logs := resilience.WithObserver(o)

	// One observer serves every component; WithName tells them apart.
	breaker := resilience.NewBreaker(logs, resilience.WithName("users-api"))
	users := resilience.Compose(
		resilience.Retry[string](logs, resilience.WithName("users-api")),
		resilience.Guarded[string](breaker),
	)
	_ = users

	// What the components report when the service is down, as the observer
	// logs it: retries at Info, a give-up and a state change at Warn, a
	// refusal at Debug (below this handler's level, so not logged).
	down := errors.New("connection refused")
	ctx := context.Background()
	for _, e := range []resilience.Event{
		{Kind: resilience.EventRetry, Component: "retry", Name: "users-api", Attempt: 1, Err: down, Wait: 100 * time.Millisecond},
		{Kind: resilience.EventRetry, Component: "retry", Name: "users-api", Attempt: 2, Err: down, Wait: 200 * time.Millisecond},
		{Kind: resilience.EventStateChange, Component: "breaker", Name: "users-api", From: resilience.BreakerClosed, To: resilience.BreakerOpen},
		{Kind: resilience.EventGiveUp, Component: "retry", Name: "users-api", Attempt: 3, Err: down, Reason: resilience.ErrRetriesExhausted},
		{Kind: resilience.EventRefused, Component: "breaker", Name: "users-api", Err: resilience.ErrBreakerOpen, Wait: 30 * time.Second},
	} {
		o.Observe(ctx, e)
	}
	fmt.Println("refusals are logged at", o.Level(resilience.EventRefused))
	// Output:
	// level=INFO msg=retry component=retry name=users-api attempt=1 error="connection refused" wait=100ms
	// level=INFO msg=retry component=retry name=users-api attempt=2 error="connection refused" wait=200ms
	// level=WARN msg=state-change component=breaker name=users-api from=closed to=open
	// level=WARN msg=give-up component=retry name=users-api attempt=3 error="connection refused" reason="resilience: retries exhausted"
	// refusals are logged at DEBUG
}

// withoutTime drops the time from log records, so that examples print the
// same on every run.
func withoutTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}

func ExampleMultiObserver() {
	var retries atomic.Int64
	count := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
		if e.Kind == resilience.EventRetry {
			retries.Add(1)
		}
	})
	logs := resilience.NewSlogObserver(slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: withoutTime})))
	both := resilience.MultiObserver(logs, count)
	policy := resilience.Retry[string](resilience.WithObserver(both), resilience.WithName("users-api"))
	_ = policy

	// A retry, as the policy reports it: logged and counted.
	both.Observe(context.Background(), resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users-api",
		Attempt: 1, Err: errors.New("connection refused"), Wait: time.Second})
	fmt.Println("retries counted:", retries.Load())
	// Output:
	// level=INFO msg=retry component=retry name=users-api attempt=1 error="connection refused" wait=1s
	// retries counted: 1
}

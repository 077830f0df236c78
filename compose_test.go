package resilience_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

// TestComposeReportsOneOutcome checks that a call through a composition is
// one EventCallEnded, from its outermost layer that reports outcomes,
// whatever the layers inside it, and that a guard used alone still reports
// its own.
func TestComposeReportsOneOutcome(t *testing.T) {
	ctx := context.Background()
	errBoom := errors.New("boom")
	fail := func(context.Context) (int, error) { return 0, errBoom }
	tests := []struct {
		name      string
		p         func(o resilience.Option) resilience.Policy[int]
		fn        resilience.Func[int]
		component string // of the one EventCallEnded
		wantErr   error
		attempt   int
	}{
		{"every layer observed, success", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(
				resilience.Timeout[int](time.Hour, o),
				resilience.Retry[int](o),
				resilience.Guarded[int](resilience.NewBreaker(o)),
				resilience.Guarded[int](resilience.NewBulkhead(4, o)),
			)
		}, okFunc, "timeout", nil, 0},
		{"every layer observed, retried failure", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(
				resilience.Retry[int](o, resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget()),
				resilience.Guarded[int](resilience.NewBreaker(o)),
				resilience.Guarded[int](resilience.NewBulkhead(4, o)),
				resilience.Guarded[int](resilience.NewRateLimiter(resilience.RateUnlimited, 1, o)),
				resilience.Guarded[int](resilience.NewAdaptiveLimiter(o)),
			)
		}, fail, "retry", errBoom, 3},
		{"outer layers unobserved", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(
				resilience.Timeout[int](time.Hour),
				resilience.Fallback(func(_ context.Context, err error) (int, error) { return 0, err }),
				resilience.Guarded[int](resilience.NewBreaker(o)),
				resilience.Guarded[int](resilience.NewBulkhead(4, o)),
			)
		}, fail, "breaker", errBoom, 0},
		{"nested compositions", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(
				resilience.Compose(resilience.Fallback(func(context.Context, error) (int, error) { return 2, nil }, o)),
				resilience.Compose(resilience.Hedge[int](o, resilience.WithHedgeDelay(time.Hour)), resilience.Guarded[int](resilience.NewBulkhead(1, o))),
			)
		}, fail, "fallback", nil, 0},
		{"a hedge outside", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(
				resilience.Hedge[int](o, resilience.WithHedgeDelay(time.Hour)),
				resilience.Retry[int](o),
				resilience.Guarded[int](resilience.NewBulkhead(4, o)),
			)
		}, okFunc, "hedge", nil, 0},
		{"keyed limiter inside a retry", func(o resilience.Option) resilience.Policy[int] {
			kl := resilience.NewKeyedRateLimiter[string](resilience.RateUnlimited, 1, o)
			return resilience.Compose(
				resilience.Retry[int](o),
				resilience.Guarded[int](kl.Guard(func(context.Context) string { return "k" })),
			)
		}, okFunc, "retry", nil, 1},
		{"refused by a full bulkhead inside", func(o resilience.Option) resilience.Policy[int] {
			b := resilience.NewBulkhead(1, o)
			if err := b.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			return resilience.Compose(resilience.Retry[int](o, resilience.WithAttempts(1)), resilience.Guarded[int](b))
		}, okFunc, "retry", resilience.ErrBulkheadFull, 1},
		{"a guard alone", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(resilience.Guarded[int](resilience.NewBulkhead(4, o)))
		}, okFunc, "bulkhead", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			events := &recorder{outcomes: true}
			p := tc.p(resilience.WithObserver(events))
			if _, err := p.Execute(ctx, tc.fn); !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Execute(…) = %v, want %v", err, tc.wantErr)
			}
			var ended []resilience.Event
			for _, e := range events.take() {
				if e.Kind == resilience.EventCallEnded {
					ended = append(ended, e)
				}
			}
			if len(ended) != 1 {
				t.Fatalf("EventCallEnded %d times: %+v, want once", len(ended), ended)
			}
			if e := ended[0]; e.Component != tc.component || e.Attempt != tc.attempt {
				t.Errorf("EventCallEnded from %q, attempt %d, want %q, %d", e.Component, e.Attempt, tc.component, tc.attempt)
			}
		})
	}
}

// TestComposeOutcomesAllocateNothing pins that a composition whose layers
// all report to an observer that asks for outcomes still allocates nothing
// on a call that succeeds.
func TestComposeOutcomesAllocateNothing(t *testing.T) {
	ctx := context.Background()
	o := resilience.WithObserver(&counter{Outcomes: true})
	p := resilience.Compose(
		resilience.Retry[int](o),
		resilience.Guarded[int](resilience.NewBreaker(o)),
		resilience.Guarded[int](resilience.NewBulkhead(4, o)),
		resilience.Guarded[int](resilience.NewRateLimiter(resilience.RateUnlimited, 1, o)),
	)
	if n := testing.AllocsPerRun(1000, func() { _, _ = p.Execute(ctx, okFunc) }); n != 0 {
		t.Errorf("Execute allocates %v times per call, want 0", n)
	}
}

package resilience_test

import (
	"context"
	"errors"
	"testing"

	"github.com/faf87a20/resilience"
)

var errBench = errors.New("transient")

// failTwice fails every first and second call of three.
func failTwice() resilience.Func[int] {
	n := 0
	return func(context.Context) (int, error) {
		n++
		if n%3 != 0 {
			return 0, errBench
		}
		return n, nil
	}
}

// countEvents is the cheapest useful observer: it counts events by kind.
type countEvents struct {
	n        [32]int
	outcomes bool
}

func (c *countEvents) Observe(_ context.Context, e resilience.Event) { c.n[e.Kind]++ }
func (c *countEvents) ObserveOutcomes() bool                         { return c.outcomes }

func BenchmarkRetry(b *testing.B) {
	ctx := context.Background()
	zeroWait := resilience.WithBackoff(resilience.Constant(0))
	cases := []struct {
		name string
		opts []resilience.RetryOption
		fn   func() resilience.Func[int]
	}{
		{"success", nil, func() resilience.Func[int] { return okFunc }},
		{"success-observed", []resilience.RetryOption{resilience.WithObserver(&countEvents{})}, func() resilience.Func[int] { return okFunc }},
		{"success-outcomes", []resilience.RetryOption{resilience.WithObserver(&countEvents{outcomes: true})}, func() resilience.Func[int] { return okFunc }},
		{"success-with-budget", []resilience.RetryOption{resilience.WithBudget(resilience.NewRetryBudget(0.1, 10))}, func() resilience.Func[int] { return okFunc }},
		{"success-no-throttle", []resilience.RetryOption{resilience.WithoutBudget()}, func() resilience.Func[int] { return okFunc }},
		// Two failures in three attempts would empty a throttle: these
		// measure the retry loop itself.
		{"fail-fail-succeed", []resilience.RetryOption{zeroWait, resilience.WithoutBudget()}, failTwice},
		{"fail-fail-succeed-observed", []resilience.RetryOption{zeroWait, resilience.WithoutBudget(), resilience.WithObserver(&countEvents{})}, failTwice},
		{"fail-fail-succeed-outcomes", []resilience.RetryOption{zeroWait, resilience.WithoutBudget(), resilience.WithObserver(&countEvents{outcomes: true})}, failTwice},
		{"fail-fail-succeed-budget", []resilience.RetryOption{zeroWait, resilience.WithBudget(resilience.NewRetryBudget(2, 0))}, failTwice},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p := resilience.Retry[int](c.opts...)
			fn := c.fn()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = p.Execute(ctx, fn)
			}
		})
	}
	b.Run("success-parallel", func(b *testing.B) {
		p := resilience.Retry[int]()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
}

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

func BenchmarkRetry(b *testing.B) {
	ctx := context.Background()
	b.Run("success", func(b *testing.B) {
		p := resilience.Retry[int]()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("fail-fail-succeed", func(b *testing.B) {
		p := resilience.Retry[int](resilience.WithBackoff(resilience.Constant(0)))
		fn := failTwice()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, fn)
		}
	})
	b.Run("success-with-budget", func(b *testing.B) {
		p := resilience.Retry[int](resilience.WithBudget(resilience.NewRetryBudget(0.1, 10)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
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

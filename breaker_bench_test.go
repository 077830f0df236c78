package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

func BenchmarkBreaker(b *testing.B) {
	ctx := context.Background()
	b.Run("closed-success", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("closed-success-parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("open-refusal", func(b *testing.B) {
		br := resilience.NewBreaker()
		br.Trip()
		p := resilience.Guarded[int](br)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("closed-success-rate-window", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerFailureRate(0.5, 10, 100)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("closed-success-rate-window-parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerFailureRate(0.5, 10, 100)))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("closed-success-time-window", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerFailureRateWindow(0.5, 10, time.Minute)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	observer := resilience.ObserverFunc(func(context.Context, resilience.Event) {})
	b.Run("closed-success-observed", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithObserver(observer)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("open-refusal-observed", func(b *testing.B) {
		br := resilience.NewBreaker(resilience.WithObserver(observer))
		br.Trip()
		p := resilience.Guarded[int](br)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
}

// floorPolicy is the least a Policy can cost: it calls fn, or refuses.
type floorPolicy struct{ refuse error }

func (p floorPolicy) Execute(ctx context.Context, fn resilience.Func[int]) (int, error) {
	if p.refuse != nil {
		return 0, p.refuse
	}
	return fn(ctx)
}

// BenchmarkPolicyFloor is the floor the Breaker rows stand beside: a call
// through a Policy that calls fn, and one through a Policy that refuses.
func BenchmarkPolicyFloor(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"call", floorPolicy{}},
		{"refuse", floorPolicy{refuse: resilience.ErrBreakerOpen}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = bc.p.Execute(ctx, okFunc)
			}
		})
	}
}

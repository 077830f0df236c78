package resilience_test

import (
	"context"
	"testing"

	"github.com/faf87a20/resilience"
)

// TestAdaptiveGuardsAllocateNothing pins the cost of a call that succeeds
// through the adaptive guards by Guarded: no allocation.
func TestAdaptiveGuardsAllocateNothing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"AdaptiveLimiter", resilience.Guarded[int](resilience.NewAdaptiveLimiter())},
		{"AdaptiveThrottler", resilience.Guarded[int](resilience.NewAdaptiveThrottler())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, func() { _, _ = tc.p.Execute(ctx, okFunc) }); n != 0 {
				t.Errorf("Execute allocates %v times, want 0", n)
			}
		})
	}
}

func BenchmarkAdaptiveLimiter(b *testing.B) {
	ctx := context.Background()
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveLimiter())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded/parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 1000), resilience.WithAdaptiveInitial(1000)))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("Enter", func(b *testing.B) {
		l := resilience.NewAdaptiveLimiter()
		b.ReportAllocs()
		for b.Loop() {
			done, err := l.Enter(ctx)
			if err == nil {
				done(nil)
			}
		}
	})
}

func BenchmarkAdaptiveThrottler(b *testing.B) {
	ctx := context.Background()
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveThrottler())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded/parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveThrottler())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
}

package resilience_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/faf87a20/resilience"
)

// BenchmarkBulkhead measures a call that finds a free slot, beside a
// buffered channel used as a semaphore, the usual hand-made bulkhead.
func BenchmarkBulkhead(b *testing.B) {
	ctx := context.Background()
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBulkhead(64))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded-observed", func(b *testing.B) {
		// Events only: a call that finds a free slot reports nothing.
		var o benchObserver
		p := resilience.Guarded[int](resilience.NewBulkhead(64, resilience.WithObserver(&o)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded-outcomes", func(b *testing.B) {
		// Every call ends with an EventCallEnded.
		o := benchObserver{outcomes: true}
		p := resilience.Guarded[int](resilience.NewBulkhead(64, resilience.WithObserver(&o)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("TryAcquire+Release", func(b *testing.B) {
		bh := resilience.NewBulkhead(64)
		b.ReportAllocs()
		for b.Loop() {
			if bh.TryAcquire() {
				bh.Release()
			}
		}
	})
	b.Run("chan-semaphore", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		b.ReportAllocs()
		for b.Loop() {
			sem <- struct{}{}
			_, _ = okFunc(ctx)
			<-sem
		}
	})
	b.Run("Guarded-parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBulkhead(64))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("chan-semaphore-parallel", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				sem <- struct{}{}
				_, _ = okFunc(ctx)
				<-sem
			}
		})
	})
	b.Run("Guarded-contended-wait", func(b *testing.B) {
		// Two slots for every goroutine RunParallel starts on 2 cores x 4.
		p := resilience.Guarded[int](resilience.NewBulkhead(2, resilience.WithBulkheadWait(1<<62)))
		b.SetParallelism(4)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
}

// benchObserver counts events; outcomes says whether it asks for
// EventCallEnded.
type benchObserver struct {
	n        atomic.Int64
	outcomes bool
}

func (o *benchObserver) Observe(context.Context, resilience.Event) { o.n.Add(1) }
func (o *benchObserver) ObserveOutcomes() bool                     { return o.outcomes }

package resilience_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

func echoBatch(_ context.Context, items []int) ([]int, error) { return items, nil }

// BenchmarkBatcher measures the cost per item with 256 callers, batches of
// at most 100 and a 1ms wait, and the latency one lone caller adds.
func BenchmarkBatcher(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []resilience.BatchOption
	}{
		{"256-callers", nil},
		{"256-callers-observed", []resilience.BatchOption{resilience.WithObserver(&benchObserver{outcomes: true})}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := append([]resilience.BatchOption{resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(time.Millisecond)}, tc.opts...)
			bt := resilience.NewBatcher(echoBatch, opts...)
			defer bt.Close(ctx)
			b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = bt.Do(ctx, 1)
				}
			})
		})
	}
	b.Run("single-caller-no-wait", func(b *testing.B) {
		bt := resilience.NewBatcher(echoBatch, resilience.WithBatchMaxWait(0))
		defer bt.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = bt.Do(ctx, 1)
		}
	})
	b.Run("loader-256-callers", func(b *testing.B) {
		l := resilience.NewLoader(func(_ context.Context, keys []int) (map[int]int, error) {
			m := make(map[int]int, len(keys))
			for _, k := range keys {
				m[k] = k
			}
			return m, nil
		}, resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(time.Millisecond))
		defer l.Close(ctx)
		b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			k := 0
			for pb.Next() {
				k++
				_, _ = l.Load(ctx, k%1000)
			}
		})
	})
}

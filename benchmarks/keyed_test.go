package benchmarks

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/sony/gobreaker/v2"

	"github.com/faf87a20/resilience"
)

// keyCtx is the context key of the keyed rows' keys.
type keyCtx struct{}

// keyedContexts returns a context for each of the keys, each carrying its
// key, made once: a server has its request's context at hand.
func keyedContexts(keys []string) []context.Context {
	ctxs := make([]context.Context, len(keys))
	for i, k := range keys {
		ctxs[i] = context.WithValue(context.Background(), keyCtx{}, k)
	}
	return ctxs
}

func keyFromCtx(ctx context.Context) string { return ctx.Value(keyCtx{}).(string) }

// BenchmarkKeyedBreaker calls through a breaker of each of 10,000 keys in
// turn, every key's breaker live: resilience's Keyed of Breakers, the same
// call through one Breaker shared by every key (what a key costs), and
// the usual hand-made form with gobreaker, a sync.Map from key to breaker.
func BenchmarkKeyedBreaker(b *testing.B) {
	ctxs := keyedContexts(userKeys())
	run := func(b *testing.B, call func(ctx context.Context)) {
		for _, ctx := range ctxs {
			call(ctx)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			call(ctxs[i])
			if i++; i == len(ctxs) {
				i = 0
			}
		}
	}
	b.Run("resilience", func(b *testing.B) {
		k := resilience.NewKeyed(keyFromCtx, func(string) *resilience.Breaker { return resilience.NewBreaker() },
			resilience.WithKeyedMaxKeys(len(ctxs)))
		p := resilience.Guarded[int](k)
		run(b, func(ctx context.Context) { _, _ = p.Execute(ctx, workCtx) })
	})
	b.Run("resilience-unkeyed", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker())
		run(b, func(ctx context.Context) { _, _ = p.Execute(ctx, workCtx) })
	})
	b.Run("gobreaker-sync.Map", func(b *testing.B) {
		var m sync.Map
		run(b, func(ctx context.Context) {
			key := keyFromCtx(ctx)
			v, ok := m.Load(key)
			if !ok {
				v, _ = m.LoadOrStore(key, gobreaker.NewCircuitBreaker[int](gobreaker.Settings{Name: key}))
			}
			_, _ = v.(*gobreaker.CircuitBreaker[int]).Execute(work)
		})
	})
}

// BenchmarkKeyedBreakerParallel is BenchmarkKeyedBreaker from every core.
func BenchmarkKeyedBreakerParallel(b *testing.B) {
	ctxs := keyedContexts(userKeys())
	k := resilience.NewKeyed(keyFromCtx, func(string) *resilience.Breaker { return resilience.NewBreaker() },
		resilience.WithKeyedMaxKeys(len(ctxs)))
	p := resilience.Guarded[int](k)
	for _, ctx := range ctxs {
		_, _ = p.Execute(ctx, workCtx)
	}
	b.Run("resilience", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				_, _ = p.Execute(ctxs[i], workCtx)
				if i++; i == len(ctxs) {
					i = 0
				}
			}
		})
	})
}

// BenchmarkKeyedIdleBytes reports the memory a Keyed of Breakers holds
// per idle key: 10,000 keys made, their bytes on the heap divided by their
// number (the metric B/key; ns/op is the cost of making a key).
func BenchmarkKeyedIdleBytes(b *testing.B) {
	ctxs := keyedContexts(userKeys())
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		k := resilience.NewKeyed(keyFromCtx, func(string) *resilience.Breaker { return resilience.NewBreaker() },
			resilience.WithKeyedMaxKeys(len(ctxs)))
		p := resilience.Guarded[int](k)
		for _, ctx := range ctxs {
			_, _ = p.Execute(ctx, workCtx)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(ctxs)), "B/key")
		runtime.KeepAlive(k)
	}
}

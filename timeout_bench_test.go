package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

func okFunc(context.Context) (int, error) { return 1, nil }

// BenchmarkTimeout compares the policy's two modes with context.WithTimeout
// alone, the least any timeout can cost, and with context.WithTimeout plus a
// goroutine that runs fn and ends the context when fn returns: the least a
// timeout that returns at the deadline can cost.
func BenchmarkTimeout(b *testing.B) {
	ctx := context.Background()
	b.Run("context.WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = okFunc(tctx)
			cancel()
		}
	})
	b.Run("context.WithTimeout+goroutine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			go func() {
				_, _ = okFunc(tctx)
				cancel()
			}()
			<-tctx.Done()
		}
	})
	b.Run("cooperative", func(b *testing.B) {
		p := resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("default", func(b *testing.B) {
		p := resilience.Timeout[int](time.Second)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
}

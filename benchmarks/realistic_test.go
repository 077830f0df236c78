package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fsbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	fsretry "github.com/failsafe-go/failsafe-go/retrypolicy"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"

	"github.com/faf87a20/resilience"
)

// clientCall does what a network client does with the context it is
// given: it derives a context of its own for the request and checks it.
func clientCall(ctx context.Context) (int, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := cctx.Err(); err != nil {
		return 0, err
	}
	return 1, nil
}

// requestCalls returns, for each library, a call under a server request's
// context (cancelable, as net/http's is) of clientCall, through a timeout
// alone (timeout) or through timeout + retry + breaker + bulkhead.
func requestCalls(composed bool) []struct {
	name string
	call func(ctx context.Context) (int, error)
} {
	ours := func(opts ...resilience.TimeoutOption) resilience.Policy[int] {
		if !composed {
			return resilience.Timeout[int](time.Second, opts...)
		}
		return resilience.Compose(
			resilience.Timeout[int](time.Second, opts...),
			resilience.Retry[int](),
			resilience.Guarded[int](resilience.NewBreaker()),
			resilience.Guarded[int](resilience.NewBulkhead(64)),
		)
	}
	def, coop := ours(), ours(resilience.WithTimeoutCooperative())
	fs := failsafe.With[int](fstimeout.New[int](time.Second))
	if composed {
		fs = failsafe.With[int](fstimeout.New[int](time.Second), fsretry.NewWithDefaults[int](),
			fsbreaker.NewWithDefaults[int](), fsbulkhead.New[int](64))
	}
	fsCall := func(exec failsafe.Execution[int]) (int, error) { return clientCall(exec.Context()) }
	return []struct {
		name string
		call func(ctx context.Context) (int, error)
	}{
		{"resilience", func(ctx context.Context) (int, error) { return def.Execute(ctx, clientCall) }},
		{"resilience-cooperative", func(ctx context.Context) (int, error) { return coop.Execute(ctx, clientCall) }},
		{"failsafe-go", func(ctx context.Context) (int, error) { return fs.WithContext(ctx).GetWithExecution(fsCall) }},
	}
}

// BenchmarkTimeoutChild: a 1s timeout under a request's context around a
// call that derives a context of its own, beside context.WithTimeout and
// context.WithTimeoutCause doing the same, and a bare hand-off to a parked
// goroutine (with the latter, the default mode's floor).
func BenchmarkTimeoutChild(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("context.WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = clientCall(tctx)
			cancel()
		}
	})
	b.Run("handoff", handoffFloor)
	b.Run("context.WithTimeoutCause", func(b *testing.B) { causeFloor(b, ctx, clientCall) })
	for _, c := range requestCalls(false) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.call(ctx)
			}
		})
	}
}

// BenchmarkComposedChild: timeout + retry + breaker + bulkhead under a
// request's context around a call that derives a context of its own.
func BenchmarkComposedChild(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range requestCalls(true) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.call(ctx)
			}
		})
	}
}

// BenchmarkComposedChildParallel is BenchmarkComposedChild under
// RunParallel, each goroutine with a request context of its own.
func BenchmarkComposedChildParallel(b *testing.B) {
	for _, c := range requestCalls(true) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				for pb.Next() {
					_, _ = c.call(ctx)
				}
			})
		})
	}
}

package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsfallback "github.com/failsafe-go/failsafe-go/fallback"
	fshedge "github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/faf87a20/resilience"
)

// BenchmarkHedgeFast: a call that answers before the hedge delay, the
// common case a hedge must not make dearer. Our default Hedge (the delay
// follows the 95th percentile), one with a fixed delay, failsafe-go's with
// a fixed delay, and our cooperative Timeout, the yardstick of the row's
// target, beside them.
func BenchmarkHedgeFast(b *testing.B) {
	ctx := context.Background()
	quantile := resilience.Hedge[int]()
	fixed := resilience.Hedge[int](resilience.WithHedgeDelay(time.Second))
	coop := resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative())
	fs := failsafe.With[int](fshedge.NewWithDelay[int](time.Second))
	for _, c := range []struct {
		name string
		call func() (int, error)
	}{
		{"resilience", func() (int, error) { return quantile.Execute(ctx, workCtx) }},
		{"resilience-fixed", func() (int, error) { return fixed.Execute(ctx, workCtx) }},
		{"timeout-cooperative", func() (int, error) { return coop.Execute(ctx, workCtx) }},
		{"failsafe-go", func() (int, error) { return fs.Get(work) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.call()
			}
		})
	}
}

// callee is a call as a policy gets it: a function value the compiler
// cannot see through.
var callee resilience.Func[int]

// BenchmarkFallbackSuccess: a call that succeeds through a Fallback, beside
// the bare call. The bare call goes through a function value, as a call
// handed to any policy does: a call of workCtx by name would be inlined
// into the loop and cost nothing of its own.
func BenchmarkFallbackSuccess(b *testing.B) {
	ctx := context.Background()
	callee = workCtx
	ours := resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil })
	fs := failsafe.With[int](fsfallback.NewWithResult[int](0))
	for _, c := range []struct {
		name string
		call func() (int, error)
	}{
		{"direct", func() (int, error) { return callee(ctx) }},
		{"resilience", func() (int, error) { return ours.Execute(ctx, workCtx) }},
		{"failsafe-go", func() (int, error) { return fs.Get(work) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.call()
			}
		})
	}
}

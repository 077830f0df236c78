package benchmarks

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsretry "github.com/failsafe-go/failsafe-go/retrypolicy"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

// counting is the cheapest useful observer: it counts events.
type counting struct{ n atomic.Int64 }

func (c *counting) Observe(context.Context, resilience.Event) { c.n.Add(1) }

// newOTel returns an Observer recording with the OpenTelemetry SDK into a
// manual reader, which is never read: the cost is the measurements'.
func newOTel(b *testing.B, opts ...resilienceotel.Option) *resilienceotel.Observer {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o, err := resilienceotel.NewObserver(append([]resilienceotel.Option{resilienceotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return o
}

// observedRetries are the columns of the observed rows: a retry of 3
// attempts with zero waits, unobserved and under each observer. The slog
// observer's logger is enabled at Error only, so its retries (Info) are
// skipped after asking the handler.
func observedRetries(b *testing.B) []struct {
	name string
	p    resilience.Policy[int]
} {
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	zero := resilience.WithBackoff(resilience.Constant(0))
	unthrottled := resilience.WithoutBudget() // two failures a call would empty a throttle
	named := resilience.WithName("users")
	return []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"resilience", resilience.Retry[int](zero, unthrottled)},
		{"resilience-counting", resilience.Retry[int](zero, unthrottled, named, resilience.WithObserver(&counting{}))},
		{"resilience-slog", resilience.Retry[int](zero, unthrottled, named, resilience.WithObserver(resilience.NewSlogObserver(quiet)))},
		{"resilience-otel", resilience.Retry[int](zero, unthrottled, named, resilience.WithObserver(newOTel(b)))},
	}
}

// failsafeObserved is failsafe-go's retry policy (3 attempts, no delay) with
// listeners on every retry and failure.
func failsafeObserved() failsafe.Executor[int] {
	var n atomic.Int64
	count := func(failsafe.ExecutionEvent[int]) { n.Add(1) }
	return failsafe.With[int](fsretry.NewBuilder[int]().OnRetry(count).OnFailure(count).Build())
}

func BenchmarkObservedRetrySuccess(b *testing.B) {
	ctx := context.Background()
	for _, c := range observedRetries(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.p.Execute(ctx, workCtx)
			}
		})
	}
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeObserved()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(work)
		}
	})
}

func BenchmarkObservedRetryFailFailSucceed(b *testing.B) {
	ctx := context.Background()
	for _, c := range observedRetries(b) {
		b.Run(c.name, func(b *testing.B) {
			fn := (&flaky{}).callCtx
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.p.Execute(ctx, fn)
			}
		})
	}
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeObserved()
		fn := (&flaky{}).call
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(fn)
		}
	})
}

// BenchmarkObserveEvent is the cost of one event (a retry) in each
// observer, whatever the components emit.
func BenchmarkObserveEvent(b *testing.B) {
	e := resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users",
		Attempt: 1, Err: errTransient, Wait: 100 * time.Millisecond}
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	loud := slog.New(slog.NewTextHandler(io.Discard, nil))
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	spanCtx, span := tp.Tracer("bench").Start(context.Background(), "call")
	b.Cleanup(func() { span.End() })
	ctx := context.Background()
	otel := newOTel(b)
	bare, err := resilienceotel.NewObserver(resilienceotel.WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		o    resilience.Observer
	}{
		{"resilience-counting", ctx, &counting{}},
		{"resilience-slog-disabled", ctx, resilience.NewSlogObserver(quiet)},
		{"resilience-slog-text", ctx, resilience.NewSlogObserver(loud)},
		{"resilience-otel-noop", ctx, bare}, // the observer's own work
		{"resilience-otel", ctx, otel},
		{"resilience-otel-span", spanCtx, newOTel(b, resilienceotel.WithSpanEvents())},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.o.Observe(c.ctx, e)
			}
		})
	}
}

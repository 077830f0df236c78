package benchmarks

import (
	"context"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	fslimiter "github.com/failsafe-go/failsafe-go/adaptivelimiter"
	fsthrottler "github.com/failsafe-go/failsafe-go/adaptivethrottler"

	"github.com/faf87a20/resilience"
)

// A call that succeeds through an adaptive concurrency limiter and through
// a client-side adaptive throttle, each with its defaults: ours by Guarded
// and by Enter and done, failsafe-go's by its executor and by its permits
// (TryAcquirePermit and Record, the shape of Enter and done). The limits
// are the highest each allows to start with, so that no call of the
// parallel rows is refused.

type adaptiveCall struct {
	name string
	call func() (int, error)
}

// enterDone calls work between g's Enter and done.
func enterDone(g resilience.Guard) func() (int, error) {
	ctx := context.Background()
	return func() (int, error) {
		done, err := g.Enter(ctx)
		if err != nil {
			return 0, err
		}
		v, err := work()
		done(err)
		return v, err
	}
}

// adaptiveCalls are the columns of a row: ours by Guarded and by Enter and
// done, failsafe-go's by its executor and by its permit.
func adaptiveCalls(ours resilience.Guard, fs failsafe.Executor[int], permit func() (int, error)) []adaptiveCall {
	ctx := context.Background()
	guarded := resilience.Guarded[int](ours)
	return []adaptiveCall{
		{"resilience", func() (int, error) { return guarded.Execute(ctx, workCtx) }},
		{"resilience-enter", enterDone(ours)},
		{"failsafe-go", func() (int, error) { return fs.Get(work) }},
		{"failsafe-go-permit", permit},
	}
}

func adaptiveLimiters() []adaptiveCall {
	fs := fslimiter.NewBuilder[int]().WithLimits(1, 1000, 1000).Build()
	return adaptiveCalls(resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(1000)), failsafe.With[int](fs), func() (int, error) {
		p, ok := fs.TryAcquirePermit()
		if !ok {
			return 0, fslimiter.ErrExceeded
		}
		v, err := work()
		p.Record()
		return v, err
	})
}

func adaptiveThrottlers() []adaptiveCall {
	fs := fsthrottler.NewWithDefaults[int]()
	return adaptiveCalls(resilience.NewAdaptiveThrottler(), failsafe.With[int](fs), func() (int, error) {
		if !fs.TryAcquirePermit() {
			return 0, errRefused
		}
		v, err := work()
		fs.RecordResult(v)
		return v, err
	})
}

func benchSerial(b *testing.B, calls []adaptiveCall) {
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.call()
			}
		})
	}
}

func benchParallel(b *testing.B, calls []adaptiveCall) {
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = c.call()
				}
			})
		})
	}
}

func BenchmarkAdaptiveLimiter(b *testing.B)           { benchSerial(b, adaptiveLimiters()) }
func BenchmarkAdaptiveLimiterParallel(b *testing.B)   { benchParallel(b, adaptiveLimiters()) }
func BenchmarkAdaptiveThrottler(b *testing.B)         { benchSerial(b, adaptiveThrottlers()) }
func BenchmarkAdaptiveThrottlerParallel(b *testing.B) { benchParallel(b, adaptiveThrottlers()) }

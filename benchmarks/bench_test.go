// Package benchmarks measures resilience beside its peers, doing the same
// work in each row: run ./run for the table.
package benchmarks

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	retrygo "github.com/avast/retry-go/v5"
	cenkalti "github.com/cenkalti/backoff/v7"
	eabatcher "github.com/eapache/go-resiliency/batcher"
	eabreaker "github.com/eapache/go-resiliency/breaker"
	eadeadline "github.com/eapache/go-resiliency/deadline"
	earetrier "github.com/eapache/go-resiliency/retrier"
	easemaphore "github.com/eapache/go-resiliency/semaphore"
	"github.com/failsafe-go/failsafe-go"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fsbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	fsretry "github.com/failsafe-go/failsafe-go/retrypolicy"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"github.com/graph-gophers/dataloader/v7"
	"github.com/sony/gobreaker/v2"

	"github.com/faf87a20/resilience"
)

var errTransient = errors.New("transient")

func work() (int, error)                   { return 1, nil }
func workCtx(context.Context) (int, error) { return 1, nil }

// flaky fails the first and second of every three calls.
type flaky struct{ n int }

func (f *flaky) call() (int, error) {
	f.n++
	if f.n%3 != 0 {
		return 0, errTransient
	}
	return f.n, nil
}
func (f *flaky) callCtx(context.Context) (int, error) { return f.call() }
func (f *flaky) run() error                           { _, err := f.call(); return err }

// passPolicy is the floor of any policy in this library's shape: a
// Policy whose Execute just calls fn. Retry and Breaker on a call that
// succeeds are measured beside it.
type passPolicy struct{}

func (passPolicy) Execute(ctx context.Context, fn resilience.Func[int]) (int, error) { return fn(ctx) }

// refusePolicy is the floor of a refusal in this library's shape: a Policy
// whose Execute refuses at once, without calling fn. An open Breaker is
// measured beside it.
type refusePolicy struct{}

var errRefused = errors.New("refused")

func (refusePolicy) Execute(context.Context, resilience.Func[int]) (int, error) { return 0, errRefused }

// policyFloor and refusalFloor return the floors as the library's
// constructors return its policies, as a resilience.Policy made in a
// function the compiler does not inline, so that a call of Execute goes
// through the interface, as it does for the library's policies.
//
//go:noinline
func policyFloor() resilience.Policy[int] { return passPolicy{} }

//go:noinline
func refusalFloor() resilience.Policy[int] { return refusePolicy{} }

func BenchmarkBare(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = work()
		}
	})
	b.Run("resilience", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = resilience.Do[int](ctx, nil, workCtx)
		}
	})
}

func BenchmarkRetrySuccess(b *testing.B) {
	ctx := context.Background()
	b.Run("resilience", func(b *testing.B) {
		p := resilience.Retry[int]()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("policy-floor", func(b *testing.B) {
		p := policyFloor()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafe.With[int](fsretry.NewWithDefaults[int]())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(work)
		}
	})
	b.Run("go-resiliency", func(b *testing.B) {
		r := earetrier.New(earetrier.ConstantBackoff(2, 0), nil)
		b.ReportAllocs()
		for b.Loop() {
			_ = r.RunCtx(ctx, func(context.Context) error { _, err := work(); return err })
		}
	})
	b.Run("cenkalti-backoff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = cenkalti.Retry(ctx, work, cenkalti.WithBackOff(&cenkalti.ZeroBackOff{}), cenkalti.WithMaxTries(3))
		}
	})
	b.Run("retry-go", func(b *testing.B) {
		r := retrygo.NewWithData[int](retrygo.Attempts(3), retrygo.Delay(0), retrygo.DelayType(retrygo.FixedDelay))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = r.Do(work)
		}
	})
}

// BenchmarkRetrySuccessParallel is BenchmarkRetrySuccess under RunParallel
// for the policy floor, failsafe-go and go-resiliency (the leanest peer),
// each with one retrier shared by every goroutine.
func BenchmarkRetrySuccessParallel(b *testing.B) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func() (int, error)
	}{
		{"resilience", func() func() (int, error) {
			p := resilience.Retry[int]()
			return func() (int, error) { return p.Execute(ctx, workCtx) }
		}()},
		{"policy-floor", func() func() (int, error) {
			p := policyFloor()
			return func() (int, error) { return p.Execute(ctx, workCtx) }
		}()},
		{"failsafe-go", func() func() (int, error) {
			ex := failsafe.With[int](fsretry.NewWithDefaults[int]())
			return func() (int, error) { return ex.Get(work) }
		}()},
		{"go-resiliency", func() func() (int, error) {
			r := earetrier.New(earetrier.ConstantBackoff(2, 0), nil)
			return func() (int, error) {
				return 0, r.RunCtx(ctx, func(context.Context) error { _, err := work(); return err })
			}
		}()},
	}
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

func BenchmarkRetryFailFailSucceed(b *testing.B) {
	ctx := context.Background()
	b.Run("resilience", func(b *testing.B) {
		// No retry throttle: every call fails twice, which a throttle would
		// soon stop retrying, and the peers have none.
		p := resilience.Retry[int](resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget())
		fn := (&flaky{}).callCtx
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, fn)
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafe.With[int](fsretry.NewWithDefaults[int]())
		fn := (&flaky{}).call
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(fn)
		}
	})
	b.Run("go-resiliency", func(b *testing.B) {
		r := earetrier.New(earetrier.ConstantBackoff(2, 0), nil)
		fn := (&flaky{}).run
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Run(fn)
		}
	})
	b.Run("cenkalti-backoff", func(b *testing.B) {
		fn := (&flaky{}).call
		b.ReportAllocs()
		for b.Loop() {
			_, _ = cenkalti.Retry(ctx, fn, cenkalti.WithBackOff(&cenkalti.ZeroBackOff{}), cenkalti.WithMaxTries(3))
		}
	})
	b.Run("retry-go", func(b *testing.B) {
		r := retrygo.NewWithData[int](retrygo.Attempts(3), retrygo.Delay(0), retrygo.DelayType(retrygo.FixedDelay))
		fn := (&flaky{}).call
		b.ReportAllocs()
		for b.Loop() {
			_, _ = r.Do(fn)
		}
	})
}

// breakers returns a closed breaker of each library, as a call to run.
func breakers() []struct {
	name string
	call func() (int, error)
} {
	ctx := context.Background()
	ours := resilience.Guarded[int](resilience.NewBreaker())
	floor := policyFloor()
	gb := gobreaker.NewCircuitBreaker[int](gobreaker.Settings{})
	fs := failsafe.With[int](fsbreaker.NewWithDefaults[int]())
	ea := eabreaker.New(5, 1, 30*time.Second)
	return []struct {
		name string
		call func() (int, error)
	}{
		{"resilience", func() (int, error) { return ours.Execute(ctx, workCtx) }},
		{"policy-floor", func() (int, error) { return floor.Execute(ctx, workCtx) }},
		{"gobreaker", func() (int, error) { return gb.Execute(work) }},
		{"failsafe-go", func() (int, error) { return fs.Get(work) }},
		{"go-resiliency", func() (int, error) { return 0, ea.Run(func() error { _, err := work(); return err }) }},
	}
}

func BenchmarkBreakerSuccess(b *testing.B) {
	for _, br := range breakers() {
		b.Run(br.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = br.call()
			}
		})
	}
}

func BenchmarkBreakerSuccessParallel(b *testing.B) {
	for _, br := range breakers() {
		b.Run(br.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = br.call()
				}
			})
		})
	}
}

func BenchmarkBreakerOpenRefusal(b *testing.B) {
	ctx := context.Background()
	fail := func() (int, error) { return 0, errTransient }
	b.Run("resilience", func(b *testing.B) {
		br := resilience.NewBreaker()
		br.Trip()
		p := resilience.Guarded[int](br)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("policy-refusal-floor", func(b *testing.B) {
		p := refusalFloor()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("gobreaker", func(b *testing.B) {
		gb := gobreaker.NewCircuitBreaker[int](gobreaker.Settings{Timeout: time.Hour})
		for range 10 {
			_, _ = gb.Execute(fail)
		}
		b.ReportAllocs()
		for b.Loop() {
			_, _ = gb.Execute(work)
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		cb := fsbreaker.NewBuilder[int]().WithDelay(time.Hour).Build()
		cb.Open()
		ex := failsafe.With[int](cb)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(work)
		}
	})
	b.Run("go-resiliency", func(b *testing.B) {
		ea := eabreaker.New(1, 1, time.Hour)
		_ = ea.Run(func() error { return errTransient })
		b.ReportAllocs()
		for b.Loop() {
			_ = ea.Run(func() error { _, err := work(); return err })
		}
	})
}

func BenchmarkBulkhead(b *testing.B) {
	ctx := context.Background()
	b.Run("resilience", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBulkhead(64))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafe.With[int](fsbulkhead.New[int](64))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(work)
		}
	})
	b.Run("go-resiliency", func(b *testing.B) {
		s := easemaphore.New(64, 0)
		b.ReportAllocs()
		for b.Loop() {
			if s.Acquire() == nil {
				_, _ = work()
				s.Release()
			}
		}
	})
	b.Run("channel", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		b.ReportAllocs()
		for b.Loop() {
			sem <- struct{}{}
			_, _ = work()
			<-sem
		}
	})
}

func BenchmarkTimeout(b *testing.B) {
	ctx := context.Background()
	b.Run("context.WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = workCtx(tctx)
			cancel()
		}
	})
	// The least a timeout that returns at the deadline can cost: the context
	// and a goroutine that runs the call and ends the context when it returns.
	b.Run("context.WithTimeout+goroutine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			go func() {
				_, _ = workCtx(tctx)
				cancel()
			}()
			<-tctx.Done()
		}
	})
	// The floors of the two modes: the context alone, with the cause a
	// timeout gives it (the cooperative mode's), and that context beside a
	// bare hand-off of the call to a parked goroutine (the default mode's:
	// the sum of the two columns).
	b.Run("handoff", handoffFloor)
	b.Run("context.WithTimeoutCause", func(b *testing.B) { causeFloor(b, ctx, workCtx) })
	b.Run("context.WithTimeoutCause+handoff", func(b *testing.B) { causeHandoffFloor(b, ctx) })
	b.Run("resilience", func(b *testing.B) {
		p := resilience.Timeout[int](time.Second)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("resilience-cooperative", func(b *testing.B) {
		p := resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, workCtx)
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafe.With[int](fstimeout.New[int](time.Second))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ex.Get(work)
		}
	})
	b.Run("go-resiliency", func(b *testing.B) {
		d := eadeadline.New(time.Second)
		b.ReportAllocs()
		for b.Loop() {
			_ = d.Run(func(<-chan struct{}) error { _, err := work(); return err })
		}
	})
}

// causeFloor measures the floor of a timeout that runs fn in the caller's
// goroutine: a context made with context.WithTimeoutCause under parent,
// fn called with it, and the context ended.
func causeFloor(b *testing.B, parent context.Context, fn func(context.Context) (int, error)) {
	b.ReportAllocs()
	for b.Loop() {
		tctx, cancel := context.WithTimeoutCause(parent, time.Second, resilience.ErrTimeout)
		_, _ = fn(tctx)
		cancel()
	}
}

// handoffFloor measures the least that any timeout that returns at the
// deadline and reuses its goroutines adds to its context: handing the call
// to a bare parked goroutine and waiting for its answer on a channel pair,
// two switches of goroutine, with no context and no timer. The default
// mode's floor is this column plus context.WithTimeoutCause's.
func handoffFloor(b *testing.B) {
	in := make(chan func() int)
	out := make(chan int)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case f := <-in:
				out <- f()
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	f := func() int { v, _ := work(); return v }
	b.ReportAllocs()
	for b.Loop() {
		in <- f
		<-out
	}
}

// causeHandoffFloor measures the two floors of the default mode in one
// call, as the mode makes them: the context made with
// context.WithTimeoutCause under parent, handed with the call to a bare
// parked goroutine, which calls fn with it and answers on a channel, and
// the context ended. It costs more than the sum of the two columns
// measured apart: the goroutine that wakes touches the context the caller
// has just made, and the caller the timer the context set.
func causeHandoffFloor(b *testing.B, parent context.Context) {
	in := make(chan context.Context)
	out := make(chan int)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case c := <-in:
				v, _ := workCtx(c)
				out <- v
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	b.ReportAllocs()
	for b.Loop() {
		tctx, cancel := context.WithTimeoutCause(parent, time.Second, resilience.ErrTimeout)
		in <- tctx
		<-out
		cancel()
	}
}

// composed returns timeout+retry+breaker+bulkhead of each library.
func composed() []struct {
	name string
	call func() (int, error)
} {
	ctx := context.Background()
	ours := func(opts ...resilience.TimeoutOption) resilience.Policy[int] {
		return resilience.Compose(
			resilience.Timeout[int](time.Second, opts...),
			resilience.Retry[int](),
			resilience.Guarded[int](resilience.NewBreaker()),
			resilience.Guarded[int](resilience.NewBulkhead(64)),
		)
	}
	def, coop := ours(), ours(resilience.WithTimeoutCooperative())
	fs := failsafe.With[int](fstimeout.New[int](time.Second), fsretry.NewWithDefaults[int](),
		fsbreaker.NewWithDefaults[int](), fsbulkhead.New[int](64))
	return []struct {
		name string
		call func() (int, error)
	}{
		{"resilience", func() (int, error) { return def.Execute(ctx, workCtx) }},
		{"resilience-cooperative", func() (int, error) { return coop.Execute(ctx, workCtx) }},
		{"failsafe-go", func() (int, error) { return fs.Get(work) }},
	}
}

func BenchmarkComposed(b *testing.B) {
	for _, c := range composed() {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.call()
			}
		})
	}
}

func BenchmarkComposedParallel(b *testing.B) {
	for _, c := range composed() {
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

// BenchmarkBatchPerItem: 256 callers, batches of at most 100, a 1ms wait;
// the cost of one item. Keys count up in each caller (no shared counter,
// whose contention would swamp what is measured), and dataloader's cache is
// off, so every library does the same work.
func BenchmarkBatchPerItem(b *testing.B) {
	ctx := context.Background()
	parallelism := max(1, 256/runtime.GOMAXPROCS(0))
	b.Run("resilience", func(b *testing.B) {
		bt := resilience.NewBatcher(func(_ context.Context, items []int64) ([]int64, error) { return items, nil },
			resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(time.Millisecond))
		defer bt.Close(ctx)
		b.SetParallelism(parallelism)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for key := int64(0); pb.Next(); key++ {
				_, _ = bt.Do(ctx, key)
			}
		})
	})
	b.Run("dataloader", func(b *testing.B) {
		l := dataloader.NewBatchedLoader(func(_ context.Context, keys []int64) []*dataloader.Result[int64] {
			out := make([]*dataloader.Result[int64], len(keys))
			for i, k := range keys {
				out[i] = &dataloader.Result[int64]{Data: k}
			}
			return out
		}, dataloader.WithBatchCapacity[int64, int64](100), dataloader.WithWait[int64, int64](time.Millisecond),
			dataloader.WithCache[int64, int64](&dataloader.NoCache[int64, int64]{}))
		b.SetParallelism(parallelism)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for key := int64(0); pb.Next(); key++ {
				_, _ = l.Load(ctx, key)()
			}
		})
	})
	b.Run("go-resiliency", func(b *testing.B) {
		// No batch size limit and no per-item results: every caller of a
		// batch shares one error.
		bt := eabatcher.New(time.Millisecond, func([]interface{}) error { return nil })
		b.SetParallelism(parallelism)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for key := int64(0); pb.Next(); key++ {
				_ = bt.Run(key)
			}
		})
		bt.Shutdown(true)
	})
}

package resilienceotel_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

// TestComponentsEndToEnd runs scripted scenarios against real components
// observed by one Observer (with outcomes), each call in a span of its
// own, and checks every data point and every span event they produce.
// Time is a synctest bubble's, so durations are exact.
func TestComponentsEndToEnd(t *testing.T) {
	up := func(context.Context) (int, error) { return 1, nil }
	down := func(context.Context) (int, error) { return 0, errDown }
	waitCtx := func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	sum := func(v ...float64) (s float64) {
		for _, x := range v {
			s += x
		}
		return s
	}
	tests := []struct {
		name string
		// run makes the calls; span runs one call in a span of the name.
		run        func(t *testing.T, h *harness, o resilience.Option, span func(name string, call func(context.Context)))
		wantMetric map[string]float64
		wantEvents []string
	}{
		{
			name: "breaker: closed, open, half-open, closed",
			run: func(t *testing.T, h *harness, o resilience.Option, span func(string, func(context.Context))) {
				b := resilience.NewBreaker(o, resilience.WithName("api"),
					resilience.WithBreakerThreshold(2), resilience.WithBreakerCoolDown(time.Second))
				register(t, h, "api", b)
				p := resilience.Guarded[int](b)
				span("fail-1", func(ctx context.Context) { _, _ = p.Execute(ctx, down) })
				span("fail-2", func(ctx context.Context) { _, _ = p.Execute(ctx, down) })
				span("refused", func(ctx context.Context) { _, _ = p.Execute(ctx, up) })
				// Past the cool-down, so that its timer has fired whatever the
				// order of the goroutines woken at the same instant.
				time.Sleep(time.Second + time.Millisecond)
				span("probe", func(ctx context.Context) { _, _ = p.Execute(ctx, up) })
				require.Equal(t, resilience.BreakerClosed, b.State())
			},
			wantMetric: map[string]float64{
				"resilience.guard.health{health=ok,name=api}":                                        1,
				"resilience.guard.health{health=warning,name=api}":                                   0,
				"resilience.guard.health{health=critical,name=api}":                                  0,
				"resilience.guard.shedding{name=api}":                                                1, // registered, it told the registry of its refusal
				"resilience.breaker.transitions{breaker.state=open,component=breaker,name=api}":      1,
				"resilience.breaker.transitions{breaker.state=half_open,component=breaker,name=api}": 1,
				"resilience.breaker.transitions{breaker.state=closed,component=breaker,name=api}":    1,
				"resilience.breaker.state{breaker.state=closed,name=api}":                            1,
				"resilience.breaker.state{breaker.state=open,name=api}":                              0,
				"resilience.breaker.state{breaker.state=half_open,name=api}":                         0,
				"resilience.breaker.failure_ratio{name=api}":                                         0,
				"resilience.breaker.consecutive_failures{name=api}":                                  0,
				"resilience.refusals{component=breaker,name=api,reason=breaker_open}":                1,
				"resilience.call.duration.count{component=breaker,name=api,outcome=failure}":         2,
				"resilience.call.duration.sum{component=breaker,name=api,outcome=failure}":           0,
				"resilience.call.duration.count{component=breaker,name=api,outcome=success}":         1,
				"resilience.call.duration.sum{component=breaker,name=api,outcome=success}":           0,
			},
			wantEvents: []string{
				"fail-2: resilience.breaker.state_change resilience.breaker.from=closed resilience.breaker.to=open resilience.component=breaker resilience.name=api",
				"refused: resilience.refused error.message=resilience: circuit breaker open resilience.component=breaker resilience.name=api resilience.reason=breaker_open resilience.retry_after=1.001",
				"probe: resilience.breaker.state_change resilience.breaker.from=open resilience.breaker.to=half_open resilience.component=breaker resilience.name=api",
				"probe: resilience.breaker.state_change resilience.breaker.from=half_open resilience.breaker.to=closed resilience.component=breaker resilience.name=api",
			},
		},
		{
			name: "bulkhead: a wait admitted, a wait run out, a refusal",
			run: func(t *testing.T, h *harness, o resilience.Option, span func(string, func(context.Context))) {
				b := resilience.NewBulkhead(1, o, resilience.WithName("db"),
					resilience.WithBulkheadWait(20*time.Millisecond), resilience.WithBulkheadQueue(1))
				register(t, h, "db", b)
				p := resilience.Guarded[int](b)
				require.True(t, b.TryAcquire())
				go func() {
					time.Sleep(5 * time.Millisecond)
					b.Release()
				}()
				span("admitted", func(ctx context.Context) { _, _ = p.Execute(ctx, up) })
				require.True(t, b.TryAcquire())
				var wg sync.WaitGroup
				wg.Go(func() { span("ran-out", func(ctx context.Context) { _, _ = p.Execute(ctx, up) }) })
				time.Sleep(time.Millisecond) // the first waits; the queue is full
				span("queue-full", func(ctx context.Context) { _, _ = p.Execute(ctx, up) })
				wg.Wait()
			},
			wantMetric: map[string]float64{
				"resilience.waiting{component=bulkhead,name=db}":                             0,
				"resilience.wait.duration.count{component=bulkhead,name=db,outcome=success}": 1,
				"resilience.wait.duration.sum{component=bulkhead,name=db,outcome=success}":   0.005,
				"resilience.wait.duration.count{component=bulkhead,name=db,outcome=refused}": 1,
				"resilience.wait.duration.sum{component=bulkhead,name=db,outcome=refused}":   0.02,
				"resilience.refusals{component=bulkhead,name=db,reason=bulkhead_full}":       2,
				"resilience.call.duration.count{component=bulkhead,name=db,outcome=success}": 1,
				"resilience.call.duration.sum{component=bulkhead,name=db,outcome=success}":   0.005,
				"resilience.call.duration.count{component=bulkhead,name=db,outcome=refused}": 2,
				"resilience.call.duration.sum{component=bulkhead,name=db,outcome=refused}":   0.02,
				"resilience.guard.health{health=ok,name=db}":                                 0,
				"resilience.guard.health{health=warning,name=db}":                            1, // full
				"resilience.guard.health{health=critical,name=db}":                           0,
				"resilience.guard.shedding{name=db}":                                         1, // it reports to h alone; the registry counts its refusals
				"resilience.bulkhead.in_flight{name=db}":                                     1, // still held
				"resilience.bulkhead.limit{name=db}":                                         1,
				"resilience.bulkhead.waiting{name=db}":                                       0,
			},
			wantEvents: []string{
				"queue-full: resilience.refused error.message=resilience: bulkhead full resilience.component=bulkhead resilience.name=db resilience.reason=bulkhead_full",
				"ran-out: resilience.refused error.message=resilience: bulkhead full resilience.component=bulkhead resilience.name=db resilience.reason=bulkhead_full",
			},
		},
		{
			name: "timeout",
			run: func(t *testing.T, h *harness, o resilience.Option, span func(string, func(context.Context))) {
				p := resilience.Timeout[int](10*time.Millisecond, o, resilience.WithName("users"))
				span("slow", func(ctx context.Context) { _, _ = p.Execute(ctx, waitCtx) })
				span("fast", func(ctx context.Context) { _, _ = p.Execute(ctx, up) })
			},
			wantMetric: map[string]float64{
				"resilience.timeouts{component=timeout,name=users}":                            1,
				"resilience.call.duration.count{component=timeout,name=users,outcome=timeout}": 1,
				"resilience.call.duration.sum{component=timeout,name=users,outcome=timeout}":   0.01,
				"resilience.call.duration.count{component=timeout,name=users,outcome=success}": 1,
				"resilience.call.duration.sum{component=timeout,name=users,outcome=success}":   0,
			},
			wantEvents: []string{
				"slow: resilience.timeout resilience.component=timeout resilience.name=users resilience.timeout=0.01",
			},
		},
		{
			name: "batcher: batch size and duration",
			run: func(t *testing.T, h *harness, o resilience.Option, span func(string, func(context.Context))) {
				b := resilience.NewBatcher(func(_ context.Context, in []int) ([]int, error) {
					time.Sleep(3 * time.Millisecond)
					return in, nil
				}, o, resilience.WithName("users"), resilience.WithBatchMaxSize(3), resilience.WithBatchMaxWait(time.Hour))
				var wg sync.WaitGroup
				for i := range 3 {
					wg.Go(func() { span("item", func(ctx context.Context) { _, _ = b.Do(ctx, i) }) })
				}
				wg.Wait()
				require.NoError(t, b.Close(context.Background()))
				b2 := resilience.NewBatcher(func(_ context.Context, in []int) ([]int, error) {
					time.Sleep(time.Millisecond)
					return nil, errDown
				}, o, resilience.WithName("users"), resilience.WithBatchMaxWait(0))
				span("item", func(ctx context.Context) { _, _ = b2.Do(ctx, 9) })
				require.NoError(t, b2.Close(context.Background()))
			},
			wantMetric: map[string]float64{
				"resilience.batch.size.count{component=batcher,name=users,outcome=success}":     1,
				"resilience.batch.size.sum{component=batcher,name=users,outcome=success}":       3,
				"resilience.batch.duration.count{component=batcher,name=users,outcome=success}": 1,
				"resilience.batch.duration.sum{component=batcher,name=users,outcome=success}":   0.003,
				"resilience.batch.size.count{component=batcher,name=users,outcome=failure}":     1,
				"resilience.batch.size.sum{component=batcher,name=users,outcome=failure}":       1,
				"resilience.batch.duration.count{component=batcher,name=users,outcome=failure}": 1,
				"resilience.batch.duration.sum{component=batcher,name=users,outcome=failure}":   0.001,
				"resilience.call.duration.count{component=batcher,name=users,outcome=success}":  3,
				"resilience.call.duration.sum{component=batcher,name=users,outcome=success}":    sum(0.003, 0.003, 0.003), // as the SDK adds them
				"resilience.call.duration.count{component=batcher,name=users,outcome=failure}":  1,
				"resilience.call.duration.sum{component=batcher,name=users,outcome=failure}":    0.001,
			},
			wantEvents: nil, // a batch belongs to no caller's span
		},
		{
			name: "hedge",
			run: func(t *testing.T, h *harness, o resilience.Option, span func(string, func(context.Context))) {
				p := resilience.Hedge[int](o, resilience.WithName("search"), resilience.WithHedgeDelay(10*time.Millisecond))
				var n atomic.Int32
				span("hedged", func(ctx context.Context) {
					v, err := p.Execute(ctx, func(ctx context.Context) (int, error) {
						if n.Add(1) == 1 {
							return waitCtx(ctx) // slow: the hedge wins
						}
						return 2, nil
					})
					require.NoError(t, err)
					assert.Equal(t, 2, v)
				})
				span("fast", func(ctx context.Context) { _, _ = p.Execute(ctx, up) })
			},
			wantMetric: map[string]float64{
				"resilience.hedges{component=hedge,name=search}":                              1,
				"resilience.call.duration.count{component=hedge,name=search,outcome=success}": 2,
				"resilience.call.duration.sum{component=hedge,name=search,outcome=success}":   0.01, // the hedged call waited out the delay
			},
			wantEvents: []string{
				"hedged: resilience.hedge resilience.attempt=2 resilience.component=hedge resilience.hedge.delay=0.01 resilience.name=search",
			},
		},
		{
			name: "fallback: after a failure, after a refusal",
			run: func(t *testing.T, h *harness, o resilience.Option, span func(string, func(context.Context))) {
				br := resilience.NewBreaker(o, resilience.WithName("api"))
				br.Trip()
				cached := func(context.Context, error) (int, error) { return 7, nil }
				p := resilience.Fallback(cached, o, resilience.WithName("api"))
				guarded := resilience.Compose(p, resilience.Guarded[int](br))
				span("failed", func(ctx context.Context) { _, _ = p.Execute(ctx, down) })
				span("open", func(ctx context.Context) {
					v, err := guarded.Execute(ctx, up)
					require.NoError(t, err)
					assert.Equal(t, 7, v)
				})
			},
			wantMetric: map[string]float64{
				"resilience.fallbacks{component=fallback,name=api,reason=other}":                1,
				"resilience.fallbacks{component=fallback,name=api,reason=breaker_open}":         1,
				"resilience.refusals{component=breaker,name=api,reason=breaker_open}":           1,
				"resilience.breaker.transitions{breaker.state=open,component=breaker,name=api}": 1,
				// Both calls succeed: the fallback answered them.
				"resilience.call.duration.count{component=fallback,name=api,outcome=success}": 2,
				"resilience.call.duration.sum{component=fallback,name=api,outcome=success}":   0,
			},
			wantEvents: []string{
				"failed: resilience.fallback error.message=down resilience.component=fallback resilience.name=api resilience.reason=other",
				"open: resilience.refused error.message=resilience: circuit breaker open resilience.component=breaker resilience.name=api resilience.reason=breaker_open resilience.retry_after=30.001",
				"open: resilience.fallback error.message=resilience: circuit breaker open resilience.component=fallback resilience.name=api resilience.reason=breaker_open",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, resilienceotel.WithSpanEvents())
				tracer := h.tp.Tracer("test")
				span := func(name string, call func(context.Context)) {
					ctx, s := tracer.Start(context.Background(), name)
					defer s.End()
					call(ctx)
				}
				tc.run(t, h, resilience.WithObserver(h.obs), span)
				synctest.Wait()
				assert.Equal(t, tc.wantMetric, h.metrics(t))
				assert.Equal(t, tc.wantEvents, h.events())
			})
		})
	}
}

// register registers g under name in a registry of its own, which h's
// Observer reports until the test ends.
func register(t *testing.T, h *harness, name string, g resilience.Inspector) {
	t.Helper()
	reg := resilience.NewRegistry()
	require.NoError(t, reg.Register(name, g))
	h.watch(t, reg)
}

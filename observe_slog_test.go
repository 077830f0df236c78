package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textLogger logs to w at level and above, without the time.
func textLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func TestSlogObserver(t *testing.T) {
	errDown := errors.New("down")
	shed := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(1))
	_, _ = shed.Enter(context.Background())
	_, errShed := shed.Enter(resilience.WithPriority(context.Background(), resilience.PrioritySheddable))
	tests := []struct {
		name string
		e    resilience.Event
		want string
	}{
		{"attempt failed",
			resilience.Event{Kind: resilience.EventAttemptFailed, Component: "retry", Name: "users", Attempt: 1, Err: errDown},
			`level=DEBUG msg=attempt-failed component=retry name=users attempt=1 error=down`},
		{"retry",
			resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users", Attempt: 2, Err: errDown, Wait: 40 * time.Millisecond},
			`level=INFO msg=retry component=retry name=users attempt=2 error=down wait=40ms`},
		{"retry at once",
			resilience.Event{Kind: resilience.EventRetry, Component: "retry", Attempt: 1, Err: errDown},
			`level=INFO msg=retry component=retry attempt=1 error=down wait=0s`},
		{"give up",
			resilience.Event{Kind: resilience.EventGiveUp, Component: "retry", Name: "users", Attempt: 3, Err: errDown, Reason: resilience.ErrRetriesExhausted},
			`level=WARN msg=give-up component=retry name=users attempt=3 error=down reason="resilience: retries exhausted"`},
		{"give up: the budget refused, logged once when it ran out",
			resilience.Event{Kind: resilience.EventGiveUp, Component: "retry", Name: "users", Attempt: 1, Err: errDown, Reason: resilience.ErrRetryBudgetExhausted},
			`level=DEBUG msg=give-up component=retry name=users attempt=1 error=down reason="resilience: retry budget exhausted"`},
		{"exhausted",
			resilience.Event{Kind: resilience.EventExhausted, Component: resilience.KindRetryBudget, Name: "users", Attempt: 1, Err: resilience.ErrRetryBudgetExhausted},
			`level=WARN msg=exhausted component=retry-budget name=users attempt=1 error="resilience: retry budget exhausted"`},
		{"replenished",
			resilience.Event{Kind: resilience.EventReplenished, Component: resilience.KindRetryBudget, Name: "users", Attempt: 1, Duration: 3 * time.Second},
			`level=INFO msg=replenished component=retry-budget name=users attempt=1 duration=3s`},
		{"timeout",
			resilience.Event{Kind: resilience.EventTimeout, Component: "timeout", Name: "users", Wait: 2 * time.Second},
			`level=INFO msg=timeout component=timeout name=users timeout=2s`},
		{"state change",
			resilience.Event{Kind: resilience.EventStateChange, Component: "breaker", Name: "users", From: resilience.BreakerClosed, To: resilience.BreakerOpen},
			`level=WARN msg=state-change component=breaker name=users from=closed to=open`},
		{"refused with a hint",
			resilience.Event{Kind: resilience.EventRefused, Component: "breaker", Err: resilience.ErrBreakerOpen, Wait: 30 * time.Second},
			`level=DEBUG msg=refused component=breaker error="resilience: circuit breaker open" retry_after=30s`},
		{"refused without a hint",
			resilience.Event{Kind: resilience.EventRefused, Component: "bulkhead", Err: resilience.ErrBulkheadFull},
			`level=DEBUG msg=refused component=bulkhead error="resilience: bulkhead full"`},
		{"refused by priority",
			resilience.Event{Kind: resilience.EventRefused, Component: "adaptive-limiter", Err: errShed, Wait: time.Millisecond},
			`level=DEBUG msg=refused component=adaptive-limiter error="resilience: adaptive limit exceeded" priority=sheddable retry_after=1ms`},
		{"limit changed",
			resilience.Event{Kind: resilience.EventLimitChanged, Component: "adaptive-limiter", Name: "api", OldLimit: 20, NewLimit: 25, Reason: errors.New("latency")},
			`level=INFO msg=limit-changed component=adaptive-limiter name=api reason=latency from=20 to=25`},
		{"wait started",
			resilience.Event{Kind: resilience.EventWaitStarted, Component: "bulkhead", Name: "db"},
			`level=DEBUG msg=wait-started component=bulkhead name=db`},
		{"wait ended",
			resilience.Event{Kind: resilience.EventWaitEnded, Component: "bulkhead", Name: "db", Wait: 5 * time.Millisecond},
			`level=DEBUG msg=wait-ended component=bulkhead name=db wait=5ms`},
		{"batch sent",
			resilience.Event{Kind: resilience.EventBatchSent, Component: "batcher", Name: "users", Size: 42, Duration: 3 * time.Millisecond},
			`level=DEBUG msg=batch-sent component=batcher name=users size=42 duration=3ms`},
		{"discarded",
			resilience.Event{Kind: resilience.EventDiscarded, Component: "timeout"},
			`level=DEBUG msg=discarded component=timeout`},
		{"late panic",
			resilience.Event{Kind: resilience.EventLatePanic, Component: "timeout", Panic: &resilience.PanicError{Value: "boom", Stack: []byte("main.f()")}},
			`level=ERROR msg=late-panic component=timeout panic=boom stack=main.f()`},
		{"call ended",
			resilience.Event{Kind: resilience.EventCallEnded, Component: "retry", Attempt: 1, Duration: time.Millisecond},
			`level=DEBUG msg=call-ended component=retry attempt=1 duration=1ms`},
		{"fallback",
			resilience.Event{Kind: resilience.EventFallback, Component: "fallback", Name: "users", Err: errDown},
			`level=INFO msg=fallback component=fallback name=users error=down`},
		{"hedge",
			resilience.Event{Kind: resilience.EventHedge, Component: "hedge", Attempt: 2, Wait: 10 * time.Millisecond},
			`level=DEBUG msg=hedge component=hedge attempt=2 wait=10ms`},
		{"a kind from a later version",
			resilience.Event{Kind: resilience.EventKind(200), Component: "hedge", Attempt: 2},
			`level=INFO msg=EventKind(200) component=hedge attempt=2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := resilience.NewSlogObserver(textLogger(&buf, slog.LevelDebug))
			o.Observe(context.Background(), tc.e)
			assert.Equal(t, tc.want+"\n", buf.String())
		})
	}
}

func TestSlogObserverLevels(t *testing.T) {
	var buf bytes.Buffer
	o := resilience.NewSlogObserver(textLogger(&buf, slog.LevelInfo),
		resilience.WithSlogLevel(resilience.EventRetry, slog.LevelDebug),
		resilience.WithSlogLevel(resilience.EventRefused, slog.LevelWarn),
	)
	ctx := context.Background()
	o.Observe(ctx, resilience.Event{Kind: resilience.EventRetry, Component: "retry", Attempt: 1})
	o.Observe(ctx, resilience.Event{Kind: resilience.EventAttemptFailed, Component: "retry", Attempt: 1})
	o.Observe(ctx, resilience.Event{Kind: resilience.EventRefused, Component: "bulkhead"})
	assert.Equal(t, "level=WARN msg=refused component=bulkhead\n", buf.String())
	assert.Equal(t, slog.LevelDebug, o.Level(resilience.EventRetry))
	assert.Equal(t, slog.LevelWarn, o.Level(resilience.EventGiveUp))
	assert.Equal(t, slog.LevelInfo, o.Level(resilience.EventKind(0)), "an unknown kind")
	assert.False(t, o.ObserveOutcomes(), "outcomes asked without a level for call-ended")

	var zero resilience.SlogObserver
	assert.Equal(t, slog.LevelInfo, zero.Level(resilience.EventGiveUp), "the zero observer's level")

	withOutcomes := resilience.NewSlogObserver(nil, resilience.WithSlogLevel(resilience.EventCallEnded, slog.LevelInfo))
	assert.True(t, withOutcomes.ObserveOutcomes(), "outcomes not asked with a level for call-ended")
}

// TestSlogObserverDefaultLogger: a nil logger is slog.Default at each event.
func TestSlogObserverDefaultLogger(t *testing.T) {
	o := resilience.NewSlogObserver(nil)
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(textLogger(&buf, slog.LevelInfo))
	defer slog.SetDefault(prev)
	o.Observe(context.Background(), resilience.Event{Kind: resilience.EventGiveUp, Component: "retry", Attempt: 3})
	assert.Equal(t, "level=WARN msg=give-up component=retry attempt=3\n", buf.String())
}

func TestSlogObserverBadOptions(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil option", func() { resilience.NewSlogObserver(nil, nil) }, "resilience: NewSlogObserver: option is nil"},
		{"kind zero", func() { resilience.WithSlogLevel(0, slog.LevelInfo) }, "resilience: WithSlogLevel: unknown event kind EventKind(0)"},
		{"unknown kind", func() { resilience.WithSlogLevel(99, slog.LevelInfo) }, "resilience: WithSlogLevel: unknown event kind EventKind(99)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// discardHandler is enabled at every level and drops every record without
// looking at it, so that only the observer's own allocations count.
type discardHandler struct{ enabled bool }

func (h discardHandler) Enabled(context.Context, slog.Level) bool { return h.enabled }
func (discardHandler) Handle(context.Context, slog.Record) error  { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h discardHandler) WithGroup(string) slog.Handler            { return h }

// TestSlogObserverAllocatesNothing pins that an event allocates nothing in
// the observer, whether its level is disabled or enabled.
func TestSlogObserverAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	errDown := errors.New("down")
	retry := resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users", Attempt: 2, Err: errDown, Wait: time.Second}
	change := resilience.Event{Kind: resilience.EventStateChange, Component: "breaker", Name: "users", From: resilience.BreakerClosed, To: resilience.BreakerOpen}
	tests := []struct {
		name    string
		enabled bool
		e       resilience.Event
	}{
		{"disabled", false, retry},
		{"enabled", true, retry},
		{"enabled, state change", true, change},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := resilience.NewSlogObserver(slog.New(discardHandler{enabled: tc.enabled}))
			if allocs := testing.AllocsPerRun(1000, func() { o.Observe(ctx, tc.e) }); allocs != 0 {
				t.Errorf("Observe allocates %v times per event, want 0", allocs)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the goroutines of a component.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSuffix(b.buf.String(), "\n"), "\n")
}

// TestSlogObserverOnComponents: real components, observed by a SlogObserver
// that logs at Debug and above, write exactly these lines, in this order.
// Each scenario runs in a synctest bubble, so durations are exact.
func TestSlogObserverOnComponents(t *testing.T) {
	ctx := context.Background()
	errDown := errors.New("down")
	down := func(context.Context) (int, error) { return 0, errDown }
	up := okFunc
	waitCtx := func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	tests := []struct {
		name string
		run  func(t *testing.T, o resilience.Option)
		want []string
	}{
		{"timeout", func(t *testing.T, o resilience.Option) {
			p := resilience.Timeout[int](10*time.Millisecond, o, resilience.WithName("users"))
			_, err := p.Execute(ctx, waitCtx)
			require.ErrorIs(t, err, resilience.ErrTimeout)
			_, err = p.Execute(ctx, up) // a success logs nothing
			require.NoError(t, err)
		}, []string{
			`level=INFO msg=timeout component=timeout name=users timeout=10ms`,
		}},
		{"breaker: closed, open, half-open, closed", func(t *testing.T, o resilience.Option) {
			clk := clock.NewMock()
			b := resilience.NewBreaker(o, resilience.WithName("api"), resilience.WithClock(clk),
				resilience.WithBreakerThreshold(2), resilience.WithBreakerCoolDown(time.Second))
			p := resilience.Guarded[int](b)
			for range 2 {
				_, _ = p.Execute(ctx, down)
			}
			clk.Add(400 * time.Millisecond)
			_, err := p.Execute(ctx, up)
			require.ErrorIs(t, err, resilience.ErrBreakerOpen)
			clk.Add(600 * time.Millisecond)
			_, err = p.Execute(ctx, up) // the probe
			require.NoError(t, err)
			assert.Equal(t, resilience.BreakerClosed, b.State())
		}, []string{
			`level=WARN msg=state-change component=breaker name=api from=closed to=open`,
			`level=DEBUG msg=refused component=breaker name=api error="resilience: circuit breaker open" retry_after=601ms`, // 600ms left and a margin of 1ms
			`level=WARN msg=state-change component=breaker name=api from=open to=half-open`,
			`level=WARN msg=state-change component=breaker name=api from=half-open to=closed`,
		}},
		{"bulkhead: refusal", func(t *testing.T, o resilience.Option) {
			b := resilience.NewBulkhead(1, o, resilience.WithName("db"))
			require.True(t, b.TryAcquire())
			_, err := resilience.Guarded[int](b).Execute(ctx, up)
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			b.Release()
		}, []string{
			`level=DEBUG msg=refused component=bulkhead name=db error="resilience: bulkhead full"`,
		}},
		{"bulkhead: waits, admitted and run out", func(t *testing.T, o resilience.Option) {
			b := resilience.NewBulkhead(1, o, resilience.WithName("db"), resilience.WithBulkheadWait(20*time.Millisecond))
			p := resilience.Guarded[int](b)
			require.True(t, b.TryAcquire())
			go func() {
				time.Sleep(5 * time.Millisecond)
				b.Release()
			}()
			_, err := p.Execute(ctx, up) // gets the slot after 5ms
			require.NoError(t, err)
			require.True(t, b.TryAcquire())
			_, err = p.Execute(ctx, up) // waits 20ms in vain
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			b.Release()
		}, []string{
			`level=DEBUG msg=wait-started component=bulkhead name=db`,
			`level=DEBUG msg=wait-ended component=bulkhead name=db wait=5ms`,
			`level=DEBUG msg=wait-started component=bulkhead name=db`,
			`level=DEBUG msg=wait-ended component=bulkhead name=db error="resilience: bulkhead full" wait=20ms`,
			`level=DEBUG msg=refused component=bulkhead name=db error="resilience: bulkhead full"`,
		}},
		{"batcher and loader", func(t *testing.T, o resilience.Option) {
			b := resilience.NewBatcher(func(_ context.Context, in []int) ([]int, error) {
				time.Sleep(3 * time.Millisecond)
				return in, nil
			}, o, resilience.WithName("users"), resilience.WithBatchMaxSize(3), resilience.WithBatchMaxWait(time.Hour))
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Go(func() { _, _ = b.Do(ctx, i) })
			}
			wg.Wait()
			require.NoError(t, b.Close(ctx))
			l := resilience.NewLoader(func(_ context.Context, keys []int) (map[int]int, error) {
				return nil, errDown
			}, o, resilience.WithBatchMaxWait(0))
			_, err := l.Load(ctx, 1)
			require.ErrorIs(t, err, errDown)
			require.NoError(t, l.Close(ctx))
		}, []string{
			`level=DEBUG msg=batch-sent component=batcher name=users size=3 duration=3ms`,
			`level=DEBUG msg=batch-sent component=loader error=down size=1 duration=0s`,
		}},
		{"fallback", func(t *testing.T, o resilience.Option) {
			p := resilience.Fallback(func(context.Context, error) (int, error) { return 2, nil }, o, resilience.WithName("users"))
			v, err := p.Execute(ctx, down)
			require.NoError(t, err)
			assert.Equal(t, 2, v)
		}, []string{
			`level=INFO msg=fallback component=fallback name=users error=down`,
		}},
		{"hedge", func(t *testing.T, o resilience.Option) {
			p := resilience.Hedge[int](o, resilience.WithName("search"), resilience.WithHedgeDelay(10*time.Millisecond))
			var n atomic.Int32
			v, err := p.Execute(ctx, func(ctx context.Context) (int, error) {
				if n.Add(1) == 1 {
					return waitCtx(ctx) // slow: the hedge wins
				}
				return 2, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 2, v)
		}, []string{
			`level=DEBUG msg=hedge component=hedge name=search attempt=2 wait=10ms`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var buf syncBuffer
				o := resilience.NewSlogObserver(textLogger(&buf, slog.LevelDebug))
				tc.run(t, resilience.WithObserver(o))
				synctest.Wait()
				assert.Equal(t, tc.want, buf.lines())
			})
		})
	}
}

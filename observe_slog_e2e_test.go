package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

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
	up := func(context.Context) (int, error) { return 1, nil }
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

package resilience_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// panickyObserver panics with its value on events of one kind, once armed,
// and counts the events of that kind it saw.
type panickyObserver struct {
	kind  resilience.EventKind
	armed bool
	seen  int
}

func (o *panickyObserver) Observe(_ context.Context, e resilience.Event) {
	if e.Kind != o.kind {
		return
	}
	o.seen++
	if o.armed {
		o.armed = false
		panic("observer failed")
	}
}

// recovered runs f and returns what it panicked with, nil if nothing.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestObserverPanicGoesUp: a panic in Observe goes up through the call that
// emitted the event, and leaves the component consistent and usable. Each
// case skips while its component emits no event of the kind.
func TestObserverPanicGoesUp(t *testing.T) {
	ctx := context.Background()
	errDown := errors.New("down")
	down := func(context.Context) (int, error) { return 0, errDown }
	up := func(context.Context) (int, error) { return 1, nil }
	tests := []struct {
		name string
		kind resilience.EventKind
		// run makes the component emit the event with the observer armed,
		// then checks, with the observer disarmed, that it still works.
		run func(t *testing.T, o resilience.Option) (panicked any)
	}{
		{"retry", resilience.EventRetry, func(t *testing.T, o resilience.Option) any {
			p := resilience.Retry[int](o, resilience.WithBackoff(resilience.Constant(0)))
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"breaker", resilience.EventStateChange, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBreaker(o, resilience.WithBreakerThreshold(1))
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			assert.Equal(t, resilience.BreakerOpen, b.State(), "the breaker opened before Observe ran")
			_, err := p.Execute(ctx, up)
			assert.ErrorIs(t, err, resilience.ErrBreakerOpen)
			return r
		}},
		{"breaker refusal", resilience.EventRefused, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBreaker(o, resilience.WithClock(clock.NewMock()))
			b.Trip()
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			b.Reset()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"bulkhead wait", resilience.EventWaitStarted, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBulkhead(1, o, resilience.WithBulkheadWait(time.Hour))
			require.True(t, b.TryAcquire())
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			assert.Equal(t, 1, b.InUse(), "the call that panicked took no slot")
			assert.Equal(t, 0, b.Waiting(), "the call that panicked left the queue")
			b.Release()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"timeout", resilience.EventTimeout, func(t *testing.T, o resilience.Option) (r any) {
			synctest.Test(t, func(t *testing.T) {
				p := resilience.Timeout[int](time.Second, o)
				r = recovered(func() {
					_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) {
						<-ctx.Done()
						return 0, ctx.Err()
					})
				})
				v, err := p.Execute(ctx, up)
				assert.Equal(t, 1, v)
				assert.NoError(t, err)
			})
			return r
		}},
		{"fallback", resilience.EventFallback, func(t *testing.T, o resilience.Option) any {
			calls := 0
			p := resilience.Fallback(func(context.Context, error) (int, error) { calls++; return 2, nil }, o)
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			assert.Zero(t, calls, "the fallback ran after Observe panicked")
			v, err := p.Execute(ctx, down)
			assert.Equal(t, 2, v)
			assert.NoError(t, err)
			return r
		}},
		{"hedge", resilience.EventHedge, func(t *testing.T, o resilience.Option) (r any) {
			// A delay of 0 starts the hedges in the caller's goroutine.
			synctest.Test(t, func(t *testing.T) {
				p := resilience.Hedge[int](o, resilience.WithHedgeDelay(0))
				var cancelled atomic.Int32
				r = recovered(func() {
					_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) {
						<-ctx.Done()
						cancelled.Add(1)
						return 0, ctx.Err()
					})
				})
				synctest.Wait()
				assert.Equal(t, int32(1), cancelled.Load(), "the hedge started before the panic was cancelled")
				v, err := p.Execute(ctx, up)
				assert.Equal(t, 1, v)
				assert.NoError(t, err)
			})
			return r
		}},
		{"bulkhead", resilience.EventRefused, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBulkhead(1, o)
			require.True(t, b.TryAcquire())
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			assert.Equal(t, 1, b.InUse(), "the refused call took no slot")
			assert.Equal(t, 0, b.Waiting(), "the refused call left no waiter")
			b.Release()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			assert.Equal(t, 0, b.InUse())
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := &panickyObserver{kind: tc.kind, armed: true}
			r := tc.run(t, resilience.WithObserver(obs))
			if obs.seen == 0 {
				t.Skipf("%s emits no %v yet", tc.name, tc.kind)
			}
			assert.Equal(t, "observer failed", r, "the observer's panic did not go up through the call")
		})
	}
}

package resilienceotel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

// TestTimeoutEndToEnd runs real Timeout policies with the Observer: a call
// abandoned at its deadline that then panics, and one whose late result is
// discarded, show up as resilience.late_panics and resilience.discarded.
func TestTimeoutEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		observed := []resilience.Option{resilience.WithObserver(h.obs), resilience.WithName("users")}
		panics := resilience.Timeout[int](10*time.Millisecond, observed[0], observed[1])
		discards := resilience.Timeout[int](10*time.Millisecond, observed[0], observed[1], resilience.WithDiscard(func(int) {}))
		ctx := context.Background()

		_, err := panics.Execute(ctx, func(context.Context) (int, error) {
			time.Sleep(time.Second)
			panic("too late")
		})
		require.ErrorIs(t, err, resilience.ErrTimeout)
		for range 2 {
			_, err = discards.Execute(ctx, func(context.Context) (int, error) {
				time.Sleep(time.Second)
				return 1, nil
			})
			require.ErrorIs(t, err, resilience.ErrTimeout)
		}
		time.Sleep(2 * time.Second) // fake time: the abandoned calls end
		synctest.Wait()

		got := h.metrics(t)
		assert.Equal(t, 1.0, got["resilience.late_panics{component=timeout,name=users}"], "%v", got)
		assert.Equal(t, 2.0, got["resilience.discarded{component=timeout,name=users}"], "%v", got)
	})
}

// TestObserveAllocatesNothing pins that the Observer itself allocates
// nothing per event once a (component, name) has been seen: with a no-op
// meter provider, what remains is the Observer's own work.
func TestObserveAllocatesNothing(t *testing.T) {
	obs, err := resilienceotel.NewObserver(resilienceotel.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	ctx := context.Background()
	events := []resilience.Event{
		ev(resilience.EventAttemptFailed, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err = 1, errDown }),
		ev(resilience.EventRetry, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err, e.Wait = 1, errDown, time.Second }),
		ev(resilience.EventGiveUp, "retry", "users", func(e *resilience.Event) { e.Reason = resilience.ErrRetriesExhausted }),
		ev(resilience.EventTimeout, "timeout", "users", nil),
		ev(resilience.EventRefused, "breaker", "users", func(e *resilience.Event) { e.Err = resilience.ErrBreakerOpen }),
		ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.To = resilience.BreakerOpen }),
		ev(resilience.EventWaitEnded, "bulkhead", "db", nil),
		ev(resilience.EventBatchSent, "batcher", "users", func(e *resilience.Event) { e.Size = 10 }),
		ev(resilience.EventCallEnded, "retry", "users", func(e *resilience.Event) { e.Attempt = 1 }),
		ev(resilience.EventFallback, "fallback", "users", func(e *resilience.Event) { e.Err = errDown }),
		ev(resilience.EventHedge, "hedge", "users", func(e *resilience.Event) { e.Attempt, e.Wait = 2, time.Millisecond }),
	}
	for _, e := range events {
		t.Run(e.Kind.String(), func(t *testing.T) {
			obs.Observe(ctx, e) // builds the series
			if allocs := testing.AllocsPerRun(1000, func() { obs.Observe(ctx, e) }); allocs != 0 {
				t.Errorf("Observe(%v) allocates %v times per event, want 0", e.Kind, allocs)
			}
		})
	}
}

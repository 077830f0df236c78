package resilienceotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

var errDown = errors.New("down")

// ev shortens the scripted events below.
func ev(kind resilience.EventKind, component, name string, f func(*resilience.Event)) resilience.Event {
	e := resilience.Event{Kind: kind, Component: component, Name: name}
	if f != nil {
		f(&e)
	}
	return e
}

// TestObserverMetrics feeds scripted scenarios and checks every data point
// they produce, exactly.
func TestObserverMetrics(t *testing.T) {
	tests := []struct {
		name     string
		outcomes bool
		events   []resilience.Event
		want     map[string]float64
	}{
		{
			name:     "fail, fail, succeed, with outcomes",
			outcomes: true,
			events: []resilience.Event{
				ev(resilience.EventAttemptFailed, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err = 1, errDown }),
				ev(resilience.EventRetry, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err, e.Wait = 1, errDown, 100*time.Millisecond }),
				ev(resilience.EventAttemptFailed, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err = 2, errDown }),
				ev(resilience.EventRetry, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err, e.Wait = 2, errDown, 200*time.Millisecond }),
				ev(resilience.EventCallEnded, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Duration = 3, 500*time.Millisecond }),
			},
			want: map[string]float64{
				"resilience.attempts{component=retry,name=users,outcome=failure}":            2,
				"resilience.attempts{component=retry,name=users,outcome=success}":            1,
				"resilience.retries{component=retry,name=users}":                             2,
				"resilience.retry.wait.count{component=retry,name=users}":                    2,
				"resilience.retry.wait.sum{component=retry,name=users}":                      0.3,
				"resilience.call.duration.count{component=retry,name=users,outcome=success}": 1,
				"resilience.call.duration.sum{component=retry,name=users,outcome=success}":   0.5,
			},
		},
		{
			name: "give-ups by reason",
			events: []resilience.Event{
				ev(resilience.EventGiveUp, "retry", "a", func(e *resilience.Event) { e.Attempt, e.Err, e.Reason = 3, errDown, resilience.ErrRetriesExhausted }),
				ev(resilience.EventGiveUp, "retry", "a", func(e *resilience.Event) { e.Attempt, e.Err, e.Reason = 3, errDown, resilience.ErrRetriesExhausted }),
				ev(resilience.EventGiveUp, "retry", "a", func(e *resilience.Event) { e.Attempt, e.Err, e.Reason = 2, errDown, resilience.ErrRetryBudgetExhausted }),
				ev(resilience.EventGiveUp, "retry", "a", func(e *resilience.Event) { e.Attempt, e.Err, e.Reason = 1, errDown, context.Canceled }),
				ev(resilience.EventGiveUp, "retry", "b", func(e *resilience.Event) { e.Attempt, e.Err, e.Reason = 1, errDown, context.DeadlineExceeded }),
			},
			want: map[string]float64{
				"resilience.give_ups{component=retry,name=a,reason=retries_exhausted}": 2,
				"resilience.give_ups{component=retry,name=a,reason=budget_exhausted}":  1,
				"resilience.give_ups{component=retry,name=a,reason=canceled}":          1,
				"resilience.give_ups{component=retry,name=b,reason=deadline_exceeded}": 1,
			},
		},
		{
			name: "refusals by guard and reason",
			events: []resilience.Event{
				ev(resilience.EventRefused, "breaker", "users", func(e *resilience.Event) {
					e.Err, e.Wait = &resilience.BreakerOpenError{}, time.Second
				}),
				ev(resilience.EventRefused, "breaker", "users", func(e *resilience.Event) { e.Err = resilience.ErrBreakerOpen }),
				ev(resilience.EventRefused, "bulkhead", "db", func(e *resilience.Event) { e.Err = resilience.ErrBulkheadFull }),
				ev(resilience.EventRefused, "bulkhead", "db", func(e *resilience.Event) { e.Err = fmt.Errorf("waited: %w", context.DeadlineExceeded) }),
				ev(resilience.EventRefused, "budget", "", func(e *resilience.Event) { e.Err = resilience.ErrRetryBudgetExhausted }),
				ev(resilience.EventRefused, "ratelimiter", "api", func(e *resilience.Event) { e.Err = errors.New("rate limited") }),
			},
			want: map[string]float64{
				"resilience.refusals{component=breaker,name=users,reason=breaker_open}":    2,
				"resilience.refusals{component=bulkhead,name=db,reason=bulkhead_full}":     1,
				"resilience.refusals{component=bulkhead,name=db,reason=deadline_exceeded}": 1,
				"resilience.refusals{component=budget,name=,reason=budget_exhausted}":      1,
				"resilience.refusals{component=ratelimiter,name=api,reason=other}":         1,
			},
		},
		{
			name: "breaker trips, probes, closes",
			events: []resilience.Event{
				ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerClosed, resilience.BreakerOpen }),
				ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerOpen, resilience.BreakerHalfOpen }),
				ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerHalfOpen, resilience.BreakerOpen }),
				ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerOpen, resilience.BreakerHalfOpen }),
				ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerHalfOpen, resilience.BreakerClosed }),
				// A state from a later version is ignored.
				ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerClosed, 7 }),
			},
			want: map[string]float64{
				"resilience.breaker.transitions{breaker.state=open,component=breaker,name=users}":      2,
				"resilience.breaker.transitions{breaker.state=half_open,component=breaker,name=users}": 2,
				"resilience.breaker.transitions{breaker.state=closed,component=breaker,name=users}":    1,
			},
		},
		{
			name: "bulkhead waits",
			events: []resilience.Event{
				ev(resilience.EventWaitStarted, "bulkhead", "db", nil),
				ev(resilience.EventWaitStarted, "bulkhead", "db", nil),
				ev(resilience.EventWaitStarted, "bulkhead", "db", nil),
				ev(resilience.EventWaitEnded, "bulkhead", "db", func(e *resilience.Event) { e.Wait = 250 * time.Millisecond }),
				ev(resilience.EventWaitEnded, "bulkhead", "db", func(e *resilience.Event) { e.Wait, e.Err = time.Second, resilience.ErrBulkheadFull }),
			},
			want: map[string]float64{
				"resilience.waiting{component=bulkhead,name=db}":                             1,
				"resilience.wait.duration.count{component=bulkhead,name=db,outcome=success}": 1,
				"resilience.wait.duration.sum{component=bulkhead,name=db,outcome=success}":   0.25,
				"resilience.wait.duration.count{component=bulkhead,name=db,outcome=refused}": 1,
				"resilience.wait.duration.sum{component=bulkhead,name=db,outcome=refused}":   1,
			},
		},
		{
			name: "batches",
			events: []resilience.Event{
				ev(resilience.EventBatchSent, "batcher", "users", func(e *resilience.Event) { e.Size, e.Duration = 100, 20*time.Millisecond }),
				ev(resilience.EventBatchSent, "batcher", "users", func(e *resilience.Event) { e.Size, e.Duration = 7, 5*time.Millisecond }),
				ev(resilience.EventBatchSent, "batcher", "users", func(e *resilience.Event) { e.Size, e.Duration, e.Err = 3, time.Second, errDown }),
			},
			want: map[string]float64{
				"resilience.batch.size.count{component=batcher,name=users,outcome=success}":     2,
				"resilience.batch.size.sum{component=batcher,name=users,outcome=success}":       107,
				"resilience.batch.size.count{component=batcher,name=users,outcome=failure}":     1,
				"resilience.batch.size.sum{component=batcher,name=users,outcome=failure}":       3,
				"resilience.batch.duration.count{component=batcher,name=users,outcome=success}": 2,
				"resilience.batch.duration.sum{component=batcher,name=users,outcome=success}":   0.025,
				"resilience.batch.duration.count{component=batcher,name=users,outcome=failure}": 1,
				"resilience.batch.duration.sum{component=batcher,name=users,outcome=failure}":   1,
			},
		},
		{
			name: "timeouts, late panics, discarded results",
			events: []resilience.Event{
				ev(resilience.EventTimeout, "timeout", "users", func(e *resilience.Event) { e.Wait = time.Second }),
				ev(resilience.EventTimeout, "timeout", "users", func(e *resilience.Event) { e.Wait = time.Second }),
				ev(resilience.EventLatePanic, "timeout", "users", func(e *resilience.Event) { e.Panic = &resilience.PanicError{Value: "x"} }),
				ev(resilience.EventDiscarded, "retry", "users", nil),
			},
			want: map[string]float64{
				"resilience.timeouts{component=timeout,name=users}":    2,
				"resilience.late_panics{component=timeout,name=users}": 1,
				"resilience.discarded{component=retry,name=users}":     1,
			},
		},
		{
			name:     "call outcomes",
			outcomes: true,
			events: []resilience.Event{
				ev(resilience.EventCallEnded, "timeout", "t", func(e *resilience.Event) { e.Duration, e.Err = time.Second, resilience.ErrTimeout }),
				ev(resilience.EventCallEnded, "breaker", "b", func(e *resilience.Event) { e.Err = resilience.ErrBreakerOpen }),
				ev(resilience.EventCallEnded, "bulkhead", "h", func(e *resilience.Event) { e.Err = context.Canceled }),
				ev(resilience.EventCallEnded, "retry", "r", func(e *resilience.Event) { e.Attempt, e.Err = 3, errDown }),
			},
			want: map[string]float64{
				"resilience.call.duration.count{component=timeout,name=t,outcome=timeout}":   1,
				"resilience.call.duration.sum{component=timeout,name=t,outcome=timeout}":     1,
				"resilience.call.duration.count{component=breaker,name=b,outcome=refused}":   1,
				"resilience.call.duration.sum{component=breaker,name=b,outcome=refused}":     0,
				"resilience.call.duration.count{component=bulkhead,name=h,outcome=canceled}": 1,
				"resilience.call.duration.sum{component=bulkhead,name=h,outcome=canceled}":   0,
				"resilience.call.duration.count{component=retry,name=r,outcome=failure}":     1,
				"resilience.call.duration.sum{component=retry,name=r,outcome=failure}":       0,
			},
		},
		{
			name:   "a kind from a later version is ignored",
			events: []resilience.Event{ev(resilience.EventKind(200), "hedge", "x", func(e *resilience.Event) { e.Attempt = 2 })},
			want:   map[string]float64{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []resilienceotel.Option
			if !tc.outcomes {
				opts = append(opts, resilienceotel.WithoutOutcomes())
			}
			h := newHarness(t, opts...)
			for _, e := range tc.events {
				h.obs.Observe(context.Background(), e)
			}
			got := h.metrics(t)
			require.Len(t, got, len(tc.want), "data points: %v", got)
			for k, v := range tc.want {
				assert.InDelta(t, v, got[k], 1e-9, "%s in %v", k, got)
			}
		})
	}
}

// TestObserverSpanEvents checks the events added to the caller's span.
func TestObserverSpanEvents(t *testing.T) {
	h := newHarness(t, resilienceotel.WithSpanEvents())
	ctx, span := h.tp.Tracer("test").Start(context.Background(), "GET /users")
	for _, e := range []resilience.Event{
		ev(resilience.EventAttemptFailed, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err = 1, errDown }),
		ev(resilience.EventRetry, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err, e.Wait = 1, errDown, 100*time.Millisecond }),
		ev(resilience.EventRefused, "breaker", "users", func(e *resilience.Event) { e.Err, e.Wait = resilience.ErrBreakerOpen, 2*time.Second }),
		ev(resilience.EventStateChange, "breaker", "users", func(e *resilience.Event) { e.From, e.To = resilience.BreakerClosed, resilience.BreakerOpen }),
		ev(resilience.EventTimeout, "timeout", "users", func(e *resilience.Event) { e.Wait = 1500 * time.Millisecond }),
		ev(resilience.EventGiveUp, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err, e.Reason = 2, errDown, resilience.ErrRetriesExhausted }),
		ev(resilience.EventWaitStarted, "bulkhead", "db", nil),
	} {
		h.obs.Observe(ctx, e)
	}
	span.End()
	assert.Equal(t, []string{
		"GET /users: resilience.retry error.message=down http.request.resend_count=1 resilience.attempt=1 resilience.component=retry resilience.name=users resilience.retry.wait=0.1",
		"GET /users: resilience.refused error.message=resilience: circuit breaker open resilience.component=breaker resilience.name=users resilience.reason=breaker_open resilience.retry_after=2",
		"GET /users: resilience.breaker.state_change resilience.breaker.from=closed resilience.breaker.to=open resilience.component=breaker resilience.name=users",
		"GET /users: resilience.timeout resilience.component=timeout resilience.name=users resilience.timeout=1.5",
		"GET /users: resilience.give_up error.message=down resilience.attempt=2 resilience.component=retry resilience.name=users resilience.reason=retries_exhausted",
	}, h.events())
}

func TestObserverSpanEventsOff(t *testing.T) {
	retry := ev(resilience.EventRetry, "retry", "users", func(e *resilience.Event) { e.Attempt, e.Err = 1, errDown })
	t.Run("without WithSpanEvents", func(t *testing.T) {
		h := newHarness(t)
		ctx, span := h.tp.Tracer("test").Start(context.Background(), "call")
		h.obs.Observe(ctx, retry)
		span.End()
		assert.Empty(t, h.events())
		assert.Equal(t, 1.0, h.metrics(t)["resilience.retries{component=retry,name=users}"], "metrics are still recorded")
	})
	t.Run("no span in the context", func(t *testing.T) {
		h := newHarness(t, resilienceotel.WithSpanEvents())
		h.obs.Observe(context.Background(), retry)
		assert.Empty(t, h.events())
	})
}

func TestObserverOutcomes(t *testing.T) {
	with, err := resilienceotel.NewObserver()
	require.NoError(t, err)
	assert.True(t, with.ObserveOutcomes(), "by default")
	without, err := resilienceotel.NewObserver(resilienceotel.WithoutOutcomes())
	require.NoError(t, err)
	assert.False(t, without.ObserveOutcomes())
	var _ resilience.OutcomeObserver = with
	require.PanicsWithValue(t, "resilienceotel: NewObserver: option is nil", func() { _, _ = resilienceotel.NewObserver(nil) })
}

// TestObserverConcurrent has many goroutines meet new (component, name)
// pairs at once: the race detector checks the cache, the counts check that
// no measurement went to a series built twice.
func TestObserverConcurrent(t *testing.T) {
	h := newHarness(t)
	const goroutines, names, rounds = 8, 5, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				name := fmt.Sprint("n", (g+r)%names)
				h.obs.Observe(context.Background(), ev(resilience.EventTimeout, "timeout", name, nil))
			}
		}()
	}
	wg.Wait()
	got := h.metrics(t)
	total := 0.0
	for _, v := range got {
		total += v
	}
	assert.Len(t, got, names)
	assert.Equal(t, float64(goroutines*rounds), total)
}

package resilience_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

// eventLog records the events it observes. outcomes makes it ask for
// EventCallEnded.
type eventLog struct {
	mu       sync.Mutex
	events   []resilience.Event
	outcomes bool
}

func (l *eventLog) Observe(_ context.Context, e resilience.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) ObserveOutcomes() bool { return l.outcomes }

// TestRetryEvents: what a Retry and its quota or budget report, call by
// call.
func TestRetryEvents(t *testing.T) {
	const name = "users"
	type ev = resilience.Event
	failed := func(n int, err error) ev {
		return ev{Kind: resilience.EventAttemptFailed, Component: "retry", Name: name, Attempt: n, Err: err}
	}
	retry := func(n int, err error, wait time.Duration) ev {
		return ev{Kind: resilience.EventRetry, Component: "retry", Name: name, Attempt: n, Err: err, Wait: wait}
	}
	gaveUp := func(n int, err, reason error) ev {
		return ev{Kind: resilience.EventGiveUp, Component: "retry", Name: name, Attempt: n, Err: err, Reason: reason}
	}
	ended := func(n int, err error, d time.Duration) ev {
		return ev{Kind: resilience.EventCallEnded, Component: "retry", Name: name, Attempt: n, Err: err, Duration: d}
	}
	refused := func(component, name string, n int) ev {
		return ev{Kind: resilience.EventRefused, Component: component, Name: name, Attempt: n, Err: resilience.ErrRetryBudgetExhausted}
	}
	exhausted := func(component, name string, n int) ev {
		return ev{Kind: resilience.EventExhausted, Component: component, Name: name, Attempt: n, Err: resilience.ErrRetryBudgetExhausted}
	}
	// The default quota pays for 8 retries, then refuses the ninth.
	var quotaRuns []ev
	for n := 1; n <= 8; n++ {
		quotaRuns = append(quotaRuns, failed(n, errFlaky), retry(n, errFlaky, 0))
	}
	quotaRuns = append(quotaRuns, failed(9, errFlaky), exhausted("quota", name, 9), refused("quota", name, 9), gaveUp(9, errFlaky, resilience.ErrRetryBudgetExhausted))
	budgetLog := &eventLog{}
	tests := []struct {
		name     string
		opts     []resilience.RetryOption
		outcomes bool
		results  []error
		cancelAt time.Duration // the caller's context ends then, when set
		want     []ev
		budget   []ev // what budgetLog receives
	}{
		{name: "success: nothing", results: []error{nil}},
		{name: "success, outcomes asked", outcomes: true, results: []error{nil}, want: []ev{ended(1, nil, 0)}},
		{name: "fail, fail, succeed", results: []error{errFlaky, errFlaky, nil},
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), failed(2, errFlaky), retry(2, errFlaky, 200*ms)}},
		{name: "fail, fail, succeed, outcomes asked", outcomes: true, results: []error{errFlaky, errFlaky, nil},
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), failed(2, errFlaky), retry(2, errFlaky, 200*ms), ended(3, nil, 300*ms)}},
		{name: "attempts run out", results: []error{errFlaky},
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), failed(2, errFlaky), retry(2, errFlaky, 200*ms),
				failed(3, errFlaky), gaveUp(3, errFlaky, resilience.ErrRetriesExhausted)}},
		{name: "an error not to retry: no give-up", opts: []resilience.RetryOption{resilience.WithAbortOn(errFatal)},
			results: []error{errFatal}, want: []ev{failed(1, errFatal)}},
		{name: "the caller's context ends during a wait", results: []error{errFlaky}, cancelAt: 50 * ms,
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), gaveUp(1, errFlaky, context.Canceled)}},
		{name: "the default quota runs out", opts: []resilience.RetryOption{resilience.WithAttempts(0), resilience.WithBackoff(resilience.Constant(0))},
			results: []error{errFlaky}, want: quotaRuns},
		{name: "a shared budget refuses, to its own observer",
			opts: []resilience.RetryOption{resilience.WithBudget(resilience.NewRetryBudget(0, 0,
				resilience.WithObserver(budgetLog), resilience.WithName("shared")))},
			results: []error{errFlaky},
			want:    []ev{failed(1, errFlaky), gaveUp(1, errFlaky, resilience.ErrRetryBudgetExhausted)},
			budget:  []ev{exhausted("budget", "shared", 1), refused("budget", "shared", 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				budgetLog.events = nil
				log := &eventLog{outcomes: tc.outcomes}
				opts := append([]resilience.RetryOption{resilience.WithBackoff(linearWaits),
					resilience.WithObserver(log), resilience.WithName(name)}, tc.opts...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				fn, _ := script(tc.results...)
				_, _ = resilience.Retry[int](opts...).Execute(ctx, fn)
				assert.Equal(t, tc.want, log.events)
				assert.Equal(t, tc.budget, budgetLog.events)
			})
		})
	}
}

// TestRetryEventsDiscard: a result WithRetryIfResult rejected is reported
// as it goes to the discard hook, once.
func TestRetryEventsDiscard(t *testing.T) {
	log := &eventLog{outcomes: true}
	var dropped []int
	p := resilience.Retry[int](resilience.WithObserver(log), resilience.WithBackoff(resilience.Constant(0)),
		resilience.WithRetryIfResult(func(v int) bool { return v < 2 }),
		resilience.WithDiscard(func(v int) { dropped = append(dropped, v) }))
	fn, _ := script(nil)
	v, err := p.Execute(context.Background(), fn)
	assert.NoError(t, err)
	assert.Equal(t, 2, v)
	assert.Equal(t, []int{1}, dropped)
	kinds := []resilience.EventKind{}
	for _, e := range log.events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []resilience.EventKind{resilience.EventAttemptFailed, resilience.EventRetry,
		resilience.EventDiscarded, resilience.EventCallEnded}, kinds)
	assert.Equal(t, resilience.Event{Kind: resilience.EventDiscarded, Component: "retry", Attempt: 1}, log.events[2])
}

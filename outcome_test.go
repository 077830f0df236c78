package resilience_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// failEvery is a classifier that counts every error as a failure.
func failEvery(error) resilience.Outcome { return resilience.OutcomeFailure }

// errJudged is the error the classifiers of these tests judge as the
// table says; they count every other error as a failure.
var errJudged = errors.New("judged")

// classifierCase is one way a classifier judges errJudged: a value, or a
// panic with "classifier boom" when panics is set.
type classifierCase struct {
	name   string
	out    resilience.Outcome
	panics bool
}

var classifierCases = []classifierCase{
	{name: "success", out: resilience.OutcomeSuccess},
	{name: "failure", out: resilience.OutcomeFailure},
	{name: "ignored", out: resilience.OutcomeIgnored},
	{name: "classifier panics", panics: true},
	{name: "a value of no outcome", out: resilience.Outcome(9)},
}

// classifier returns the case's classifier.
func (c classifierCase) classifier() func(error) resilience.Outcome {
	return func(err error) resilience.Outcome {
		if !errors.Is(err, errJudged) {
			return resilience.OutcomeFailure
		}
		if c.panics {
			panic("classifier boom")
		}
		return c.out
	}
}

// end runs f, which ends a call with errJudged, and checks that it panics
// with the classifier's value exactly when the classifier panics.
func (c classifierCase) end(t *testing.T, f func()) {
	t.Helper()
	if c.panics {
		assert.PanicsWithValue(t, "classifier boom", f, "the classifier's panic goes on through the call")
		return
	}
	assert.NotPanics(t, f)
}

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		o    resilience.Outcome
		want string
	}{
		{resilience.OutcomeSuccess, "success"},
		{resilience.OutcomeFailure, "failure"},
		{resilience.OutcomeIgnored, "ignored"},
		{resilience.Outcome(7), "Outcome(7)"},
	}
	for _, tc := range tests {
		if got := tc.o.String(); got != tc.want {
			t.Errorf("Outcome(%d).String() = %q, want %q", uint8(tc.o), got, tc.want)
		}
	}
}

// TestBreakerClassifier: in the closed state a success ends the run of
// failures and counts in the window, a failure counts in both, an ignored
// call in neither; a half-open breaker's ignored probe frees its slot and
// counts towards neither closing nor reopening. A classifier that panics
// counts a failure, and its panic goes on through the call.
func TestBreakerClassifier(t *testing.T) {
	type closedWant struct{ consecutive, calls, failures int }
	want := map[string]struct {
		closed closedWant
		state  resilience.BreakerState // after the probe
		toShut int                     // successful probes that then close it
	}{
		"success":               {closedWant{0, 2, 1}, resilience.BreakerHalfOpen, 1},
		"failure":               {closedWant{2, 2, 2}, resilience.BreakerOpen, 0},
		"ignored":               {closedWant{1, 1, 1}, resilience.BreakerHalfOpen, 2},
		"classifier panics":     {closedWant{2, 2, 2}, resilience.BreakerOpen, 0},
		"a value of no outcome": {closedWant{2, 2, 2}, resilience.BreakerOpen, 0},
	}
	for _, tc := range classifierCases {
		w := want[tc.name]
		judged := func(context.Context) (int, error) { return 0, errJudged }
		t.Run(tc.name+"/closed", func(t *testing.T) {
			b := resilience.NewBreaker(resilience.WithClock(clock.NewMock()), resilience.WithBreakerThreshold(3),
				resilience.WithBreakerFailureRate(1, 10, 10), resilience.WithBreakerClassifier(tc.classifier()))
			outcome(b, errDown)
			tc.end(t, func() { _, _ = resilience.Do(context.Background(), resilience.Guarded[int](b), judged) })
			m := b.Snapshot()
			assert.Equal(t, resilience.BreakerClosed, m.State)
			assert.Equal(t, w.closed, closedWant{m.ConsecutiveFailures, m.WindowCalls, m.WindowFailures})
		})
		t.Run(tc.name+"/half-open", func(t *testing.T) {
			mock := clock.NewMock()
			b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1),
				resilience.WithBreakerCoolDown(time.Second), resilience.WithBreakerSuccessThreshold(2),
				resilience.WithBreakerClassifier(tc.classifier()))
			outcome(b, errDown)
			mock.Add(time.Second)
			tc.end(t, func() { _, _ = resilience.Do(context.Background(), resilience.Guarded[int](b), judged) })
			m := b.Snapshot()
			assert.Equal(t, w.state, m.State)
			assert.Zero(t, m.Probes, "the probe's slot is free")
			for i := range w.toShut {
				assert.Equal(t, resilience.BreakerHalfOpen, b.State(), "before success %d", i+1)
				outcome(b, nil)
			}
			if w.toShut > 0 {
				assert.Equal(t, resilience.BreakerClosed, b.State())
			}
		})
	}
}

// TestBreakerDefaultClassifier: with no classifier, context.Canceled is
// ignored and every other error, a panic included, is a failure; a
// classifier sees context.Canceled too.
func TestBreakerDefaultClassifier(t *testing.T) {
	tests := []struct {
		name        string
		opts        []resilience.BreakerOption
		err         error
		consecutive int
	}{
		{"error", nil, errDown, 1},
		{"panic", nil, &resilience.PanicError{Value: "boom"}, 1},
		{"canceled", nil, context.Canceled, 0},
		{"canceled, wrapped", nil, errors.Join(errDown, context.Canceled), 0},
		{"canceled, a classifier's to judge", []resilience.BreakerOption{resilience.WithBreakerClassifier(failEvery)}, context.Canceled, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := resilience.NewBreaker(tc.opts...)
			outcome(b, tc.err)
			assert.Equal(t, tc.consecutive, b.Snapshot().ConsecutiveFailures)
		})
	}
}

// TestAdaptiveLimiterClassifier: successes are samples that raise the
// limit of a busy limiter; failures are drops that cut it (and then the
// limit refuses some of the 10 calls); ignored calls
// free their slots and are neither, so the limit stays where it began. A
// classifier that panics makes a drop, and its panic goes on through the
// call.
func TestAdaptiveLimiterClassifier(t *testing.T) {
	want := map[string]string{ // how the limit moves
		"success":               "up",
		"failure":               "down",
		"ignored":               "still",
		"classifier panics":     "down",
		"a value of no outcome": "down",
	}
	for _, tc := range classifierCases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			rec := &recorder{only: resilience.EventLimitChanged}
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithObserver(rec),
				resilience.WithAdaptiveClassifier(tc.classifier()))
			for range 100 { // rounds of 10 calls at once, 10ms each
				var dones []func(error)
				for range 10 {
					done, err := l.Enter(context.Background())
					if errors.Is(err, resilience.ErrLimitExceeded) {
						continue // a limit cut below 10
					}
					require.NoError(t, err)
					dones = append(dones, done)
				}
				clk.Add(10 * time.Millisecond)
				for _, done := range dones {
					tc.end(t, func() { done(errJudged) })
				}
				require.Zero(t, l.InFlight(), "every call frees its slot")
			}
			reasons := map[string]bool{}
			for _, e := range rec.take() {
				reasons[e.Reason.Error()] = true
			}
			switch want[tc.name] {
			case "up":
				assert.Greater(t, l.Limit(), 20)
				assert.False(t, reasons["drops"])
			case "down":
				assert.Less(t, l.Limit(), 20)
				assert.True(t, reasons["drops"], "the limit is cut for drops: %v", reasons)
			case "still":
				assert.Equal(t, 20, l.Limit())
				assert.Empty(t, reasons, "no sample, no window")
			}
		})
	}
}

// TestAdaptiveLimiterDefaultClassifier: by default a timeout and a panic
// are drops, other errors samples, and a call its caller cancelled is
// ignored before any classifier is asked.
func TestAdaptiveLimiterDefaultClassifier(t *testing.T) {
	tests := []struct {
		name       string
		classifier func(error) resilience.Outcome
		err        error
		cancelled  bool
		want       string // up, down or still
	}{
		{"an answer", nil, errDown, false, "up"},
		{"a timeout", nil, resilience.ErrTimeout, false, "down"},
		{"a panic", nil, &resilience.PanicError{Value: "boom"}, false, "down"},
		{"cancelled by the caller, whatever the classifier says", failEvery, context.Canceled, true, "still"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			opts := []resilience.AdaptiveLimiterOption{resilience.WithClock(clk)}
			if tc.classifier != nil {
				opts = append(opts, resilience.WithAdaptiveClassifier(tc.classifier))
			}
			l := resilience.NewAdaptiveLimiter(opts...)
			limiterRounds(t, l, clk, tc.err, tc.cancelled, true)
			switch tc.want {
			case "up":
				assert.Greater(t, l.Limit(), 20)
			case "down":
				assert.Less(t, l.Limit(), 20)
			case "still":
				assert.Equal(t, 20, l.Limit())
			}
		})
	}
}

// TestAdaptiveThrottlerClassifier: after 20 requests the service refused,
// 20 judged calls count as accepted requests (success), refused requests
// (failure), or nothing at all (ignored). A classifier that panics counts
// a refused request, and its panic goes on through the call.
func TestAdaptiveThrottlerClassifier(t *testing.T) {
	want := map[string]float64{ // the ratio after
		"success":               0,         // 40 requests, 20 accepted
		"failure":               40.0 / 41, // 40 requests, none accepted
		"ignored":               20.0 / 21, // 20 requests, none accepted
		"classifier panics":     40.0 / 41,
		"a value of no outcome": 40.0 / 41,
	}
	for _, tc := range classifierCases {
		t.Run(tc.name, func(t *testing.T) {
			th := resilience.NewAdaptiveThrottler(resilience.WithRand(neverRand{}), resilience.WithClock(newManualClock()),
				resilience.WithThrottleClassifier(tc.classifier()))
			for range 20 {
				done, err := th.Enter(context.Background())
				require.NoError(t, err)
				done(resilience.ErrBulkheadFull)
			}
			p := resilience.Guarded[int](th)
			for range 20 {
				tc.end(t, func() {
					_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, errJudged })
				})
			}
			assert.InDelta(t, want[tc.name], th.Ratio(), 1e-9)
		})
	}
}

// TestAdaptiveThrottlerCancelledBeforeClassifier: a call its caller
// cancelled counts for nothing, whatever the classifier says.
func TestAdaptiveThrottlerCancelledBeforeClassifier(t *testing.T) {
	th := resilience.NewAdaptiveThrottler(resilience.WithRand(neverRand{}), resilience.WithClock(newManualClock()),
		resilience.WithThrottleClassifier(failEvery))
	for range 20 {
		done, err := th.Enter(context.Background())
		require.NoError(t, err)
		done(context.Canceled)
	}
	assert.Zero(t, th.Ratio(), "no request counted")
}

// TestClassifiedOutcomesAllocateNothing: a call through Guarded whose error
// a classifier judges allocates nothing, whatever the outcome.
func TestClassifiedOutcomesAllocateNothing(t *testing.T) {
	ctx := context.Background()
	judged := func(context.Context) (int, error) { return 0, errJudged }
	for _, tc := range classifierCases {
		if tc.panics {
			continue
		}
		guards := []struct {
			name string
			p    resilience.Policy[int]
		}{
			{"Breaker", resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerThreshold(1<<30),
				resilience.WithBreakerClassifier(tc.classifier())))},
			{"AdaptiveLimiter", resilience.Guarded[int](resilience.NewAdaptiveLimiter(resilience.WithAdaptiveClassifier(tc.classifier())))},
			{"AdaptiveThrottler", resilience.Guarded[int](resilience.NewAdaptiveThrottler(resilience.WithRand(neverRand{}),
				resilience.WithThrottleClassifier(tc.classifier())))},
		}
		for _, g := range guards {
			t.Run(g.name+"/"+tc.name, func(t *testing.T) {
				if n := testing.AllocsPerRun(1000, func() { _, _ = g.p.Execute(ctx, judged) }); n != 0 {
					t.Errorf("a call allocates %v times, want 0", n)
				}
			})
		}
	}
}

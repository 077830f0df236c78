package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
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

var errDown = errors.New("service down")

// outcome runs one guarded call that returns err, and returns what Do
// returned; errRan tells whether fn ran.
func outcome(b *resilience.Breaker, err error) (ran bool, got error) {
	_, got = resilience.Do(context.Background(), resilience.Guarded[int](b), func(context.Context) (int, error) {
		ran = true
		return 0, err
	})
	return ran, got
}

// step is one event of a breaker scenario.
type step struct {
	advance   time.Duration // move the mock clock first
	err       error         // the call's outcome
	wantRan   bool          // whether the breaker let it through
	wantState resilience.BreakerState
}

func runSteps(t *testing.T, mock *clock.Mock, b *resilience.Breaker, steps []step) {
	t.Helper()
	for i, s := range steps {
		mock.Add(s.advance)
		ran, err := outcome(b, s.err)
		require.Equal(t, s.wantRan, ran, "step %d: ran", i)
		if !ran {
			require.ErrorIs(t, err, resilience.ErrBreakerOpen, "step %d", i)
		}
		require.Equal(t, s.wantState, b.State(), "step %d: state", i)
	}
}

func TestBreakerScenarios(t *testing.T) {
	const (
		closed   = resilience.BreakerClosed
		open     = resilience.BreakerOpen
		halfOpen = resilience.BreakerHalfOpen
	)
	s := time.Second
	tests := []struct {
		name  string
		opts  []resilience.BreakerOption
		steps []step
	}{
		{"default: 5 consecutive failures open it, 30s later a probe closes it", nil, []step{
			{0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed},
			{0, errDown, true, open},
			{0, nil, false, open},
			{29 * s, nil, false, open},
			{s, nil, true, closed},
		}},
		{"a success starts the count again (go-resiliency never reset it)", nil, []step{
			{0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed},
			{0, nil, true, closed},
			{0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed},
			{0, errDown, true, open},
		}},
		{"a failed probe reopens it", []resilience.BreakerOption{resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(s)}, []step{
			{0, errDown, true, open},
			{s, errDown, true, open},
			{s / 2, nil, false, open},
			{s / 2, nil, true, closed},
		}},
		{"success threshold: M probes must succeed", []resilience.BreakerOption{resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(s), resilience.WithBreakerSuccessThreshold(3)}, []step{
			{0, errDown, true, open},
			{s, nil, true, halfOpen}, {0, nil, true, halfOpen}, {0, nil, true, closed},
		}},
		{"context.Canceled counts neither way", []resilience.BreakerOption{resilience.WithBreakerThreshold(1)}, []step{
			{0, context.Canceled, true, closed}, {0, context.Canceled, true, closed},
			{0, errDown, true, open},
		}},
		{"seed rule: failures with no error-free second between them", []resilience.BreakerOption{resilience.WithBreakerThreshold(3), resilience.WithBreakerFailureExpiry(s)}, []step{
			{0, errDown, true, closed},
			{2 * s, errDown, true, closed}, // the first has expired: the count starts again
			{s / 2, nil, true, closed},     // successes do not reset it, as in the seed
			{s / 2, errDown, true, closed},
			{s / 2, errDown, true, open},
		}},
		{"failure rate over the last 10 calls", []resilience.BreakerOption{resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRate(0.5, 4, 10)}, []step{
			{0, nil, true, closed}, {0, errDown, true, closed}, {0, nil, true, closed},
			{0, errDown, true, open}, // 2 of 4
		}},
		{"failure rate needs the minimum of calls", []resilience.BreakerOption{resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRate(0.5, 4, 10)}, []step{
			{0, errDown, true, closed}, {0, errDown, true, closed}, {0, errDown, true, closed},
			{0, errDown, true, open},
		}},
		{"time window: old failures drop out", []resilience.BreakerOption{resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRateWindow(0.5, 3, 10*s)}, []step{
			{0, errDown, true, closed}, {0, errDown, true, closed},
			{11 * s, nil, true, closed}, // the two failures have expired
			{0, errDown, true, closed},  // 1 of 2
			{0, errDown, true, open},    // 2 of 3
		}},
		{"growing cool-down", []resilience.BreakerOption{resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDownBackoff(resilience.Exponential(s, 2))}, []step{
			{0, errDown, true, open},
			{s, errDown, true, open}, // first cool-down 1s; the probe fails
			{s, nil, false, open},    // second cool-down is 2s
			{s, nil, true, closed},   // 2s later
			{0, errDown, true, open}, // after closing, back to 1s
			{s, nil, true, closed},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			b := resilience.NewBreaker(append([]resilience.BreakerOption{resilience.WithClock(mock)}, tc.opts...)...)
			runSteps(t, mock, b, tc.steps)
		})
	}
}

func TestBreakerSlowCalls(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(2), resilience.WithBreakerSlowCallThreshold(100*time.Millisecond))
	slow := func(d time.Duration) {
		_, err := resilience.Do(context.Background(), resilience.Guarded[int](b), func(context.Context) (int, error) {
			mock.Add(d)
			return 1, nil
		})
		require.NoError(t, err)
	}
	slow(50 * time.Millisecond)
	slow(200 * time.Millisecond)
	assert.Equal(t, resilience.BreakerClosed, b.State())
	slow(150 * time.Millisecond)
	assert.Equal(t, resilience.BreakerOpen, b.State(), "two slow calls in a row open it")
}

// TestBreakerProbesAreBounded is the test go-resiliency's breaker would
// fail: its half-open state let any number of probes through.
func TestBreakerProbesAreBounded(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second), resilience.WithBreakerProbes(2))
	outcome(b, errDown)
	mock.Add(time.Second)
	var dones []func(error)
	for i := range 5 {
		done, err := b.Enter(context.Background())
		if i < 2 {
			require.NoError(t, err, "probe %d", i)
			dones = append(dones, done)
			continue
		}
		require.ErrorIs(t, err, resilience.ErrBreakerOpen, "probe %d is one too many", i)
	}
	assert.Equal(t, 2, b.Snapshot().Probes)
	dones[0](context.Canceled) // an ignored outcome frees its probe
	done, err := b.Enter(context.Background())
	require.NoError(t, err)
	dones[1](nil)
	done(nil)
	assert.Equal(t, resilience.BreakerClosed, b.State())
}

// TestBreakerNeedsARule is the test go-resiliency's breaker would fail: an
// error threshold of 0 made a breaker that never opened.
func TestBreakerNeedsARule(t *testing.T) {
	assert.PanicsWithValue(t, "resilience: NewBreaker: no rule can open the breaker (failure threshold 0 and no failure rate)", func() {
		resilience.NewBreaker(resilience.WithBreakerThreshold(0))
	})
}

func TestBreakerPanicCountsAndFreesProbe(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second))
	p := resilience.Guarded[int](b)
	boom := func(context.Context) (int, error) { panic("boom") }
	assert.PanicsWithValue(t, "boom", func() { _, _ = p.Execute(context.Background(), boom) })
	assert.Equal(t, resilience.BreakerOpen, b.State(), "a panic is a failure")
	mock.Add(time.Second)
	assert.PanicsWithValue(t, "boom", func() { _, _ = p.Execute(context.Background(), boom) })
	assert.Equal(t, resilience.BreakerOpen, b.State(), "a panicking probe reopens it")
	assert.Zero(t, b.Snapshot().Probes, "and frees its probe")
}

func TestBreakerLateOutcomesIgnored(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1))
	early, err := b.Enter(context.Background())
	require.NoError(t, err)
	b.Trip()
	b.Reset()
	early(errDown) // admitted before two state changes
	assert.Equal(t, resilience.BreakerClosed, b.State())
	assert.Zero(t, b.Snapshot().ConsecutiveFailures)
}

func TestBreakerOpenErrorRetryAfter(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(10*time.Second),
		resilience.WithBreakerHintJitter(0))
	outcome(b, errDown)
	mock.Add(4 * time.Second)
	_, err := outcome(b, nil)
	var open *resilience.BreakerOpenError
	require.ErrorAs(t, err, &open)
	assert.Equal(t, 6*time.Second, open.CoolDownLeft())
	assert.Equal(t, 6*time.Second+time.Millisecond, open.RetryAfter(), "the time left, and a millisecond")
	assert.EqualError(t, err, "resilience: circuit breaker open")
}

// TestBreakerRetryWaitsForHalfOpen: a Retry given WithWaitForBreaker
// outside an open breaker waits exactly until the breaker lets a probe
// through (TestRetryOpenBreaker pins what Retry does without it).
func TestBreakerRetryWaitsForHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(5*time.Second),
			resilience.WithBreakerHintJitter(0)) // TestBreakerHintJitter spreads it
		outcome(b, errDown)
		p := resilience.Compose(resilience.Retry[int](resilience.WithWaitForBreaker()), resilience.Guarded[int](b))
		start := time.Now()
		v, err := p.Execute(context.Background(), func(context.Context) (int, error) { return 7, nil })
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		assert.Equal(t, 5*time.Second+time.Millisecond, time.Since(start), "just past the cool-down")
		assert.Equal(t, resilience.BreakerClosed, b.State())
	})
}

// TestBreakerRealClock uses the default clock in a synctest bubble, where
// the cool-down timer fires on fake time.
func TestBreakerRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := resilience.NewBreaker(resilience.WithBreakerThreshold(2), resilience.WithBreakerCoolDown(time.Minute))
		outcome(b, errDown)
		outcome(b, errDown)
		ran, _ := outcome(b, nil)
		assert.False(t, ran)
		time.Sleep(time.Minute - 1)
		assert.Equal(t, resilience.BreakerOpen, b.State())
		time.Sleep(time.Nanosecond) // the cool-down ends now
		synctest.Wait()
		assert.Equal(t, resilience.BreakerHalfOpen, b.State())
		ran, _ = outcome(b, nil)
		assert.True(t, ran)
		assert.Equal(t, resilience.BreakerClosed, b.State())
	})
}

func TestBreakerManualControl(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerCoolDown(time.Second))
	b.Trip()
	assert.Equal(t, resilience.BreakerOpen, b.State())
	b.Reset()
	assert.Equal(t, resilience.BreakerClosed, b.State())
	b.Isolate()
	mock.Add(time.Hour)
	assert.Equal(t, resilience.BreakerOpen, b.State(), "isolated: no cool-down ends it")
	_, err := outcome(b, nil)
	var open *resilience.BreakerOpenError
	require.ErrorAs(t, err, &open)
	assert.Equal(t, time.Duration(1<<63-1), open.RetryAfter())
	m := b.Snapshot()
	assert.True(t, m.Isolated)
	assert.Equal(t, 2, m.Trips)
	b.Reset()
	ran, _ := outcome(b, nil)
	assert.True(t, ran)
}

func TestBreakerSnapshotWindow(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRate(0.9, 10, 10))
	for i := range 8 {
		if i%4 == 0 {
			outcome(b, errDown)
		} else {
			outcome(b, nil)
		}
	}
	m := b.Snapshot()
	assert.Equal(t, resilience.BreakerSnapshot{State: resilience.BreakerClosed, WindowCalls: 8, WindowFailures: 2, FailureRate: 0.25}, m)
}

// TestBreakerStateChangeHook: the hook sees every change in order, and may
// call the breaker without deadlocking.
func TestBreakerStateChangeHook(t *testing.T) {
	mock := clock.NewMock()
	var got []string
	var b *resilience.Breaker
	b = resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second),
		onStateChange(func(from, to resilience.BreakerState) {
			got = append(got, fmt.Sprintf("%v->%v (now %v)", from, to, b.State()))
			if to == resilience.BreakerHalfOpen && len(got) == 2 {
				b.Trip() // a change made from the hook is delivered after this one
			}
		}))
	outcome(b, errDown)
	mock.Add(time.Second)
	b.State()
	mock.Add(time.Second)
	outcome(b, nil)
	assert.Equal(t, []string{
		"closed->open (now open)",
		"open->half-open (now half-open)",
		"half-open->open (now open)", // the Trip made by the hook
		"open->half-open (now half-open)",
		"half-open->closed (now closed)",
	}, got)
}

func TestBreakerStateString(t *testing.T) {
	assert.Equal(t, "closed", resilience.BreakerClosed.String())
	assert.Equal(t, "open", resilience.BreakerOpen.String())
	assert.Equal(t, "half-open", resilience.BreakerHalfOpen.String())
	assert.Equal(t, "BreakerState(7)", resilience.BreakerState(7).String())
}

// TestBreakerStress runs 8 goroutines x 100k calls: first all succeed, then
// all fail. The breaker opens exactly once, every call is answered once,
// and the refusals it counts are the refusals the callers saw.
func TestBreakerStress(t *testing.T) {
	const goroutines = 8
	calls := 100_000
	if raceEnabled {
		calls = 10_000
	}
	mock := clock.NewMock() // time stands still: once open, it stays open
	var changes atomic.Int32
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(3),
		onStateChange(func(_, _ resilience.BreakerState) { changes.Add(1) }))
	p := resilience.Guarded[int](b)
	var ran, refused, answered atomic.Int64
	phase := func(fail bool) {
		var wg sync.WaitGroup
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls / 2 {
					_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
						ran.Add(1)
						if fail {
							return 0, errDown
						}
						return 1, nil
					})
					answered.Add(1)
					if errors.Is(err, resilience.ErrBreakerOpen) {
						refused.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	}
	phase(false)
	assert.Equal(t, resilience.BreakerClosed, b.State())
	assert.Equal(t, int64(goroutines*calls/2), ran.Load(), "every success ran")
	assert.Zero(t, refused.Load())
	phase(true)
	total := int64(goroutines * calls)
	assert.Equal(t, total, answered.Load())
	assert.Equal(t, total, ran.Load()+refused.Load(), "each call ran or was refused, once")
	m := b.Snapshot()
	assert.Equal(t, resilience.BreakerOpen, m.State)
	assert.Equal(t, 1, m.Trips, "opened exactly once")
	assert.Equal(t, int32(1), changes.Load())
	assert.LessOrEqual(t, ran.Load()-total/2, int64(3+goroutines-1), "failures let through: the threshold plus calls already admitted")
	t.Logf("%d calls: %d ran, %d refused", total, ran.Load(), refused.Load())
}

// TestBreakerBadInput sweeps NewBreaker and every option it takes with
// zero, negative, NaN, infinite, huge, nil and typed-nil values: each is
// refused at construction with a message that names the function, the
// option and the value, or has the meaning its documentation gives (want
// is empty, and the breaker is built).
func TestBreakerBadInput(t *testing.T) {
	const (
		maxD   = time.Duration(math.MaxInt64)
		minD   = time.Duration(math.MinInt64)
		maxInt = math.MaxInt
	)
	inf := math.Inf(1)
	rate := func(r float64, minCalls, calls int) func() resilience.BreakerOption {
		return func() resilience.BreakerOption { return resilience.WithBreakerFailureRate(r, minCalls, calls) }
	}
	window := func(r float64, minCalls int, span time.Duration) func() resilience.BreakerOption {
		return func() resilience.BreakerOption { return resilience.WithBreakerFailureRateWindow(r, minCalls, span) }
	}
	tests := []struct {
		name string
		opt  func() resilience.BreakerOption
		want string
	}{
		{"threshold 0: the rule is off", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(0) }, "resilience: NewBreaker: no rule can open the breaker (failure threshold 0 and no failure rate)"},
		{"threshold negative", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(-1) }, "resilience: WithBreakerThreshold: threshold must not be negative, got -1"},
		{"threshold most negative", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(math.MinInt) }, "resilience: WithBreakerThreshold: threshold must not be negative, got -9223372036854775808"},
		{"threshold huge", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(maxInt) }, ""},

		{"expiry 0", func() resilience.BreakerOption { return resilience.WithBreakerFailureExpiry(0) }, "resilience: WithBreakerFailureExpiry: expiry must be positive, got 0s"},
		{"expiry negative", func() resilience.BreakerOption { return resilience.WithBreakerFailureExpiry(-1) }, "resilience: WithBreakerFailureExpiry: expiry must be positive, got -1ns"},
		{"expiry huge", func() resilience.BreakerOption { return resilience.WithBreakerFailureExpiry(maxD) }, ""},

		{"rate 0", rate(0, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got 0"},
		{"rate negative", rate(-0.5, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got -0.5"},
		{"rate above 1", rate(1.5, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got 1.5"},
		{"rate NaN", rate(nan(), 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got NaN"},
		{"rate +Inf", rate(inf, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got +Inf"},
		{"rate -Inf", rate(-inf, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got -Inf"},
		{"rate 1", rate(1, 1, 10), ""},
		{"calls 0", rate(0.5, 1, 0), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got 0"},
		{"calls negative", rate(0.5, 1, -1), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got -1"},
		{"calls huge", rate(0.5, 1, maxInt), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got 9223372036854775807"},
		{"calls one too many", rate(0.5, 1, 1_000_001), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got 1000001"},
		{"calls at the most", rate(0.5, 1_000_000, 1_000_000), ""},
		{"minCalls 0", rate(0.5, 0, 10), "resilience: WithBreakerFailureRate: minCalls must be between 1 and calls (10), got 0"},
		{"minCalls negative", rate(0.5, -1, 10), "resilience: WithBreakerFailureRate: minCalls must be between 1 and calls (10), got -1"},
		{"minCalls above calls", rate(0.5, 11, 10), "resilience: WithBreakerFailureRate: minCalls must be between 1 and calls (10), got 11"},

		{"window rate NaN", window(nan(), 1, time.Second), "resilience: WithBreakerFailureRateWindow: rate must be in (0, 1], got NaN"},
		{"window rate +Inf", window(inf, 1, time.Second), "resilience: WithBreakerFailureRateWindow: rate must be in (0, 1], got +Inf"},
		{"window rate 0", window(0, 1, time.Second), "resilience: WithBreakerFailureRateWindow: rate must be in (0, 1], got 0"},
		{"window minCalls 0", window(0.5, 0, time.Second), "resilience: WithBreakerFailureRateWindow: minCalls must be at least 1, got 0"},
		{"window minCalls negative", window(0.5, -3, time.Second), "resilience: WithBreakerFailureRateWindow: minCalls must be at least 1, got -3"},
		{"window minCalls huge: that many outcomes first", window(0.5, maxInt, time.Second), ""},
		{"window span 0", window(0.5, 1, 0), "resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got 0s"},
		{"window span negative", window(0.5, 1, minD), "resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got -2562047h47m16.854775808s"},
		{"window span too short", window(0.5, 1, 9), "resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got 9ns"},
		{"window span huge", window(0.5, 1, maxD), ""},

		{"slow 0", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(0) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got 0s"},
		{"slow negative", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(-time.Second) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got -1s"},
		{"slow beyond what is measured", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(144*time.Hour + 1) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got 144h0m0.000000001s"},
		{"slow huge", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(maxD) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got 2562047h47m16.854775807s"},
		{"slow at the most", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(144 * time.Hour) }, ""},

		{"cool-down 0: a probe at once", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(0) }, ""},
		{"cool-down negative", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(-1) }, "resilience: WithBreakerCoolDown: d must not be negative, got -1ns"},
		{"cool-down most negative", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(minD) }, "resilience: WithBreakerCoolDown: d must not be negative, got -2562047h47m16.854775808s"},
		{"cool-down huge", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(maxD) }, ""},
		{"growth nil", func() resilience.BreakerOption { return resilience.WithBreakerCoolDownBackoff(nil) }, "resilience: WithBreakerCoolDownBackoff: backoff is nil"},
		{"growth typed nil", func() resilience.BreakerOption {
			return resilience.WithBreakerCoolDownBackoff(resilience.BackoffFunc(nil))
		}, "resilience: WithBreakerCoolDownBackoff: backoff is a nil resilience.BackoffFunc"},

		{"probes 0", func() resilience.BreakerOption { return resilience.WithBreakerProbes(0) }, "resilience: WithBreakerProbes: probes must be at least 1, got 0"},
		{"probes negative", func() resilience.BreakerOption { return resilience.WithBreakerProbes(-1) }, "resilience: WithBreakerProbes: probes must be at least 1, got -1"},
		{"probes huge", func() resilience.BreakerOption { return resilience.WithBreakerProbes(maxInt) }, ""},
		{"successes 0", func() resilience.BreakerOption { return resilience.WithBreakerSuccessThreshold(0) }, "resilience: WithBreakerSuccessThreshold: successes must be at least 1, got 0"},
		{"successes negative", func() resilience.BreakerOption { return resilience.WithBreakerSuccessThreshold(-1) }, "resilience: WithBreakerSuccessThreshold: successes must be at least 1, got -1"},
		{"successes huge", func() resilience.BreakerOption { return resilience.WithBreakerSuccessThreshold(maxInt) }, ""},

		{"jitter 0: no jitter", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(0) }, ""},
		{"jitter 1", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(1) }, ""},
		{"jitter negative", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(-0.1) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got -0.1"},
		{"jitter above 1", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(1.5) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got 1.5"},
		{"jitter NaN", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(nan()) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got NaN"},
		{"jitter +Inf", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(inf) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got +Inf"},
		{"jitter -Inf", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(-inf) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got -Inf"},

		{"classifier nil", func() resilience.BreakerOption { return resilience.WithBreakerClassifier(nil) }, "resilience: WithBreakerClassifier: classifier is nil"},
		{"clock nil", func() resilience.BreakerOption { return resilience.WithClock(nil) }, "resilience: WithClock: clock is nil"},
		{"clock typed nil", func() resilience.BreakerOption { return resilience.WithClock((*clock.Mock)(nil)) }, "resilience: WithClock: clock is a nil *clock.Mock"},
		{"observer nil", func() resilience.BreakerOption { return resilience.WithObserver(nil) }, "resilience: WithObserver: observer is nil"},
		{"observer typed nil", func() resilience.BreakerOption { return resilience.WithObserver(resilience.ObserverFunc(nil)) }, "resilience: WithObserver: observer is a nil resilience.ObserverFunc"},
		{"name empty: no name", func() resilience.BreakerOption { return resilience.WithName("") }, ""},
		{"option nil", func() resilience.BreakerOption { return nil }, "resilience: NewBreaker: option is nil"},
		{"the zero Option", func() resilience.BreakerOption { return resilience.Option{} }, "resilience: NewBreaker: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := func() { resilience.NewBreaker(resilience.WithClock(clock.NewMock()), tc.opt()) }
			if tc.want == "" {
				assert.NotPanics(t, build)
				return
			}
			assert.PanicsWithValue(t, tc.want, build)
		})
	}
	t.Run("expiry with threshold 0", func(t *testing.T) {
		assert.PanicsWithValue(t, "resilience: NewBreaker: WithBreakerFailureExpiry(1s) has no effect with WithBreakerThreshold(0)", func() {
			resilience.NewBreaker(resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRate(0.5, 1, 10), resilience.WithBreakerFailureExpiry(time.Second))
		})
	})
}

func BenchmarkBreaker(b *testing.B) {
	ctx := context.Background()
	b.Run("closed-success", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("closed-success-parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("open-refusal", func(b *testing.B) {
		br := resilience.NewBreaker()
		br.Trip()
		p := resilience.Guarded[int](br)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("closed-success-rate-window", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerFailureRate(0.5, 10, 100)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("closed-success-rate-window-parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerFailureRate(0.5, 10, 100)))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("closed-success-time-window", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithBreakerFailureRateWindow(0.5, 10, time.Minute)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	observer := &counter{}
	b.Run("closed-success-observed", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBreaker(resilience.WithObserver(observer)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("open-refusal-observed", func(b *testing.B) {
		br := resilience.NewBreaker(resilience.WithObserver(observer))
		br.Trip()
		p := resilience.Guarded[int](br)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
}

// floorPolicy is the least a Policy can cost: it calls fn, or refuses.
type floorPolicy struct{ refuse error }

func (p floorPolicy) Execute(ctx context.Context, fn resilience.Func[int]) (int, error) {
	if p.refuse != nil {
		return 0, p.refuse
	}
	return fn(ctx)
}

// BenchmarkPolicyFloor is the floor the Breaker rows stand beside: a call
// through a Policy that calls fn, and one through a Policy that refuses.
func BenchmarkPolicyFloor(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"call", floorPolicy{}},
		{"refuse", floorPolicy{refuse: resilience.ErrBreakerOpen}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = bc.p.Execute(ctx, okFunc)
			}
		})
	}
}

// TestBreakerRefusalPublishedWithItsError: a call that sees the breaker
// open gets that trip's refusal, never a nil *BreakerOpenError (on which
// RetryAfter panics) nor the one of an earlier trip. The cool-down backoff,
// which the breaker asks while it trips, makes the call at that moment.
func TestBreakerRefusalPublishedWithItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *resilience.Breaker
		var trap func()
		growth := resilience.BackoffFunc(func(int, time.Duration) (time.Duration, bool) {
			if f := trap; f != nil {
				trap = nil
				f()
			}
			return time.Hour, true
		})
		b = resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDownBackoff(growth))
		callDuringTrip := func(trip string) {
			t.Helper()
			var err error
			trap = func() {
				var done func(error)
				done, err = b.Enter(context.Background())
				if err == nil {
					done(context.Canceled) // counts neither way
				}
			}
			outcome(b, errDown)
			require.Equal(t, resilience.BreakerOpen, b.State(), trip)
			if err == nil {
				return // admitted: the call came before the trip
			}
			var open *resilience.BreakerOpenError
			require.ErrorAs(t, err, &open, trip)
			require.NotNil(t, open, "%s: the refusal is a nil *BreakerOpenError", trip)
			assert.Equal(t, time.Hour, open.CoolDownLeft(), "%s: the refusal is of this trip", trip)
			hint, ok := resilience.RetryAfter(err)
			assert.True(t, ok && hint > time.Hour, "%s: hint %v", trip, hint)
		}
		callDuringTrip("first trip")
		time.Sleep(time.Minute)
		b.Reset()
		callDuringTrip("second trip")
		b.Reset() // stops the cool-down's timer
	})
}

// TestBreakerOneDelivererAtATime: the state-change hook never runs twice
// at once, nor inside itself: a change made by the hook, or by another
// goroutine while the hook runs, is delivered after it returns, by the
// goroutine delivering.
func TestBreakerOneDelivererAtATime(t *testing.T) {
	t.Run("a change made by the hook", func(t *testing.T) {
		var b *resilience.Breaker
		var log []string
		depth := 0
		b = resilience.NewBreaker(resilience.WithClock(clock.NewMock()), resilience.WithBreakerThreshold(1),
			onStateChange(func(from, to resilience.BreakerState) {
				depth++
				defer func() { depth-- }()
				log = append(log, fmt.Sprintf("%v->%v at depth %d", from, to, depth))
				if to == resilience.BreakerOpen {
					b.Reset()
					log = append(log, "Reset returned")
				}
			}))
		b.Trip()
		assert.Equal(t, []string{"closed->open at depth 1", "Reset returned", "open->closed at depth 1"}, log)
	})
	t.Run("a change made meanwhile by another goroutine", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		var running, overlaps atomic.Int32
		var mu sync.Mutex
		var got []string
		b := resilience.NewBreaker(resilience.WithClock(clock.NewMock()), resilience.WithBreakerThreshold(1),
			onStateChange(func(from, to resilience.BreakerState) {
				if running.Add(1) > 1 {
					overlaps.Add(1)
				}
				defer running.Add(-1)
				mu.Lock()
				got = append(got, fmt.Sprintf("%v->%v", from, to))
				first := len(got) == 1
				mu.Unlock()
				if first {
					close(entered)
					<-release
				}
			}))
		tripped := make(chan struct{})
		go func() {
			defer close(tripped)
			b.Trip() // delivers closed->open, and waits in the hook
		}()
		<-entered
		b.Reset() // queued for the goroutine delivering: returns without calling the hook
		mu.Lock()
		assert.Equal(t, []string{"closed->open"}, got, "Reset ran the hook while it was running")
		mu.Unlock()
		close(release)
		<-tripped
		assert.Equal(t, []string{"closed->open", "open->closed"}, got)
		assert.Zero(t, overlaps.Load(), "the hook ran twice at once")
	})
}

// TestBreakerHookPanicsOnce: a hook that panics once does not silence the
// hook: the panic goes up through the call that was delivering, and later
// changes are delivered.
func TestBreakerHookPanicsOnce(t *testing.T) {
	mock := clock.NewMock()
	var got []string
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second),
		onStateChange(func(from, to resilience.BreakerState) {
			if len(got) == 0 {
				got = append(got, "panicked")
				panic("hook")
			}
			got = append(got, fmt.Sprintf("%v->%v", from, to))
		}))
	assert.PanicsWithValue(t, "hook", func() { outcome(b, errDown) })
	assert.Equal(t, resilience.BreakerOpen, b.State(), "the change was made before the hook ran")
	mock.Add(time.Second)
	ran, err := outcome(b, nil)
	require.True(t, ran)
	require.NoError(t, err)
	assert.Equal(t, []string{"panicked", "open->half-open", "half-open->closed"}, got)
}

// TestBreakerPanicInCoolDownBackoff: a cool-down backoff that panics opens
// the breaker for the base cool-down, lets the panic go on up through the
// call that tripped it, and leaves no lock held: the breaker keeps
// working.
func TestBreakerPanicInCoolDownBackoff(t *testing.T) {
	mock := clock.NewMock()
	boom := resilience.BackoffFunc(func(n int, prev time.Duration) (time.Duration, bool) {
		if n == 2 {
			panic("backoff")
		}
		return time.Duration(n) * time.Minute, true
	})
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1),
		resilience.WithBreakerCoolDown(time.Second), resilience.WithBreakerCoolDownBackoff(boom))
	outcome(b, errDown)
	mock.Add(time.Minute)
	assert.PanicsWithValue(t, "backoff", func() { outcome(b, errDown) }, "the failed probe's trip asks the backoff")
	_, err := outcome(b, nil)
	var open *resilience.BreakerOpenError
	require.ErrorAs(t, err, &open)
	assert.Equal(t, time.Minute, open.CoolDownLeft(), "opened for the last cool-down")
	m := b.Snapshot() // hung when the lock stayed held
	assert.Equal(t, 2, m.Trips)
	assert.Zero(t, m.Probes)
	b.Reset()
	ran, _ := outcome(b, nil)
	assert.True(t, ran)
	assert.Equal(t, resilience.BreakerClosed, b.State())
}

// TestBreakerWindowKeepsTheThreshold: with a failure-rate window, a success
// still starts the consecutive count again, so five failures that are not
// consecutive do not open a breaker with the default threshold.
func TestBreakerWindowKeepsTheThreshold(t *testing.T) {
	for _, window := range []resilience.BreakerOption{
		resilience.WithBreakerFailureRate(0.9, 100, 100),
		resilience.WithBreakerFailureRateWindow(0.9, 100, time.Minute),
	} {
		b := resilience.NewBreaker(resilience.WithClock(clock.NewMock()), window)
		for range 5 {
			outcome(b, errDown)
			outcome(b, nil)
		}
		assert.Equal(t, resilience.BreakerClosed, b.State())
		assert.Zero(t, b.Snapshot().ConsecutiveFailures)
		for range 5 {
			outcome(b, errDown)
		}
		assert.Equal(t, resilience.BreakerOpen, b.State(), "five in a row do")
	}
}

// TestBreakerChurn runs calls that fail at random from several goroutines
// against a breaker with no cool-down, a count window, an observer and a
// hook, while another goroutine trips and resets it. The hook never runs
// twice at once, the changes it and the observer see form one chain (each
// starts where the one before ended), and nothing is left in flight.
// RESILIENCE_STRESS=1 makes it longer.
func TestBreakerChurn(t *testing.T) {
	calls := 2_000
	if os.Getenv("RESILIENCE_STRESS") == "1" {
		calls = 200_000
	}
	var running, overlaps atomic.Int32
	var hooked []resilience.BreakerState // the states changed to, after closed
	obs := &recorder{only: resilience.EventStateChange}
	b := resilience.NewBreaker(resilience.WithBreakerThreshold(3), resilience.WithBreakerFailureRate(0.5, 4, 8),
		resilience.WithBreakerCoolDown(0), resilience.WithBreakerProbes(2), resilience.WithObserver(resilience.MultiObserver(obs,
			stateObserver(func(from, to resilience.BreakerState) {
				if running.Add(1) > 1 {
					overlaps.Add(1)
				}
				defer running.Add(-1)
				hooked = append(hooked, to) // unguarded: the hook never runs twice at once
			}))))
	p := resilience.Guarded[int](b)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range calls {
				_, _ = p.Execute(context.Background(), func(context.Context) (int, error) {
					if (i*7+g)%5 < 2 {
						return 0, errDown
					}
					return 1, nil
				})
				answered.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := range calls / 10 {
			if i%2 == 0 {
				b.Trip()
			} else {
				b.Reset()
			}
			b.State()
		}
	})
	wg.Wait()
	b.State() // delivers anything left
	assert.Equal(t, int64(4*calls), answered.Load())
	assert.Zero(t, overlaps.Load(), "the hook ran twice at once")
	assert.Zero(t, b.Snapshot().Probes, "probes left in flight")
	var observed []resilience.BreakerState
	last := resilience.BreakerClosed
	for _, e := range obs.take() {
		if e.From != last {
			t.Errorf("observed %v->%v after a change to %v", e.From, e.To, last)
		}
		observed = append(observed, e.To)
		last = e.To
	}
	assert.Equal(t, observed, hooked, "the hook and the observer saw the same changes")
	assert.NotEmpty(t, observed)
	t.Logf("%d changes", len(observed))
}

type breakerCtxKey struct{}

// eventLines writes each event rec kept as a line.
func eventLines(rec *recorder) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var lines []string
	for i, e := range rec.events {
		line := fmt.Sprintf("%s %s/%s", e.Kind, e.Component, e.Name)
		switch e.Kind {
		case resilience.EventStateChange:
			line += fmt.Sprintf(" %v->%v", e.From, e.To)
		case resilience.EventRefused:
			line += fmt.Sprintf(" err=%v wait=%v ctx=%v", e.Err, e.Wait, rec.ctxs[i].Value(breakerCtxKey{}))
		case resilience.EventCallEnded:
			line += fmt.Sprintf(" err=%v took=%v", e.Err, e.Duration)
		}
		lines = append(lines, line)
	}
	return lines
}

// TestBreakerEvents: every change of state, every refusal with its hint,
// and, for an observer that asks, every call's end reach the observer in
// order; the hook sees the same changes.
func TestBreakerEvents(t *testing.T) {
	for _, outcomes := range []bool{false, true} {
		t.Run(fmt.Sprintf("outcomes %v", outcomes), func(t *testing.T) {
			clk := newManualClock()
			obs := &recorder{outcomes: outcomes}
			var hooked []string
			hook := stateObserver(func(from, to resilience.BreakerState) {
				hooked = append(hooked, fmt.Sprintf("%v->%v", from, to))
			})
			b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithObserver(resilience.MultiObserver(obs, hook)),
				resilience.WithName("payments"), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second),
				resilience.WithBreakerHintJitter(0))
			// Calling the breaker from each event would deadlock if events
			// were emitted under a lock.
			obs.onEvent = func(resilience.Event) { b.State() }
			call := func(ctx context.Context, took time.Duration, err error) {
				_, _ = resilience.Do(ctx, resilience.Guarded[int](b), func(context.Context) (int, error) {
					clk.Add(took)
					return 0, err
				})
			}
			ctx := context.WithValue(context.Background(), breakerCtxKey{}, "caller")
			call(ctx, 5*time.Millisecond, nil)
			call(ctx, time.Millisecond, errDown)
			call(ctx, 0, nil) // refused
			clk.Add(time.Second)
			call(ctx, 2*time.Millisecond, nil) // the probe
			b.Trip()
			b.Trip() // restarts the cool-down: no change of state
			b.Isolate()
			b.Reset()
			b.Reset()

			var want []string
			ended := func(line string) {
				if outcomes {
					want = append(want, line)
				}
			}
			ended("call-ended breaker/payments err=<nil> took=5ms")
			want = append(want, "state-change breaker/payments closed->open")
			ended("call-ended breaker/payments err=service down took=1ms")
			want = append(want, "refused breaker/payments err=resilience: circuit breaker open wait=1.001s ctx=caller",
				"state-change breaker/payments open->half-open",
				"state-change breaker/payments half-open->closed")
			ended("call-ended breaker/payments err=<nil> took=2ms")
			want = append(want, "state-change breaker/payments closed->open", "state-change breaker/payments open->closed")
			assert.Equal(t, want, eventLines(obs))
			assert.Equal(t, []string{"closed->open", "open->half-open", "half-open->closed", "closed->open", "open->closed"}, hooked)
		})
	}
}

// refusal makes a call through b and returns its *BreakerOpenError.
func refusal(t *testing.T, b *resilience.Breaker) *resilience.BreakerOpenError {
	t.Helper()
	ran, err := outcome(b, nil)
	require.False(t, ran, "the breaker let the call through")
	var open *resilience.BreakerOpenError
	require.ErrorAs(t, err, &open)
	return open
}

// TestBreakerSlowCallClockGoesBack: calls are timed on a clock's
// differences, so a clock that goes back during a call makes it take no
// time, not twelve days; a slow call is still slow.
func TestBreakerSlowCallClockGoesBack(t *testing.T) {
	clk := newManualClock()
	b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1),
		resilience.WithBreakerSlowCallThreshold(100*time.Millisecond))
	call := func(d time.Duration) {
		_, err := resilience.Do(context.Background(), resilience.Guarded[int](b), func(context.Context) (int, error) {
			clk.Add(d)
			return 1, nil
		})
		require.NoError(t, err)
	}
	call(-time.Millisecond)
	assert.Equal(t, resilience.BreakerClosed, b.State(), "a call during which the clock went back is not slow")
	call(-24 * time.Hour)
	assert.Equal(t, resilience.BreakerClosed, b.State())
	call(100 * time.Millisecond)
	assert.Equal(t, resilience.BreakerClosed, b.State(), "exactly the threshold is not too slow")
	call(101 * time.Millisecond)
	assert.Equal(t, resilience.BreakerOpen, b.State(), "a slow call is a failure")
}

// TestBreakerTimeWindowBefore1970: the time window works on a clock set
// before 1970, or moved back before the breaker was made.
func TestBreakerTimeWindowBefore1970(t *testing.T) {
	clk := newManualClock()
	clk.Add(-100*365*24*time.Hour - 3*time.Second) // a bucket number whose remainder is negative
	b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(0),
		resilience.WithBreakerFailureRateWindow(0.5, 3, 10*time.Second))
	outcome(b, errDown)
	clk.Add(-time.Hour - 4*time.Second) // before the breaker was made
	outcome(b, errDown)
	assert.Equal(t, 1, b.Snapshot().WindowCalls, "the outcome an hour ahead does not count")
	outcome(b, nil)
	outcome(b, errDown)
	m := b.Snapshot()
	assert.Equal(t, resilience.BreakerOpen, m.State, "2 of 3")
	assert.Equal(t, 3, m.WindowCalls)
}

// TestBreakerHugeCoolDown: a cool-down that ends past the year 2262 on an
// injected clock does not end at once, and its retry hint saturates
// instead of going negative.
func TestBreakerHugeCoolDown(t *testing.T) {
	const maxDuration = time.Duration(math.MaxInt64)
	for _, opt := range []resilience.BreakerOption{
		resilience.WithBreakerCoolDown(maxDuration),
		resilience.WithBreakerCoolDownBackoff(resilience.Constant(maxDuration)),
	} {
		clk := newManualClock()
		b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1), resilience.WithBreakerHintJitter(0), opt)
		outcome(b, errDown)
		open := refusal(t, b)
		assert.Equal(t, maxDuration, open.CoolDownLeft())
		assert.Equal(t, maxDuration, open.RetryAfter(), "saturated")
		clk.Add(100 * 365 * 24 * time.Hour)
		assert.Equal(t, resilience.BreakerOpen, b.State())
		open = refusal(t, b)
		assert.Equal(t, maxDuration-100*365*24*time.Hour, open.CoolDownLeft())
		hint, ok := resilience.RetryAfter(open)
		assert.True(t, ok)
		assert.Equal(t, open.CoolDownLeft()+time.Millisecond, hint)
	}
	b := resilience.NewBreaker(resilience.WithClock(newManualClock()), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(maxDuration),
		resilience.WithBreakerHintJitter(1))
	outcome(b, errDown)
	assert.Equal(t, maxDuration, refusal(t, b).RetryAfter(), "saturated with jitter too")
}

// TestBreakerHintJitter: with a jitter of 0.2, the refusals' retry hints
// spread over the 20% of the cool-down left that follow the instant the
// breaker half-opens (plus the millisecond's margin), and none is earlier.
// By default there is no jitter.
func TestBreakerHintJitter(t *testing.T) {
	clk := newManualClock()
	b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(10*time.Second),
		resilience.WithBreakerHintJitter(0.2))
	outcome(b, errDown)
	clk.Add(2 * time.Second)
	open := refusal(t, b)
	const (
		draws = 10_000
		bins  = 8
		left  = 8 * time.Second
		lo    = left + time.Millisecond
		width = left / 5
	)
	var hist [bins]int
	var sum time.Duration
	seen := map[time.Duration]bool{}
	for range draws {
		h := open.RetryAfter()
		require.GreaterOrEqual(t, h, lo, "earlier than the half-open instant")
		require.LessOrEqual(t, h, lo+width)
		hist[min(int((h-lo)*bins/width), bins-1)]++
		sum += h - lo
		seen[h] = true
	}
	for i, n := range hist {
		assert.InDelta(t, draws/bins, n, draws/bins*0.3, "bin %d of %v", i, hist)
	}
	assert.InDelta(t, float64(width/2), float64(sum/draws), float64(width)/20, "mean")
	assert.Greater(t, len(seen), draws*9/10, "hints are spread, not shared")

	clk.Add(left)
	assert.Equal(t, time.Millisecond, open.RetryAfter(), "nothing to spread once the cool-down is over")

	still := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(1))
	outcome(still, errDown)
	open = refusal(t, still)
	for range 100 {
		require.Equal(t, 30*time.Second+time.Millisecond, open.RetryAfter(), "no jitter by default")
	}
}

// TestBreakerCrossesBubbles: a breaker tripped inside a testing/synctest
// bubble and reset outside it, and the other way round, as a breaker
// shared by a package's synctest tests and its other tests is: the
// cool-down's timer made in the bubble is never touched from outside.
func TestBreakerCrossesBubbles(t *testing.T) {
	b := resilience.NewBreaker(resilience.WithBreakerCoolDown(time.Hour))
	synctest.Test(t, func(t *testing.T) { b.Trip() })
	b.Reset()
	b.Trip()
	synctest.Test(t, func(t *testing.T) { b.Reset() })
	require.Equal(t, resilience.BreakerClosed, b.State())
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
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
	assert.Equal(t, 2, b.Metrics().Probes)
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
	assert.Zero(t, b.Metrics().Probes, "and frees its probe")
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
	assert.Zero(t, b.Metrics().ConsecutiveFailures)
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

// TestBreakerRetryWaitsForHalfOpen: a Retry outside an open breaker waits
// exactly until the breaker lets a probe through.
func TestBreakerRetryWaitsForHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(5*time.Second),
			resilience.WithBreakerHintJitter(0)) // TestBreakerHintJitter spreads it
		outcome(b, errDown)
		p := resilience.Compose(resilience.Retry[int](), resilience.Guarded[int](b))
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
	m := b.Metrics()
	assert.True(t, m.Isolated)
	assert.Equal(t, 2, m.Trips)
	b.Reset()
	ran, _ := outcome(b, nil)
	assert.True(t, ran)
}

func TestBreakerMetricsWindow(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRate(0.9, 10, 10))
	for i := range 8 {
		if i%4 == 0 {
			outcome(b, errDown)
		} else {
			outcome(b, nil)
		}
	}
	m := b.Metrics()
	assert.Equal(t, resilience.BreakerMetrics{State: resilience.BreakerClosed, WindowCalls: 8, WindowFailures: 2, FailureRate: 0.25}, m)
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
	m := b.Metrics()
	assert.Equal(t, resilience.BreakerOpen, m.State)
	assert.Equal(t, 1, m.Trips, "opened exactly once")
	assert.Equal(t, int32(1), changes.Load())
	assert.LessOrEqual(t, ran.Load()-total/2, int64(3+goroutines-1), "failures let through: the threshold plus calls already admitted")
	t.Logf("%d calls: %d ran, %d refused", total, ran.Load(), refused.Load())
}

package resilience

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBreakerAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	closed := NewBreaker()
	open := NewBreaker(WithClock(clock.NewMock()))
	open.Trip()
	p := Guarded[int](closed)
	q := Guarded[int](open)
	c := Compose(Retry[int](), Guarded[int](closed), Guarded[int](NewBulkhead(4)))
	counted := Guarded[int](NewBreaker(WithBreakerFailureRate(0.5, 10, 100)))
	timed := Guarded[int](NewBreaker(WithBreakerFailureRateWindow(0.5, 10, time.Minute)))
	observed := NewBreaker(WithObserver(&counter{}), WithClock(clock.NewMock()))
	observed.Trip()
	outcomes := Guarded[int](NewBreaker(WithObserver(&counter{Outcomes: true})))
	refusedObserved := Guarded[int](observed)
	errX := errors.New("x")
	tests := []struct {
		name string
		f    func()
	}{
		{"closed success", func() { _, _ = p.Execute(ctx, okFunc) }},
		{"open refusal", func() { _, _ = q.Execute(ctx, okFunc) }},
		{"composed success", func() { _, _ = c.Execute(ctx, okFunc) }},
		{"Enter closed", func() {
			done, _ := closed.Enter(ctx)
			done(nil)
		}},
		{"closed failure below threshold", func() {
			done, _ := closed.Enter(ctx)
			done(errX)
			done, _ = closed.Enter(ctx)
			done(nil)
		}},
		{"closed success, count window", func() { _, _ = counted.Execute(ctx, okFunc) }},
		{"closed success, time window", func() { _, _ = timed.Execute(ctx, okFunc) }},
		{"refusal, observed", func() { _, _ = refusedObserved.Execute(ctx, okFunc) }},
		{"closed success, outcomes observed", func() { _, _ = outcomes.Execute(ctx, okFunc) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("allocates %v times per call, want 0", allocs)
			}
		})
	}
	// A change of state allocates its new view; reporting it allocates
	// nothing more.
	changes := func(b *Breaker) float64 {
		return testing.AllocsPerRun(100, func() {
			b.Trip()
			b.Reset()
		})
	}
	plain := changes(NewBreaker(WithClock(clock.NewMock())))
	reported := changes(NewBreaker(WithClock(clock.NewMock()), WithObserver(&counter{})))
	assert.Equal(t, plain, reported, "allocations of Trip and Reset, reported and not")
}

// TestBreakerMachine feeds the state machine events and times directly.
func TestBreakerMachine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const maxD = time.Duration(1<<63 - 1)
	type want struct {
		state  BreakerState
		gen    uint64
		probes int
	}
	tests := []struct {
		name string
		run  func(t *testing.T, m *machine)
		want want
	}{
		{"closed admits without probes", func(t *testing.T, m *machine) {
			ok, probe := m.admit(t0, 1)
			assert.True(t, ok)
			assert.False(t, probe)
		}, want{BreakerClosed, 0, 0}},
		{"open refuses before the cool-down ends", func(t *testing.T, m *machine) {
			m.open(t0, time.Second, false)
			ok, _ := m.admit(t0.Add(time.Second-1), 1)
			assert.False(t, ok)
		}, want{BreakerOpen, 1, 0}},
		{"half-open at the instant it ends, one probe", func(t *testing.T, m *machine) {
			m.open(t0, time.Second, false)
			ok, probe := m.admit(t0.Add(time.Second), 1)
			assert.True(t, ok && probe)
			ok, _ = m.admit(t0.Add(time.Second), 1)
			assert.False(t, ok, "probes busy")
		}, want{BreakerHalfOpen, 2, 1}},
		{"a clock that goes back keeps it open", func(t *testing.T, m *machine) {
			m.open(t0, time.Second, false)
			assert.False(t, m.advance(t0.Add(-time.Hour)))
		}, want{BreakerOpen, 1, 0}},
		{"isolated: no time ends it", func(t *testing.T, m *machine) {
			m.open(t0, 0, true)
			assert.False(t, m.advance(t0.Add(maxD)))
		}, want{BreakerOpen, 1, 0}},
		{"a cool-down past 2262 is kept", func(t *testing.T, m *machine) {
			m.open(time.Unix(0, 0), maxD, false)
			assert.False(t, m.advance(time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC)))
			assert.True(t, m.advance(time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC)))
		}, want{BreakerHalfOpen, 2, 0}},
		{"successful probes close it", func(t *testing.T, m *machine) {
			m.open(t0, 0, false)
			m.admit(t0, 2)
			m.admit(t0, 2)
			assert.False(t, m.probeEnded(2, false, true, 2))
			assert.Equal(t, BreakerHalfOpen, m.state)
			assert.False(t, m.probeEnded(2, false, true, 2))
		}, want{BreakerClosed, 3, 0}},
		{"a failed probe asks to reopen", func(t *testing.T, m *machine) {
			m.open(t0, 0, false)
			m.admit(t0, 1)
			assert.True(t, m.probeEnded(2, true, true, 1))
		}, want{BreakerHalfOpen, 2, 0}},
		{"an outcome that does not count frees its probe", func(t *testing.T, m *machine) {
			m.open(t0, 0, false)
			m.admit(t0, 1)
			assert.False(t, m.probeEnded(2, true, false, 1))
		}, want{BreakerHalfOpen, 2, 0}},
		{"a probe of an earlier generation is ignored", func(t *testing.T, m *machine) {
			m.open(t0, 0, false)
			m.admit(t0, 1)
			assert.False(t, m.probeEnded(1, true, true, 1))
		}, want{BreakerHalfOpen, 2, 1}},
		{"close forgets", func(t *testing.T, m *machine) {
			m.open(t0, time.Second, false)
			m.failureExpired(t0, time.Second)
			m.close()
			assert.Zero(t, m.trips)
			assert.Zero(t, m.coolDown)
			assert.False(t, m.hasLastFailure)
			assert.Equal(t, 1, m.allTrips)
		}, want{BreakerClosed, 2, 0}},
		{"failure expiry", func(t *testing.T, m *machine) {
			assert.False(t, m.failureExpired(t0, time.Second), "first")
			assert.False(t, m.failureExpired(t0.Add(time.Second), time.Second), "exactly the expiry later")
			assert.True(t, m.failureExpired(t0.Add(2*time.Second+1), time.Second))
			assert.False(t, m.failureExpired(t0, time.Second), "a clock that went back")
		}, want{BreakerClosed, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m machine
			tc.run(t, &m)
			assert.Equal(t, tc.want, want{m.state, m.gen, m.probes})
		})
	}
	rates := []struct {
		rate                     float64
		minCalls, calls, failing int
		want                     bool
	}{
		{0.5, 4, 3, 3, false},
		{0.5, 4, 4, 2, true},
		{0.5, 4, 4, 1, false},
		{1, 1, 1, 1, true},
		{0.1, 1, 1000, 99, false},
		{0.1, 1, 1000, 100, true},
	}
	for _, r := range rates {
		assert.Equal(t, r.want, rateTrips(r.rate, r.minCalls, r.calls, r.failing), "%+v", r)
	}
}

// TestBreakerUnlocksWhenBackoffPanics: a cool-down backoff that panics or
// calls runtime.Goexit leaves the breaker's lock free, and the breaker
// open when it could be opened.
func TestBreakerUnlocksWhenBackoffPanics(t *testing.T) {
	for _, exit := range []func(){func() { panic("backoff") }, runtime.Goexit} {
		b := NewBreaker(WithClock(clock.NewMock()), WithBreakerThreshold(1),
			WithBreakerCoolDownBackoff(BackoffFunc(func(int, time.Duration) (time.Duration, bool) {
				exit()
				return 0, false
			})))
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			defer func() { _ = recover() }()
			b.Trip()
		}()
		<-ended
		require.True(t, b.mu.TryLock(), "the lock is still held")
		b.mu.Unlock()
		b.Reset()
		assert.Equal(t, BreakerClosed, b.State())
	}
}

// TestBreakerHintJitterBounds draws the jitter from an injected source:
// the hint is the cool-down left plus the margin at the least, plus 20% of
// the cool-down left at the most, and a seeded source spreads it evenly.
func TestBreakerHintJitterBounds(t *testing.T) {
	mock := clock.NewMock()
	b := NewBreaker(WithClock(mock), WithBreakerThreshold(1), WithBreakerCoolDown(10*time.Second), WithBreakerHintJitter(0.2))
	b.Trip()
	mock.Add(2 * time.Second)
	e := b.view.Load().err
	const left = 8 * time.Second
	b.cfg.rand = source{fixedRand(0)}
	assert.Equal(t, left+time.Millisecond, e.RetryAfter())
	b.cfg.rand = source{fixedRand(1<<64 - 1)}
	assert.Equal(t, left+time.Millisecond+left/5, e.RetryAfter())

	b.cfg.rand = source{rand.New(rand.NewPCG(3, 4))}
	var tenths [10]int
	for range 1000 {
		tenths[(e.RetryAfter()-left-time.Millisecond)*10/(left/5+1)]++
	}
	for i, n := range tenths {
		assert.InDelta(t, 100, n, 40, "tenth %d of %v", i, tenths)
	}
}

// fixedRand always draws the same number.
type fixedRand uint64

func (r fixedRand) Uint64() uint64 { return uint64(r) }

// TestBreakerCountWindowSuccessIsLockFree: with a count-based failure
// window, a success in the closed state reads no clock and takes no lock.
// The test holds the lock while the successes run; if one waited for it, a
// watchdog would release it after a long while and fail the test.
func TestBreakerCountWindowSuccessIsLockFree(t *testing.T) {
	clk := newManualClock()
	b := NewBreaker(WithClock(clk), WithBreakerFailureRate(0.5, 10, 100))
	p := Guarded[int](b)
	outcome := func(err error) {
		_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, err })
	}
	for range 10 {
		outcome(nil) // the tenth, which fills the minimum of calls, checks the rate under the lock
	}
	for range 4 {
		outcome(errors.New("x")) // a failure takes the lock and reads the clock
	}
	reads := clk.Reads()
	b.mu.Lock()
	finished := make(chan struct{})
	var waited atomic.Bool
	go func() {
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			waited.Store(true)
			b.mu.Unlock()
		}
	}()
	for range 200 {
		outcome(nil)
	}
	close(finished)
	require.False(t, waited.Load(), "a success waited for the lock")
	b.mu.Unlock()
	assert.Equal(t, reads, clk.Reads(), "a success read the clock")
	m := b.Snapshot()
	assert.Equal(t, [2]int{100, 0}, [2]int{m.WindowCalls, m.WindowFailures})
}

// TestBreakerQueueDrained: after a hook panicked, the changes still
// queued are delivered and the queue is empty again.
func TestBreakerQueueDrained(t *testing.T) {
	n := 0
	b := NewBreaker(WithClock(clock.NewMock()), WithObserver(ObserverFunc(func(_ context.Context, e Event) {
		if e.Kind != EventStateChange {
			return
		}
		n++
		if n == 1 {
			panic("hook")
		}
	})))
	assert.Panics(t, b.Trip)
	for range 1000 {
		b.Reset()
		b.Trip()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Equal(t, 2001, n)
	assert.Equal(t, b.out.head, len(b.out.queue), "nothing left in the queue")
	assert.False(t, b.out.delivering)
}

// TestBreakerLeanView: which closed breakers Guarded admits and settles on
// its own, with no call of enter or exit: those whose success only ends a
// run of failures (no window, no failure expiry, no timing of calls).
// Their calls count as any other's: failures still trip the breaker.
func TestBreakerLeanView(t *testing.T) {
	tests := []struct {
		name string
		b    *Breaker
		lean bool
	}{
		{"default", NewBreaker(), true},
		{"count window", NewBreaker(WithBreakerFailureRate(0.5, 10, 100)), false},
		{"time window", NewBreaker(WithBreakerFailureRateWindow(0.5, 10, time.Minute)), false},
		{"failure expiry", NewBreaker(WithBreakerFailureExpiry(time.Minute)), false},
		{"slow calls", NewBreaker(WithBreakerSlowCallThreshold(time.Minute)), false},
		{"outcomes observed", NewBreaker(WithObserver(&counter{Outcomes: true})), false},
	}
	errX := errors.New("x")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.view.Load().lean; got != tc.lean {
				t.Errorf("lean = %v, want %v", got, tc.lean)
			}
			if !tc.lean {
				return
			}
			p := Guarded[int](tc.b)
			for range 4 {
				_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, errX })
			}
			_, _ = p.Execute(context.Background(), okFunc) // ends the run of failures
			for range 4 {
				_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, errX })
			}
			if tc.b.State() != BreakerClosed {
				t.Errorf("state %v after two runs of 4 failures, want closed", tc.b.State())
			}
			_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, errX })
			if tc.b.State() != BreakerOpen {
				t.Errorf("state %v after a run of 5 failures, want open", tc.b.State())
			}
		})
	}
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdaptiveLimiterConverges runs a server of 20 workers taking 10ms a
// call (2000 calls/s) behind the limiter through a day of changes: load
// from half the capacity to three times and back, and the capacity
// halved for a while. In every stretch, once it has settled, the limit
// stays near the concurrency the server serves without a queue (the
// normal priority's 80% share of it between that and twice that), the server serves at least 90% of what it can,
// and the calls it admits are at most twice as slow at p99 as unloaded.
func TestAdaptiveLimiterConverges(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk))
			srv := newSimServer(clk, seed, 20, 10*time.Millisecond)
			base := srv.run(l, 0.5*srv.capacity(), 0, 20*time.Second)
			unloadedP99 := base.quantile(0.99)
			steps := []struct {
				name    string
				workers int
				load    float64 // times the full capacity, 20 workers
			}{
				{"1.5x", 20, 1.5},
				{"2x", 20, 2},
				{"3x", 20, 3},
				{"capacity halved", 10, 3},
				{"capacity back", 20, 3},
				{"back to 0.5x", 20, 0.5},
			}
			for _, st := range steps {
				srv.workers = st.workers
				full := 20 / srv.service.Seconds()
				srv.run(l, st.load*full, 0, 10*time.Second) // settling
				got := srv.run(l, st.load*full, 0, 20*time.Second)
				want := min(st.load*full, srv.capacity())
				assert.GreaterOrEqual(t, got.goodput(20*time.Second), 0.9*want, "%s: goodput", st.name)
				if st.load*full > srv.capacity() {
					share := got.medianLimit() * 8 / 10
					assert.GreaterOrEqual(t, share, st.workers, "%s: limit", st.name)
					assert.LessOrEqual(t, share, 2*st.workers, "%s: limit", st.name)
					assert.LessOrEqual(t, got.quantile(0.99), 2*unloadedP99, "%s: p99 (unloaded %v)", st.name, unloadedP99)
				}
			}
		})
	}
}

// TestAdaptiveLimiterNoDrift holds a steady overload of 1.5 times the
// capacity for ten minutes: the limit at the end is within 10% of the limit
// after one (Gradient2 creeps up here; Vegas' baseline drifts up).
func TestAdaptiveLimiterNoDrift(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk))
	srv := newSimServer(clk, 7, 20, 10*time.Millisecond)
	srv.run(l, 1.5*srv.capacity(), 0, 50*time.Second)
	first := srv.run(l, 1.5*srv.capacity(), 0, 20*time.Second).medianLimit()
	srv.run(l, 1.5*srv.capacity(), 0, 520*time.Second)
	last := srv.run(l, 1.5*srv.capacity(), 0, 20*time.Second).medianLimit()
	assert.InDelta(t, first, last, 0.1*float64(first), "limit after 1 minute %d, after 10 %d", first, last)
}

// TestAdaptiveLimiterRefusal: a call beyond its share of the limit is
// refused with an error that matches ErrLimitExceeded, carries the call's
// priority and a hint, and leaves the counts as they were.
func TestAdaptiveLimiterRefusal(t *testing.T) {
	l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(10))
	ctx := context.Background()
	for range 8 { // the normal share of 10
		_, err := l.Enter(ctx)
		require.NoError(t, err)
	}
	tests := []struct {
		p       resilience.Priority
		refused bool
	}{
		{resilience.PrioritySheddable, true},
		{resilience.PriorityLow, true},
		{resilience.PriorityNormal, true},
		{resilience.PriorityHigh, false},
		{resilience.PriorityCritical, false},
	}
	for _, tc := range tests {
		t.Run(tc.p.String(), func(t *testing.T) {
			done, err := l.Enter(resilience.WithPriority(ctx, tc.p))
			if !tc.refused {
				require.NoError(t, err)
				done(nil)
				return
			}
			require.ErrorIs(t, err, resilience.ErrLimitExceeded)
			var se *resilience.ShedError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.p, se.Priority())
			d, ok := resilience.RetryAfter(err)
			assert.True(t, ok, "a refusal carries a hint")
			assert.GreaterOrEqual(t, d, time.Millisecond)
		})
	}
	assert.Equal(t, 8, l.InFlight())
	assert.Zero(t, l.Waiting())
	assert.Equal(t, 10, l.Limit())
}

// TestAdaptiveLimiterShares: a call is admitted while fewer calls than its
// priority's share of the limit are in flight, and refused from there on;
// a priority outside the named ones counts as the nearest, and every
// priority may use a limit of 1.
func TestAdaptiveLimiterShares(t *testing.T) {
	tests := []struct {
		limit int
		p     resilience.Priority
		share int
	}{
		{10, resilience.PrioritySheddable, 5},
		{10, resilience.PriorityLow, 7},
		{10, resilience.PriorityNormal, 8},
		{10, resilience.PriorityHigh, 9},
		{10, resilience.PriorityCritical, 10},
		{10, -5, 5},
		{10, 7, 10},
		{100, resilience.PrioritySheddable, 50},
		{100, resilience.PriorityLow, 70},
		{1, resilience.PrioritySheddable, 1},
		{1, resilience.PriorityNormal, 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("limit %d, %v", tc.limit, tc.p), func(t *testing.T) {
			l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 100), resilience.WithAdaptiveInitial(tc.limit))
			ctx := resilience.WithPriority(context.Background(), tc.p)
			crit := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
			var held []func(error)
			for n := 0; n <= tc.limit; n++ {
				done, err := l.Enter(ctx)
				if n < tc.share {
					require.NoError(t, err, "with %d in flight", n)
					done(nil)
				} else {
					require.ErrorIs(t, err, resilience.ErrLimitExceeded, "with %d in flight", n)
				}
				if n < tc.limit {
					done, err := l.Enter(crit)
					require.NoError(t, err)
					held = append(held, done)
				}
			}
			for _, done := range held {
				done(nil)
			}
			assert.Zero(t, l.InFlight())
		})
	}
}

func TestAdaptiveLimiterBadOptions(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"floor 0", func() { resilience.WithAdaptiveLimits(0, 10) }, "resilience: WithAdaptiveLimits: floor must be at least 1, got 0"},
		{"ceiling too big", func() { resilience.WithAdaptiveLimits(1, 1<<40) }, "resilience: WithAdaptiveLimits: ceiling must be at most 2147483647, got 1099511627776"},
		{"floor above ceiling", func() { resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(10, 5)) }, "resilience: NewAdaptiveLimiter: WithAdaptiveLimits floor 10 is above the ceiling 5"},
		{"initial outside", func() {
			resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 5), resilience.WithAdaptiveInitial(6))
		}, "resilience: NewAdaptiveLimiter: WithAdaptiveInitial 6 is outside the limits [1, 5]"},
		{"initial 0", func() { resilience.WithAdaptiveInitial(0) }, "resilience: WithAdaptiveInitial: initial limit must be at least 1, got 0"},
		{"tolerance NaN", func() { resilience.WithAdaptiveTolerance(nan()) }, "resilience: WithAdaptiveTolerance: tolerance must be at least 1 and finite, got NaN"},
		{"tolerance below 1", func() { resilience.WithAdaptiveTolerance(0.5) }, "resilience: WithAdaptiveTolerance: tolerance must be at least 1 and finite, got 0.5"},
		{"window 0", func() { resilience.WithAdaptiveWindow(0) }, "resilience: WithAdaptiveWindow: window must be positive, got 0s"},
		{"probe interval negative", func() { resilience.WithAdaptiveProbeInterval(-time.Second) }, "resilience: WithAdaptiveProbeInterval: interval must be positive, got -1s"},
		{"probe interval 0", func() { resilience.WithAdaptiveProbeInterval(0) }, "resilience: WithAdaptiveProbeInterval: interval must be positive, got 0s"},
		{"wait negative", func() { resilience.WithAdaptiveWait(-1) }, "resilience: WithAdaptiveWait: wait must not be negative, got -1ns"},
		{"queue negative", func() { resilience.WithAdaptiveQueue(-1) }, "resilience: WithAdaptiveQueue: queue length must not be negative, got -1"},
		{"classifier nil", func() { resilience.WithAdaptiveClassifier(nil) }, "resilience: WithAdaptiveClassifier: classifier is nil"},
		{"nil option", func() { resilience.NewAdaptiveLimiter(nil) }, "resilience: NewAdaptiveLimiter: option is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestAdaptiveLimiterOptionBounds: each option takes the value at the end
// of its range, and the limit starts where the options put it.
func TestAdaptiveLimiterOptionBounds(t *testing.T) {
	tests := []struct {
		name      string
		opts      []resilience.AdaptiveLimiterOption
		wantLimit int
	}{
		{"limits 1 to MaxInt32, starting at the ceiling", []resilience.AdaptiveLimiterOption{
			resilience.WithAdaptiveLimits(1, math.MaxInt32), resilience.WithAdaptiveInitial(math.MaxInt32)}, math.MaxInt32},
		{"floor at the ceiling: the default initial is the ceiling", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveLimits(5, 5)}, 5},
		{"floor above 20: the default initial is the floor", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveLimits(30, 100)}, 30},
		{"initial at the floor", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveLimits(3, 10), resilience.WithAdaptiveInitial(3)}, 3},
		{"initial at the ceiling", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveLimits(3, 10), resilience.WithAdaptiveInitial(10)}, 10},
		{"initial 1", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveInitial(1)}, 1},
		{"tolerance 1", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveTolerance(1)}, 20},
		{"window 1ns", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveWindow(1)}, 20},
		{"probe interval 1ns", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveProbeInterval(1)}, 20},
		{"no wait", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveWait(0)}, 20},
		{"no queue", []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveQueue(0)}, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l *resilience.AdaptiveLimiter
			require.NotPanics(t, func() { l = resilience.NewAdaptiveLimiter(tc.opts...) })
			assert.Equal(t, tc.wantLimit, l.Limit())
		})
	}
}

// TestAdaptiveLimiterPanicFreesSlot: a panic or a Goexit in fn frees the
// slot and goes on up; the call is a drop, as a timeout is.
func TestAdaptiveLimiterPanicFreesSlot(t *testing.T) {
	tests := []struct {
		name string
		fn   resilience.Func[int]
	}{
		{"panic", func(context.Context) (int, error) { panic("boom") }},
		{"Goexit", func(context.Context) (int, error) { runtimeGoexit(); return 0, nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(1))
			out := callIn(resilience.Guarded[int](l), tc.fn)
			assert.False(t, out.returned)
			assert.Zero(t, l.InFlight())
			_, err := resilience.Do(context.Background(), resilience.Guarded[int](l), okFunc)
			assert.NoError(t, err, "the slot is free again")
		})
	}
}

// TestAdaptiveLimiterSamples: calls that end measure the baseline and
// then, as fast as it, raise the limit of a busy limiter; calls whose
// caller cancelled them are no samples and move nothing.
func TestAdaptiveLimiterSamples(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		cancelled  bool
		rises      bool
		unobserved bool // Enter's shared done, which knows no context
	}{
		{"successes", nil, false, true, false},
		{"failures", errors.New("no such user"), false, true, false},
		{"cancelled by the caller", context.Canceled, true, false, false},
		{"canceled error, caller still there", context.Canceled, false, true, false},
		{"successes, unobserved", nil, false, true, true},
		{"canceled error, unobserved: taken for the caller's", context.Canceled, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			rec := &recorder{}
			opts := []resilience.AdaptiveLimiterOption{resilience.WithClock(clk)}
			if !tc.unobserved {
				opts = append(opts, resilience.WithObserver(rec))
			}
			l := resilience.NewAdaptiveLimiter(opts...)
			limiterRounds(t, l, clk, tc.err, tc.cancelled, false)
			if !tc.rises {
				assert.Empty(t, rec.take())
				assert.Equal(t, 20, l.Limit())
				return
			}
			assert.Greater(t, l.Limit(), 20)
			if tc.unobserved {
				return
			}
			e := rec.take()
			require.NotEmpty(t, e)
			assert.Equal(t, resilience.EventLimitChanged, e[0].Kind)
			assert.Equal(t, "latency", e[0].Reason.Error())
			assert.Equal(t, 20, e[0].OldLimit, "the limit before")
			assert.Equal(t, l.Limit(), e[len(e)-1].NewLimit, "the limit after")
		})
	}
}

// TestAdaptiveLimiterWindowLength: the limit moves at most once a window,
// which lasts the shortest window (100ms by default) or twice the recent
// mean latency, whichever is longer, however many samples come sooner.
func TestAdaptiveLimiterWindowLength(t *testing.T) {
	tests := []struct {
		name    string
		latency time.Duration
		rounds  int // rounds of calls after the first probe until the limit moves
	}{
		{"the shortest window", 10 * time.Millisecond, 10},
		{"twice the latency", 100 * time.Millisecond, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithObserver(&recorder{}),
				resilience.WithAdaptiveInitial(100))
			// round runs 50 calls at once, each taking tc.latency: busy,
			// and about 25 samples between probes, more than a window needs.
			round := func() {
				var dones []func(error)
				for range 50 {
					done, err := l.Enter(context.Background())
					require.NoError(t, err)
					dones = append(dones, done)
				}
				clk.Add(tc.latency)
				for _, done := range dones {
					done(nil)
				}
			}
			for range 2 { // the first probe: 100 calls, until every one is back
				round()
			}
			require.Equal(t, 100, l.Limit(), "after the first probe")
			for i := 1; i < tc.rounds; i++ {
				round()
				require.Equal(t, 100, l.Limit(), "%v after the probe", time.Duration(i)*tc.latency)
			}
			round()
			assert.Greater(t, l.Limit(), 100, "%v after the probe", time.Duration(tc.rounds)*tc.latency)
		})
	}
}

// TestAdaptiveLimiterProbe: a probe halves the limit the last probe
// measured at (20; it has risen to 30 since); its samples are the first
// 100 calls admitted from the instant it began, or those of five windows
// (500ms) if fewer, not one admitted before it under the full limit, even
// a nanosecond before; it ends once they are all back, and the limit is
// restored, the baseline the mean of its samples.
func TestAdaptiveLimiterProbe(t *testing.T) {
	clk := newManualClock()
	rec := &recorder{outcomes: true} // every call timed
	l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithObserver(rec),
		resilience.WithAdaptiveProbeInterval(time.Nanosecond))
	crit := resilience.WithPriority(context.Background(), resilience.PriorityCritical) // the whole limit
	enter := func(n int) []func(error) {
		var dones []func(error)
		for range n {
			done, err := l.Enter(crit)
			require.NoError(t, err)
			dones = append(dones, done)
		}
		return dones
	}
	finish := func(dones []func(error)) {
		for _, done := range dones {
			done(nil)
		}
	}
	for range 19 { // the first probe, under the initial limit (100 calls), and most of a window of 100ms
		dones := enter(10)
		clk.Add(10 * time.Millisecond)
		finish(dones)
	}
	require.Equal(t, 20, l.Limit())
	dones := enter(10)
	_, err := l.Enter(resilience.WithPriority(context.Background(), resilience.PrioritySheddable))
	require.ErrorIs(t, err, resilience.ErrLimitExceeded, "a sheddable call, past its half of the limit: the limit binds, a probe is due")
	clk.Add(10*time.Millisecond - time.Nanosecond)
	before := enter(1) // a nanosecond before the probe
	clk.Add(time.Nanosecond)
	finish(dones) // the window closes, and a probe is due
	var last resilience.Event
	for _, e := range rec.take() {
		if e.Kind == resilience.EventLimitChanged {
			last = e
		}
	}
	require.Equal(t, "probe", fmt.Sprint(last.Reason), "the last limit change")
	half := last.NewLimit
	require.Equal(t, half, l.Limit())
	probe := enter(half - 1) // admitted the instant the probe began, beside the one before it
	clk.Add(10 * time.Millisecond)
	finish(probe)
	clk.Add(70 * time.Millisecond)
	finish(before) // 80ms: no sample of the probe
	for range 41 { // to 500ms after the probe began, less a nanosecond
		finish(enter(1))
		clk.Add(10 * time.Millisecond)
	}
	clk.Add(10*time.Millisecond - time.Nanosecond)
	finish(enter(1)) // the last sample, of no time
	assert.Equal(t, half, l.Limit(), "with the probe's samples taken")
	clk.Add(time.Nanosecond) // 500ms
	finish(enter(1))         // no sample, and the probe ends: every sample is back
	assert.Equal(t, 30, l.Limit(), "after the probe, the limit before it: 20 × 1.25 + √25")
	held := enter(l.Limit())
	_, err = l.Enter(crit)
	finish(held)
	d, _ := resilience.RetryAfter(err)
	assert.Equal(t, 10*time.Millisecond*time.Duration(half-1)/time.Duration(half-1+42), d,
		"the recent latency, the probe's mean: %d calls of 10ms and 42 of none", half-1)
}

// TestAdaptiveLimiterSampling: between probes the limiter times about 64
// calls a window, reckoned from the calls of the time before, for a
// window's length: after a first probe of 100 calls in 50ms, 200 a
// window, one call in two. The next window, 20 samples at least, then
// takes 40 calls where it would have taken 30 with every call timed.
func TestAdaptiveLimiterSampling(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk))
	crit := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
	// calls runs n calls at once, each taking d.
	calls := func(n int, d time.Duration) {
		var dones []func(error)
		for range n {
			done, err := l.Enter(crit)
			require.NoError(t, err)
			dones = append(dones, done)
		}
		clk.Add(d)
		for _, done := range dones {
			done(nil)
		}
	}
	for range 5 { // the first probe: 100 calls, until every one is back
		calls(20, 10*time.Millisecond)
	}
	require.Equal(t, 20, l.Limit())
	// slow runs 10 calls four times as slow, and refuses a sheddable one
	// (half the limit is in use): the limit binds, so the latency lowers
	// it once a window ends.
	sheddable := resilience.WithPriority(context.Background(), resilience.PrioritySheddable)
	slow := func() {
		var dones []func(error)
		for range 10 {
			done, err := l.Enter(crit)
			require.NoError(t, err)
			dones = append(dones, done)
		}
		_, err := l.Enter(sheddable)
		require.ErrorIs(t, err, resilience.ErrLimitExceeded)
		clk.Add(40 * time.Millisecond)
		for _, done := range dones {
			done(nil)
		}
	}
	for i := range 3 {
		slow()
		require.Equal(t, 20, l.Limit(), "after %d calls", 10*(i+1))
	}
	slow()
	assert.Less(t, l.Limit(), 20, "after 40 calls")
}

// TestAdaptiveLimiterRetryAfter: a refusal's hint is the recent mean
// latency of the calls, a millisecond at least.
func TestAdaptiveLimiterRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		latency time.Duration // of the calls of the first probe; 0: no call yet
		want    time.Duration
	}{
		{"no call yet", 0, time.Millisecond},
		{"calls of 10ms", 10 * time.Millisecond, 10 * time.Millisecond},
		{"calls of 37.5ms", 37500 * time.Microsecond, 37500 * time.Microsecond},
		{"calls of 1µs", time.Microsecond, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithAdaptiveLimits(10, 10))
			crit := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
			hold := func() []func(error) {
				var dones []func(error)
				for range 10 {
					done, err := l.Enter(crit)
					require.NoError(t, err)
					dones = append(dones, done)
				}
				return dones
			}
			rounds := 10 // of 10 calls: the first probe, 100 calls
			if tc.latency == 0 {
				rounds = 0
			}
			for range rounds {
				dones := hold()
				clk.Add(tc.latency)
				for _, done := range dones {
					done(nil)
				}
			}
			held := hold()
			_, err := l.Enter(context.Background())
			for _, done := range held {
				done(nil)
			}
			require.ErrorIs(t, err, resilience.ErrLimitExceeded)
			d, ok := resilience.RetryAfter(err)
			require.True(t, ok)
			assert.Equal(t, tc.want, d)
		})
	}
}

// TestAdaptiveLimiterCallEnded: an observer that asks for outcomes is told
// of every call's end, its error and how long it took, through Enter and
// through Guarded.
func TestAdaptiveLimiterCallEnded(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		call func(l *resilience.AdaptiveLimiter, clk *manualClock, d time.Duration, err error)
	}{
		{"Enter", func(l *resilience.AdaptiveLimiter, clk *manualClock, d time.Duration, err error) {
			done, enterErr := l.Enter(context.Background())
			require.NoError(t, enterErr)
			clk.Add(d)
			done(err)
		}},
		{"Guarded", func(l *resilience.AdaptiveLimiter, clk *manualClock, d time.Duration, err error) {
			_, _ = resilience.Do(context.Background(), resilience.Guarded[int](l), func(context.Context) (int, error) {
				clk.Add(d)
				return 0, err
			})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			rec := &recorder{outcomes: true}
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithObserver(rec))
			clk.Add(time.Second)
			tc.call(l, clk, 3*time.Millisecond, nil)
			tc.call(l, clk, 7*time.Millisecond, boom)
			assert.Equal(t, []resilience.Event{
				{Kind: resilience.EventCallEnded, Component: "adaptive-limiter", Duration: 3 * time.Millisecond},
				{Kind: resilience.EventCallEnded, Component: "adaptive-limiter", Duration: 7 * time.Millisecond, Err: boom},
			}, rec.take())
		})
	}
}

// TestAdaptiveLimiterWait: a call may wait for a slot, is served when one
// frees, and is refused when its wait runs out or leaves with its
// context's error; a call below the priority that may wait, or whose
// deadline leaves no more than three times the recent mean latency (1ms
// at least) is refused at once, without waiting, and a wait ends early
// enough for the call to meet its deadline.
func TestAdaptiveLimiterWait(t *testing.T) {
	tests := []struct {
		name     string
		priority resilience.Priority
		waitFrom resilience.Priority // 0: the option not given
		deadline time.Duration       // of the caller's context; 0: none, negative: passed
		release  bool                // the slot is freed during the wait
		cancel   bool                // the caller's context ends during the wait
		queued   bool                // the call waits
		wantErr  error
		wantWait time.Duration // how long Enter took
	}{
		{name: "slot freed", release: true, queued: true},
		{name: "wait runs out", queued: true, wantErr: resilience.ErrLimitExceeded, wantWait: time.Second},
		{name: "context ends", cancel: true, queued: true, wantErr: context.Canceled},
		{name: "below the priority that waits", waitFrom: resilience.PriorityHigh, wantErr: resilience.ErrLimitExceeded},
		{name: "at the priority that waits", priority: resilience.PriorityHigh, waitFrom: resilience.PriorityHigh, release: true, queued: true},
		{name: "deadline cuts the wait", deadline: 100 * time.Millisecond, queued: true, wantErr: resilience.ErrLimitExceeded, wantWait: 97 * time.Millisecond},
		{name: "deadline leaves no time", deadline: time.Millisecond, wantErr: resilience.ErrLimitExceeded},
		{name: "deadline leaves just the margin", deadline: 3 * time.Millisecond, wantErr: resilience.ErrLimitExceeded},
		{name: "deadline passed", deadline: -1, wantErr: context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				opts := []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveInitial(1), resilience.WithAdaptiveWait(time.Second),
					resilience.WithObserver(rec)}
				if tc.waitFrom != 0 {
					opts = append(opts, resilience.WithAdaptiveWaitPriority(tc.waitFrom))
				}
				l := resilience.NewAdaptiveLimiter(opts...)
				held, err := l.Enter(context.Background())
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(resilience.WithPriority(context.Background(), tc.priority))
				defer cancel()
				if tc.deadline != 0 {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeout(ctx, tc.deadline)
					defer stop()
				}
				got := make(chan error, 1)
				start := time.Now()
				var took time.Duration
				go func() {
					done, err := l.Enter(ctx)
					took = time.Since(start)
					if err == nil {
						done(nil)
					}
					got <- err
				}()
				synctest.Wait()
				if tc.queued {
					assert.Equal(t, 1, l.Waiting())
				}
				switch {
				case tc.release:
					held(nil)
				case tc.cancel:
					cancel()
				}
				err = <-got
				if tc.wantErr == nil {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, tc.wantErr)
				}
				assert.Equal(t, tc.wantWait, took, "time in Enter")
				waits := 0
				if tc.queued {
					waits = 1
				}
				refusals := 0
				if errors.Is(tc.wantErr, resilience.ErrLimitExceeded) {
					refusals = 1
				}
				kinds := rec.kinds()
				assert.Equal(t, waits, kinds[resilience.EventWaitStarted], "waits started")
				assert.Equal(t, waits, kinds[resilience.EventWaitEnded], "waits ended")
				assert.Equal(t, refusals, kinds[resilience.EventRefused], "refusals")
				if !tc.release {
					held(nil)
				}
				assert.Zero(t, l.Waiting())
			})
		})
	}
}

// TestAdaptiveLimiterQueue: waiting calls are given slots the highest
// priority first, each within its share of the limit; a call whose share
// has room is admitted at once, ahead of the waiters of lower priorities;
// WithAdaptiveQueue bounds the waiters, and a call that finds the queue
// full is refused at once.
func TestAdaptiveLimiterQueue(t *testing.T) {
	const (
		sheddable = resilience.PrioritySheddable
		normal    = resilience.PriorityNormal
		critical  = resilience.PriorityCritical
	)
	type step struct {
		enter   resilience.Priority // a call of this priority enters, unless release
		release int                 // the number of the call whose slot is freed, from 1
		// What has become of the calls entered so far, in order: 'a'
		// admitted, 'r' refused, 'w' waiting.
		want string
	}
	tests := []struct {
		name  string
		queue int // -1: any number
		held  int // normal calls holding slots first, of a limit of 10
		steps []step
	}{
		{"a call whose share has room passes the waiters below", -1, 5, []step{
			{enter: sheddable, want: "w"},
			{enter: normal, want: "wa"},
			{release: 2, want: "wa"}, // 5 in flight, the sheddable share
			{release: -1, want: "aa"},
		}},
		{"the highest priority first", -1, 10, []step{
			{enter: sheddable, want: "w"},
			{enter: normal, want: "ww"},
			{enter: critical, want: "www"},
			{release: -1, want: "wwa"}, // 9 in flight, then 10: only a critical call fits
			{release: -1, want: "wwa"}, // 9
			{release: -1, want: "wwa"}, // 8, the normal share
			{release: -1, want: "waa"}, // 7, then 8
			{release: -1, want: "waa"},
			{release: -1, want: "waa"},
			{release: -1, want: "waa"}, // 5, the sheddable share
			{release: -1, want: "aaa"}, // 4, then 5
		}},
		{"a queue of one", 1, 10, []step{
			{enter: normal, want: "w"},
			{enter: critical, want: "wr"},
		}},
		{"no queue", 0, 10, []step{
			{enter: critical, want: "r"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveInitial(10), resilience.WithAdaptiveWait(time.Hour)}
				if tc.queue >= 0 {
					opts = append(opts, resilience.WithAdaptiveQueue(tc.queue))
				}
				l := resilience.NewAdaptiveLimiter(opts...)
				var held []func(error)
				for range tc.held {
					done, err := l.Enter(resilience.WithPriority(context.Background(), critical))
					require.NoError(t, err)
					held = append(held, done)
				}
				type result struct {
					done func(error)
					err  error
				}
				var calls []chan result
				state := func() string {
					b := make([]byte, len(calls))
					for i, c := range calls {
						select {
						case r := <-c:
							c <- r
							b[i] = 'a'
							if r.err != nil {
								require.ErrorIs(t, r.err, resilience.ErrLimitExceeded)
								b[i] = 'r'
							}
						default:
							b[i] = 'w'
						}
					}
					return string(b)
				}
				for i, st := range tc.steps {
					switch {
					case st.release > 0: // one of the calls
						r := <-calls[st.release-1]
						r.done(nil)
						calls[st.release-1] <- result{done: func(error) {}}
					case st.release < 0: // one of the held
						held[0](nil)
						held = held[1:]
					default:
						c := make(chan result, 1)
						calls = append(calls, c)
						ctx := resilience.WithPriority(context.Background(), st.enter)
						go func() {
							done, err := l.Enter(ctx)
							c <- result{done, err}
						}()
					}
					synctest.Wait()
					require.Equal(t, st.want, state(), "after step %d", i+1)
				}
				for _, done := range held {
					done(nil)
				}
				synctest.Wait()
				for _, c := range calls {
					if r := <-c; r.err == nil {
						r.done(nil)
					}
				}
				assert.Zero(t, l.InFlight())
				assert.Zero(t, l.Waiting())
			})
		})
	}
}

// TestAdaptiveLimiterWaitObserverPanics: an observer that panics when a
// wait starts or ends makes Enter panic, and the call gives back what it
// held first: its place in the queue, or the slot it was handed.
func TestAdaptiveLimiterWaitObserverPanics(t *testing.T) {
	for _, kind := range []resilience.EventKind{resilience.EventWaitStarted, resilience.EventWaitEnded} {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
					if e.Kind == kind {
						panic("observer")
					}
				})
				l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(1), resilience.WithAdaptiveWait(time.Second),
					resilience.WithObserver(obs))
				held, err := l.Enter(context.Background())
				require.NoError(t, err)
				panicked := make(chan any, 1)
				go func() {
					defer func() { panicked <- recover() }()
					_, _ = l.Enter(context.Background())
				}()
				synctest.Wait()
				if kind == resilience.EventWaitEnded {
					assert.Equal(t, 1, l.Waiting())
					held(nil) // the slot goes to the waiter, whose observer panics
				}
				assert.Equal(t, "observer", <-panicked)
				assert.Zero(t, l.Waiting())
				if kind == resilience.EventWaitStarted {
					assert.Equal(t, 1, l.InFlight(), "the held call alone")
					held(nil)
				}
				assert.Zero(t, l.InFlight())
			})
		})
	}
}

// TestAdaptiveLimiterConcurrentWaiters: callers of every priority, many
// more than the limit, some waiting for a slot: never more in flight than
// the limit, and nothing left held or queued at the end.
func TestAdaptiveLimiterConcurrentWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 4
		l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(limit, limit), resilience.WithAdaptiveInitial(limit),
			resilience.WithAdaptiveWait(5*time.Millisecond))
		var inFlight, most atomic.Int64
		var wg sync.WaitGroup
		for g := range 40 {
			wg.Go(func() {
				ctx := resilience.WithPriority(context.Background(), resilience.Priority(g%5-2))
				for range 50 {
					done, err := l.Enter(ctx)
					if err != nil {
						require.ErrorIs(t, err, resilience.ErrLimitExceeded)
						time.Sleep(time.Millisecond)
						continue
					}
					n := inFlight.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Millisecond)
					inFlight.Add(-1)
					done(nil)
				}
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, most.Load(), int64(limit), "most in flight")
		assert.Zero(t, l.InFlight())
		assert.Zero(t, l.Waiting())
	})
}

// TestAdaptiveLimiterPriorities: at twice the capacity, 40% of the calls
// critical (80% of the capacity), the critical calls, which alone fit, are
// almost never refused: the load shed is taken from the sheddable calls.
func TestAdaptiveLimiterPriorities(t *testing.T) {
	const critical = 0.4
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk))
			srv := newSimServer(clk, seed, 20, 10*time.Millisecond)
			srv.run(l, 2*srv.capacity(), critical, 10*time.Second)
			got := srv.run(l, 2*srv.capacity(), critical, 60*time.Second)
			refused := float64(got.critRefus) / float64(got.criticalOffered)
			assert.Less(t, refused, 0.01, "critical calls refused")
			assert.GreaterOrEqual(t, got.goodput(60*time.Second), 0.9*srv.capacity())
		})
	}
}

func TestPriorityFrom(t *testing.T) {
	tests := []struct {
		ctx  context.Context
		want resilience.Priority
		name string
	}{
		{context.Background(), resilience.PriorityNormal, "normal"},
		{resilience.WithPriority(context.Background(), resilience.PriorityCritical), resilience.PriorityCritical, "critical"},
		{resilience.WithPriority(context.Background(), resilience.PrioritySheddable), resilience.PrioritySheddable, "sheddable"},
		{resilience.WithPriority(context.Background(), 9), 9, "Priority(9)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resilience.PriorityFrom(tc.ctx)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.name, got.String())
		})
	}
}

// simServer is a server of known capacity, for the adaptive guards' tests:
// workers serve calls first come first served, each taking a service time
// drawn around service, and calls that find every worker busy queue, so
// latency grows with the queue. It runs in steps of a millisecond of a
// manualClock, in one goroutine: the same seed gives the same run.
type simServer struct {
	clk     *manualClock
	rnd     *rand.Rand
	workers int
	service time.Duration
	running []simCall // at most workers
	queue   []simCall
}

type simCall struct {
	arrived, ends time.Time
	done          func(error)
	critical      bool
}

// simStats are what a stretch of a run saw.
type simStats struct {
	offered, refused, served   int
	criticalOffered, critRefus int
	latencies                  []time.Duration // of the calls served
	limits                     []int           // the limit at every step
}

func newSimServer(clk *manualClock, seed uint64, workers int, service time.Duration) *simServer {
	return &simServer{clk: clk, rnd: rand.New(rand.NewPCG(seed, 1)), workers: workers, service: service}
}

// capacity returns the calls per second the server serves.
func (s *simServer) capacity() float64 { return float64(s.workers) / s.service.Seconds() }

// serviceTime draws a service time, uniform in [service/2, 3·service/2).
func (s *simServer) serviceTime() time.Duration {
	return s.service/2 + time.Duration(s.rnd.Int64N(int64(s.service)))
}

// run offers rate calls per second through l for d, a share critical of
// them critical (the rest sheddable), and returns what it saw.
func (s *simServer) run(l *resilience.AdaptiveLimiter, rate float64, critical float64, d time.Duration) simStats {
	var st simStats
	perStep := rate / 1000
	acc := 0.0
	for range int(d / time.Millisecond) {
		s.clk.Add(time.Millisecond)
		now := s.clk.Now()
		// Calls that end now leave; queued calls take their workers.
		kept := s.running[:0]
		for _, c := range s.running {
			if c.ends.After(now) {
				kept = append(kept, c)
				continue
			}
			st.served++
			st.latencies = append(st.latencies, c.ends.Sub(c.arrived))
			c.done(nil)
		}
		s.running = kept
		s.startQueued(now)
		for acc += perStep; acc >= 1; acc-- {
			st.offered++
			ctx := context.Background()
			crit := s.rnd.Float64() < critical
			if critical > 0 {
				p := resilience.PrioritySheddable
				if crit {
					p = resilience.PriorityCritical
					st.criticalOffered++
				}
				ctx = resilience.WithPriority(ctx, p)
			}
			done, err := l.Enter(ctx)
			if err != nil {
				st.refused++
				if crit {
					st.critRefus++
				}
				continue
			}
			s.queue = append(s.queue, simCall{arrived: now, done: done, critical: crit})
			s.startQueued(now)
		}
		st.limits = append(st.limits, l.Limit())
	}
	return st
}

func (s *simServer) startQueued(now time.Time) {
	for len(s.running) < s.workers && len(s.queue) > 0 {
		c := s.queue[0]
		s.queue = s.queue[1:]
		c.ends = now.Add(s.serviceTime())
		s.running = append(s.running, c)
	}
}

// goodput returns the calls served per second over d.
func (st simStats) goodput(d time.Duration) float64 { return float64(st.served) / d.Seconds() }

// quantile returns the q-quantile of the latencies of the calls served.
func (st simStats) quantile(q float64) time.Duration {
	if len(st.latencies) == 0 {
		return 0
	}
	l := slices.Clone(st.latencies)
	slices.Sort(l)
	return l[int(q*float64(len(l)-1))]
}

// medianLimit returns the median of the limits seen.
func (st simStats) medianLimit() int {
	l := slices.Clone(st.limits)
	slices.Sort(l)
	return l[len(l)/2]
}

// TestAdaptiveGuardsAllocateNothing pins the cost of a call that succeeds
// through the adaptive guards, by Guarded and by Enter and done: no
// allocation, whether the call is timed or not.
func TestAdaptiveGuardsAllocateNothing(t *testing.T) {
	ctx := context.Background()
	enterDone := func(g resilience.Guard) func() {
		return func() {
			done, err := g.Enter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done(nil)
		}
	}
	limiter, throttler := resilience.NewAdaptiveLimiter(), resilience.NewAdaptiveThrottler()
	guardedLimiter, guardedThrottler := resilience.Guarded[int](limiter), resilience.Guarded[int](throttler)
	tests := []struct {
		name string
		call func()
	}{
		{"AdaptiveLimiter/Guarded", func() { _, _ = guardedLimiter.Execute(ctx, okFunc) }},
		{"AdaptiveLimiter/Enter", enterDone(limiter)},
		{"AdaptiveThrottler/Guarded", func() { _, _ = guardedThrottler.Execute(ctx, okFunc) }},
		{"AdaptiveThrottler/Enter", enterDone(throttler)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, tc.call); n != 0 {
				t.Errorf("a call allocates %v times, want 0", n)
			}
		})
	}
}

func BenchmarkAdaptiveLimiter(b *testing.B) {
	ctx := context.Background()
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveLimiter())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded/parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 1000), resilience.WithAdaptiveInitial(1000)))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("Enter", func(b *testing.B) {
		l := resilience.NewAdaptiveLimiter()
		b.ReportAllocs()
		for b.Loop() {
			done, err := l.Enter(ctx)
			if err == nil {
				done(nil)
			}
		}
	})
	b.Run("Enter/parallel", func(b *testing.B) {
		l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 1000), resilience.WithAdaptiveInitial(1000))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				done, err := l.Enter(ctx)
				if err == nil {
					done(nil)
				}
			}
		})
	})
}

func BenchmarkAdaptiveThrottler(b *testing.B) {
	ctx := context.Background()
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveThrottler())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded/parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewAdaptiveThrottler())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
}

// TestAdaptiveLimiterClockBack: a call timed across an injected clock that
// went back is no sample, so it neither sets a baseline of nothing nor
// cuts the limit; the limiter's time line never goes below its start,
// and a window closes when the clock passes its end again.
func TestAdaptiveLimiterClockBack(t *testing.T) {
	tests := []struct {
		name string
		back time.Duration
	}{
		{"a second back", time.Second},
		{"back past the limiter's making", time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			rec := &recorder{}
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithObserver(rec))
			crit := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
			round := func(n int, d time.Duration) {
				var dones []func(error)
				for range n {
					done, err := l.Enter(crit)
					require.NoError(t, err)
					dones = append(dones, done)
				}
				clk.Add(d)
				for _, done := range dones {
					done(nil)
				}
			}
			for range 100 { // the first probe, then windows as fast: 1s
				round(10, 10*time.Millisecond)
			}
			before := l.Limit()
			for range 15 { // a window of calls that end before they began
				round(10, -tc.back)
				clk.Add(tc.back + 10*time.Millisecond)
			}
			for range 50 { // then as fast as before
				round(10, 10*time.Millisecond)
			}
			for _, e := range rec.take() {
				if e.Kind == resilience.EventLimitChanged && e.NewLimit < e.OldLimit {
					t.Errorf("the limit fell from %d to %d (%v) with the clock going back", e.OldLimit, e.NewLimit, e.Reason)
				}
			}
			assert.GreaterOrEqual(t, l.Limit(), before)
		})
	}
}

// TestAdaptiveLimiterWaitPriorityClamped: a wait priority above critical
// means critical, one below sheddable every priority.
func TestAdaptiveLimiterWaitPriorityClamped(t *testing.T) {
	tests := []struct {
		name     string
		from     resilience.Priority
		p        resilience.Priority
		wantWait bool
	}{
		{"above critical: critical waits", resilience.PriorityCritical + 7, resilience.PriorityCritical, true},
		{"above critical: high does not", resilience.PriorityCritical + 7, resilience.PriorityHigh, false},
		{"below sheddable: sheddable waits", resilience.PrioritySheddable - 7, resilience.PrioritySheddable, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(2, 2),
					resilience.WithAdaptiveWait(time.Second), resilience.WithAdaptiveWaitPriority(tc.from))
				crit := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
				var held []func(error)
				for range 2 {
					done, err := l.Enter(crit)
					require.NoError(t, err)
					held = append(held, done)
				}
				errc := make(chan error, 1)
				go func() {
					done, err := l.Enter(resilience.WithPriority(context.Background(), tc.p))
					if err == nil {
						done(nil)
					}
					errc <- err
				}()
				synctest.Wait()
				assert.Equal(t, tc.wantWait, l.Waiting() == 1, "Queued() = %d", l.Waiting())
				for _, done := range held {
					done(nil)
				}
				err := <-errc
				assert.Equal(t, tc.wantWait, err == nil, "Enter = %v", err)
			})
		})
	}
}

// limiterRounds makes 100 rounds of 10 calls at once through l, each
// taking 10ms on clk and ending with err: the first probe (520ms), then
// windows. With cancelled, the caller cancels each call before it ends;
// with refusable, a call the limiter refuses (a limit cut below 10) is
// left out, else a refusal fails the test.
func limiterRounds(t *testing.T, l *resilience.AdaptiveLimiter, clk *resilience.ManualClock, err error, cancelled, refusable bool) {
	t.Helper()
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		var dones []func(error)
		for range 10 {
			done, enterErr := l.Enter(ctx)
			if refusable && errors.Is(enterErr, resilience.ErrLimitExceeded) {
				continue
			}
			require.NoError(t, enterErr)
			dones = append(dones, done)
		}
		clk.Add(10 * time.Millisecond)
		if cancelled {
			cancel()
		}
		for _, done := range dones {
			done(err)
		}
		cancel()
	}
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// neverRand draws the largest number: the throttle never refuses with it.
type neverRand struct{}

func (neverRand) Uint64() uint64 { return 1<<64 - 1 }

// TestAdaptiveThrottlerRatio: the probability of a refusal is the SRE
// book's max(0, (requests − K·accepts)/(requests + 1)).
func TestAdaptiveThrottlerRatio(t *testing.T) {
	refused := errors.New("503")
	tests := []struct {
		name            string
		k               float64
		maxRatio        float64 // 0: the default
		calls, accepted int
		want            float64
	}{
		{"all accepted", 2, 0, 100, 100, 0},
		{"half accepted, K 2", 2, 0, 100, 50, 0},
		{"30% accepted, K 2", 2, 0, 100, 30, 40.0 / 101},
		{"none accepted", 2, 0, 100, 0, 100.0 / 101},
		{"half accepted, K 1.1", 1.1, 0, 100, 50, 45.0 / 101},
		{"none accepted, at most 0.8", 2, 0.8, 100, 0, 0.8},
		{"30% accepted, at most 0.8", 2, 0.8, 100, 30, 40.0 / 101},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []resilience.AdaptiveThrottlerOption{resilience.WithThrottleK(tc.k), resilience.WithRand(neverRand{}),
				resilience.WithClock(newManualClock()), resilience.WithThrottleClassifier(failEvery)}
			if tc.maxRatio > 0 {
				opts = append(opts, resilience.WithThrottleMaxRatio(tc.maxRatio))
			}
			th := resilience.NewAdaptiveThrottler(opts...)
			for i := range tc.calls {
				done, err := th.Enter(context.Background())
				require.NoError(t, err)
				if i < tc.accepted {
					done(nil)
				} else {
					done(refused)
				}
			}
			assert.InDelta(t, tc.want, th.Ratio(), 1e-9)
		})
	}
}

// TestAdaptiveThrottlerBrownout: a client sends 1000 calls/s to a service
// that can take only 100 a second for a while and refuses the rest. With
// K = 2 the throttle sends it about twice what it accepts (not ten
// times), and once the service is well again it throttles less and less,
// and nothing after two windows.
func TestAdaptiveThrottlerBrownout(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			clk := newManualClock()
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), resilience.WithRand(rand.New(rand.NewPCG(seed, 2))))
			// run sends a call every millisecond for d; the service
			// accepts one every every-th millisecond at most.
			run := func(d time.Duration, every int) (sent, accepted, throttled int) {
				for i := range int(d / time.Millisecond) {
					clk.Add(time.Millisecond)
					done, err := th.Enter(context.Background())
					if err != nil {
						require.ErrorIs(t, err, resilience.ErrThrottled)
						throttled++
						continue
					}
					sent++
					if accepted*every > i {
						done(resilience.ErrBulkheadFull)
						continue
					}
					accepted++
					done(nil)
				}
				return sent, accepted, throttled
			}
			_, _, throttled := run(20*time.Second, 1)
			assert.Zero(t, throttled, "healthy")
			run(10*time.Second, 10) // the window fills with refusals
			sent, accepted, _ := run(20*time.Second, 10)
			assert.InDelta(t, 2, float64(sent)/float64(accepted), 0.2, "load on the service over what it accepts")
			// The few calls sent find the service well, and the share
			// sent about doubles as each part of the window goes by.
			_, _, throttled = run(10*time.Second, 1)
			assert.Less(t, throttled, 7000, "the window's first 10s after")
			_, _, throttled = run(10*time.Second, 1)
			assert.Less(t, throttled, 100, "the next 10s")
			_, _, throttled = run(5*time.Second, 1)
			assert.Zero(t, throttled, "recovered")
		})
	}
}

// TestAdaptiveThrottlerOutcomes: what counts as accepted by default; a
// call its caller cancelled counts for nothing.
func TestAdaptiveThrottlerOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		cancelled bool
		want      float64 // the ratio after 20 such calls
	}{
		{"success", nil, false, 0},
		{"an answer that is an error", errors.New("not found"), false, 0},
		{"timeout", resilience.ErrTimeout, false, 20.0 / 21},
		{"bulkhead full", resilience.ErrBulkheadFull, false, 20.0 / 21},
		{"a refusal with a hint", hinted{time.Second}, false, 20.0 / 21},
		{"an error that could carry a hint and carries none", fmt.Errorf("500: %w", hinted{0}), false, 0},
		{"an adaptive limiter's refusal", limiterRefusal(t), false, 20.0 / 21},
		{"a breaker's refusal without a hint", fmt.Errorf("%w", resilience.ErrBreakerOpen), false, 20.0 / 21},
		{"a rate limiter's refusal without a hint", resilience.ErrRateLimited, false, 20.0 / 21},
		{"cancelled by the caller", context.Canceled, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := resilience.NewAdaptiveThrottler(resilience.WithRand(neverRand{}), resilience.WithClock(newManualClock()))
			for range 20 {
				ctx, cancel := context.WithCancel(context.Background())
				done, err := th.Enter(ctx)
				require.NoError(t, err)
				if tc.cancelled {
					cancel()
				}
				done(tc.err)
				cancel()
			}
			assert.InDelta(t, tc.want, th.Ratio(), 1e-9)
		})
	}
}

// TestAdaptiveThrottlerCancelled: a call its caller cancelled counts for
// nothing, through Enter (whose done takes context.Canceled for the
// caller's) and through Guarded (where the call's context tells); through
// Guarded, an error matching context.Canceled while the caller still waits
// is an answer.
func TestAdaptiveThrottlerCancelled(t *testing.T) {
	tests := []struct {
		name string
		call func(th *resilience.AdaptiveThrottler)
		want float64 // the ratio after 20 refusals by the service and 20 such calls
	}{
		{"Enter", func(th *resilience.AdaptiveThrottler) {
			done, err := th.Enter(context.Background())
			require.NoError(t, err)
			done(context.Canceled)
		}, 20.0 / 21},
		{"Guarded, cancelled by the caller", func(th *resilience.AdaptiveThrottler) {
			ctx, cancel := context.WithCancel(context.Background())
			_, _ = resilience.Do(ctx, resilience.Guarded[int](th), func(ctx context.Context) (int, error) {
				cancel()
				return 0, ctx.Err()
			})
		}, 20.0 / 21},
		{"Guarded, the caller still there", func(th *resilience.AdaptiveThrottler) {
			_, _ = resilience.Do(context.Background(), resilience.Guarded[int](th), func(ctx context.Context) (int, error) {
				return 0, context.Canceled
			})
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := resilience.NewAdaptiveThrottler(resilience.WithRand(neverRand{}), resilience.WithClock(newManualClock()))
			for range 20 {
				done, err := th.Enter(context.Background())
				require.NoError(t, err)
				done(resilience.ErrBulkheadFull)
			}
			for range 20 {
				tc.call(th)
			}
			assert.InDelta(t, tc.want, th.Ratio(), 1e-9)
		})
	}
}

// limiterRefusal returns the refusal of an AdaptiveLimiter whose only slot
// is taken.
func limiterRefusal(t *testing.T) error {
	l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 1), resilience.WithClock(newManualClock()))
	done, err := l.Enter(context.Background())
	require.NoError(t, err)
	defer done(nil)
	_, err = l.Enter(context.Background())
	require.ErrorIs(t, err, resilience.ErrLimitExceeded)
	return err
}

// TestAdaptiveThrottlerWindow: counts drop out of the window part by part.
func TestAdaptiveThrottlerWindow(t *testing.T) {
	clk := newManualClock()
	th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), resilience.WithRand(neverRand{}))
	for range 20 {
		done, err := th.Enter(context.Background())
		require.NoError(t, err)
		done(resilience.ErrTimeout)
	}
	tests := []struct {
		after time.Duration
		want  float64
	}{
		{5 * time.Second, 19.0 / 22}, // 21 requests, 1 accepted
		{4 * time.Second, 18.0 / 23},
		{2 * time.Second, 0}, // 11s: the part of the refusals has gone
	}
	for _, tc := range tests {
		clk.Add(tc.after)
		done, err := th.Enter(context.Background()) // slides the window
		require.NoError(t, err)
		done(nil)
		assert.InDelta(t, tc.want, th.Ratio(), 1e-9, "after %v more", tc.after)
	}
}

// TestAdaptiveThrottlerWindowEdges: with the default window of 10s in
// parts of 1s, a count made at a part's first instant belongs to that
// part, and leaves the window the instant the part is 10s old, whether or
// not the throttle was asked anything meanwhile.
func TestAdaptiveThrottlerWindowEdges(t *testing.T) {
	type check struct {
		at   time.Duration // since the start
		want float64
	}
	checks := []check{
		{999 * time.Millisecond, 30.0 / 31},
		{time.Second, 45.0 / 56}, // 25 more calls at 1s, 5 accepted
		{10*time.Second - 1, 45.0 / 56},
		{10 * time.Second, 15.0 / 26}, // the first part has left
		{11*time.Second - 1, 15.0 / 26},
		{11 * time.Second, 0}, // the second has left
		{25 * time.Second, 0},
		{25*time.Second + 999*time.Millisecond, 0},
	}
	tests := []struct {
		name  string
		asked func(check) bool // whether Ratio is asked at this check
	}{
		{"asked at every edge", func(check) bool { return true }},
		{"asked after 10s only", func(c check) bool { return c.at >= 10*time.Second }},
		{"asked after 11s only", func(c check) bool { return c.at >= 11*time.Second }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), resilience.WithRand(neverRand{}))
			start := clk.Now()
			calls := func(n, accepted int) {
				for i := range n {
					done, err := th.Enter(context.Background())
					require.NoError(t, err)
					if i < accepted {
						done(nil)
					} else {
						done(resilience.ErrTimeout)
					}
				}
			}
			calls(30, 0)
			for _, c := range checks {
				clk.Add(start.Add(c.at).Sub(clk.Now()))
				if c.at == time.Second {
					// After a burst the throttle reads the clock for few
					// requests; Ratio reads it.
					assert.InDelta(t, 30.0/31, th.Ratio(), 1e-9, "at 1s, before the calls")
					calls(25, 5)
				}
				if tc.asked(c) {
					assert.InDelta(t, c.want, th.Ratio(), 1e-9, "at %v", c.at)
				}
			}
		})
	}
}

// alwaysRand draws 0: the throttle refuses whenever its ratio is above 0.
type alwaysRand struct{}

func (alwaysRand) Uint64() uint64 { return 0 }

// TestAdaptiveThrottlerRetryAfter: a refusal's hint is the time until the
// window slides, the current part's end, a millisecond at least; it
// carries the call's priority.
func TestAdaptiveThrottlerRetryAfter(t *testing.T) {
	tests := []struct {
		at   time.Duration // when the 20th call is refused, after 19 refusals by the service at 0
		want time.Duration
	}{
		{300 * time.Millisecond, 700 * time.Millisecond},
		{2250 * time.Millisecond, 750 * time.Millisecond},
		{time.Second - time.Microsecond, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.at.String(), func(t *testing.T) {
			clk := newManualClock()
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), resilience.WithRand(alwaysRand{}))
			for range 19 {
				done, err := th.Enter(context.Background())
				require.NoError(t, err)
				done(resilience.ErrBulkheadFull)
			}
			clk.Add(tc.at)
			_, err := th.Enter(resilience.WithPriority(context.Background(), resilience.PriorityLow))
			require.ErrorIs(t, err, resilience.ErrThrottled)
			d, ok := resilience.RetryAfter(err)
			require.True(t, ok)
			assert.Equal(t, tc.want, d)
			var se *resilience.ShedError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, resilience.PriorityLow, se.Priority())
		})
	}
}

// TestAdaptiveThrottlerBusyWindowSlides: a throttle whose requests come
// so fast that it reads the clock for few of them still lets a call
// through once the refusals have left the window, and still refuses one
// while they have not.
func TestAdaptiveThrottlerBusyWindowSlides(t *testing.T) {
	tests := []struct {
		name    string
		after   time.Duration
		refused bool
	}{
		{"within the window", 5 * time.Second, true},
		{"after the window", 11 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), resilience.WithRand(alwaysRand{}))
			for i := range 100_000 { // 100 calls a microsecond, all refused by the service
				if i%100 == 0 {
					clk.Add(time.Microsecond)
				}
				if done, err := th.Enter(context.Background()); err == nil {
					done(resilience.ErrBulkheadFull)
				}
			}
			clk.Add(tc.after)
			done, err := th.Enter(context.Background())
			if tc.refused {
				require.ErrorIs(t, err, resilience.ErrThrottled)
				return
			}
			require.NoError(t, err)
			done(nil)
		})
	}
}

// TestAdaptiveThrottlerOptionBounds: each option takes the value at the end
// of its range; with a window of 10ns, a part lasts a nanosecond.
func TestAdaptiveThrottlerOptionBounds(t *testing.T) {
	tests := []struct {
		name string
		opts []resilience.AdaptiveThrottlerOption
		want float64 // the ratio after 20 calls the service refused
	}{
		{"K 1", []resilience.AdaptiveThrottlerOption{resilience.WithThrottleK(1)}, 20.0 / 21},
		{"max ratio 1", []resilience.AdaptiveThrottlerOption{resilience.WithThrottleMaxRatio(1)}, 20.0 / 21},
		{"window 10ns: the refusals leave it after 10ns", []resilience.AdaptiveThrottlerOption{resilience.WithThrottleWindow(10)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			var th *resilience.AdaptiveThrottler
			require.NotPanics(t, func() {
				th = resilience.NewAdaptiveThrottler(append(tc.opts, resilience.WithClock(clk), resilience.WithRand(neverRand{}))...)
			})
			for range 20 {
				done, err := th.Enter(context.Background())
				require.NoError(t, err)
				done(resilience.ErrTimeout)
			}
			clk.Add(10 * time.Nanosecond)
			assert.InDelta(t, tc.want, th.Ratio(), 1e-9)
		})
	}
}

// halfRand draws one half.
type halfRand struct{}

func (halfRand) Uint64() uint64 { return 1 << 63 }

// TestAdaptiveThrottlerDraw: a call is refused when a draw, uniform in
// [0, 1), falls below the ratio, so with probability the ratio: a draw
// equal to it lets the call through.
func TestAdaptiveThrottlerDraw(t *testing.T) {
	th := resilience.NewAdaptiveThrottler(resilience.WithClock(newManualClock()), resilience.WithRand(halfRand{}),
		resilience.WithThrottleK(1), resilience.WithThrottleClassifier(failEvery))
	for i := range 20 {
		done, err := th.Enter(context.Background())
		require.NoError(t, err)
		if i < 10 {
			done(nil)
		} else {
			done(resilience.ErrTimeout)
		}
	}
	done, err := th.Enter(context.Background()) // (21 − 10)/22: one half
	require.NoError(t, err, "at a ratio of one half")
	done(resilience.ErrTimeout)
	_, err = th.Enter(context.Background()) // (22 − 10)/23
	require.ErrorIs(t, err, resilience.ErrThrottled, "at a ratio above one half")
}

// TestAdaptiveThrottlerClockReads: a throttle whose requests come faster
// than 16 a part (of a tenth of the window) reads the clock for few of
// them; once they come slower than 8 a part, it reads it again for every
// one, from the next time it reads it after a burst.
func TestAdaptiveThrottlerClockReads(t *testing.T) {
	tests := []struct {
		name     string
		burst    int           // calls at once first
		calls    int           // then calls, every apart
		every    time.Duration //
		counted  int           // the last calls whose clock reads are counted
		minReads int
		maxReads int
	}{
		{"100 a millisecond", 0, 100_000, 10 * time.Microsecond, 100_000, 1, 100},
		{"5 a second", 0, 50, 200 * time.Millisecond, 50, 50, 50},
		{"5 a second after a burst", 1000, 50, 200 * time.Millisecond, 20, 20, 20},
		{"16 a part", 0, 64, 62500 * time.Microsecond, 64, 64, 64},
		// The first call, at once, makes it read every other request; two
		// reads are then 125ms apart, 8 a part: it goes on so.
		{"16 a part, after a first call at once", 1, 64, 62500 * time.Microsecond, 64, 32, 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), resilience.WithRand(neverRand{}))
			call := func() {
				done, err := th.Enter(context.Background())
				require.NoError(t, err)
				done(nil)
			}
			for range tc.burst {
				call()
			}
			var before int64
			for i := range tc.calls {
				if i == tc.calls-tc.counted {
					before = clk.Reads()
				}
				clk.Add(tc.every)
				call()
			}
			reads := int(clk.Reads() - before)
			assert.GreaterOrEqual(t, reads, tc.minReads, "clock reads")
			assert.LessOrEqual(t, reads, tc.maxReads, "clock reads")
		})
	}
}

func TestAdaptiveThrottlerBadOptions(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"K NaN", func() { resilience.WithThrottleK(nan()) }, "resilience: WithThrottleK: K must be at least 1 and finite, got NaN"},
		{"K below 1", func() { resilience.WithThrottleK(0.5) }, "resilience: WithThrottleK: K must be at least 1 and finite, got 0.5"},
		{"window too short", func() { resilience.WithThrottleWindow(0) }, "resilience: WithThrottleWindow: window must be at least 10ns, got 0s"},
		{"max ratio 0", func() { resilience.WithThrottleMaxRatio(0) }, "resilience: WithThrottleMaxRatio: ratio must be in (0, 1], got 0"},
		{"max ratio above 1", func() { resilience.WithThrottleMaxRatio(1.5) }, "resilience: WithThrottleMaxRatio: ratio must be in (0, 1], got 1.5"},
		{"max ratio NaN", func() { resilience.WithThrottleMaxRatio(nan()) }, "resilience: WithThrottleMaxRatio: ratio must be in (0, 1], got NaN"},
		{"classifier nil", func() { resilience.WithThrottleClassifier(nil) }, "resilience: WithThrottleClassifier: classifier is nil"},
		{"rand nil", func() { resilience.WithRand(nil) }, "resilience: WithRand: rand is nil"},
		{"rand typed nil", func() { resilience.WithRand((*rand.Rand)(nil)) }, "resilience: WithRand: rand is a nil *rand.Rand"},
		{"nil option", func() { resilience.NewAdaptiveThrottler(nil) }, "resilience: NewAdaptiveThrottler: option is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

package resilience_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// TestHoldLast pins the waits of HoldLast over finite and endless
// backoffs, fixed or not.
func TestHoldLast(t *testing.T) {
	s := time.Second
	stopsAt3 := resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
		return time.Duration(n) * ms, n <= 3
	})
	tests := []struct {
		name string
		b    resilience.Backoff
		n    int
		want []time.Duration
	}{
		{"schedule", resilience.HoldLast(resilience.Schedule(s, 5*s, 30*s)), 6, []time.Duration{s, 5 * s, 30 * s, 30 * s, 30 * s, 30 * s}},
		{"one wait", resilience.HoldLast(resilience.Schedule(s)), 3, []time.Duration{s, s, s}},
		{"empty schedule makes no retry", resilience.HoldLast(resilience.Schedule()), 3, nil},
		{"no retry at all", resilience.HoldLast(resilience.MaxRetries(resilience.Constant(s), 0)), 3, nil},
		{"max retries", resilience.HoldLast(resilience.MaxRetries(resilience.Exponential(ms, 2), 3)), 5, []time.Duration{ms, 2 * ms, 4 * ms, 4 * ms, 4 * ms}},
		{"go-resiliency exponential", resilience.HoldLast(resilience.ExponentialSchedule(4, 10*ms)), 6,
			[]time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 80 * ms, 80 * ms}},
		{"endless backoff unchanged", resilience.HoldLast(resilience.Exponential(ms, 2)), 4, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms}},
		{"a func", resilience.HoldLast(stopsAt3), 5, []time.Duration{ms, 2 * ms, 3 * ms, 3 * ms, 3 * ms}},
		{"held twice", resilience.HoldLast(resilience.HoldLast(resilience.Schedule(ms, 2*ms))), 3, []time.Duration{ms, 2 * ms, 2 * ms}},
		{"ethernet stops after 15", resilience.HoldLast(resilience.Ethernet(0)), 20, make([]time.Duration, 20)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, waits(tc.b, tc.n))
		})
	}
}

// TestHoldLastAnyN asks for a retry far past the end first, before any
// other, and past the table a fixed backoff is read from.
func TestHoldLastAnyN(t *testing.T) {
	for _, n := range []int{4, 63, 64, 65, 66, 1000, math.MaxInt} {
		for _, b := range []resilience.Backoff{
			resilience.HoldLast(resilience.Schedule(ms, 2*ms, 3*ms)),
			resilience.HoldLast(resilience.ConstantSchedule(3, 3*ms)),
			resilience.HoldLast(resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) { return 3 * ms, n <= 3 })),
			resilience.HoldLast(resilience.MaxRetries(resilience.HoldLast(resilience.Schedule(ms, 3*ms)), 3)),
		} {
			d, ok := b.Delay(n, 0)
			require.True(t, ok, "Delay(%d)", n)
			assert.Equal(t, 3*ms, d, "Delay(%d)", n)
		}
	}
	d, ok := resilience.HoldLast(resilience.MaxRetries(resilience.Constant(ms), 100)).Delay(1000, 0)
	assert.True(t, ok)
	assert.Equal(t, ms, d, "a stop past the table")
}

// TestHoldLastJitter: a jittered last wait is drawn again each time, within
// its bounds, and UseRand reaches the jitter under HoldLast.
func TestHoldLastJitter(t *testing.T) {
	b := resilience.HoldLast(resilience.MaxRetries(resilience.FullJitter(resilience.Constant(time.Second)), 2))
	a := waits(resilience.UseRand(b, seeded()), 50)
	c := waits(resilience.UseRand(b, seeded()), 50)
	require.Len(t, a, 50)
	assert.Equal(t, a, c, "UseRand reaches the jitter under HoldLast")
	distinct := map[time.Duration]bool{}
	for _, d := range a {
		require.LessOrEqual(t, d, time.Second)
		distinct[d] = true
	}
	assert.Greater(t, len(distinct), 40, "the last wait is drawn afresh")
}

// TestHoldLastConcurrent: goroutines that reach the end together all find
// the same last retry (run under -race).
func TestHoldLastConcurrent(t *testing.T) {
	b := resilience.HoldLast(resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
		return time.Duration(n), n <= 7
	}))
	var wg sync.WaitGroup
	got := make([]time.Duration, 8)
	for i := range got {
		wg.Go(func() { got[i], _ = b.Delay(100+i, 0) })
	}
	wg.Wait()
	for i, d := range got {
		assert.Equal(t, time.Duration(7), d, "goroutine %d", i)
	}
}

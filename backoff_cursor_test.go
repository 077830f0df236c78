package resilience_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

func TestCursor(t *testing.T) {
	c := resilience.NewCursor(resilience.MaxRetries(resilience.Exponential(10*ms, 2), 3))
	var got []time.Duration
	for {
		d, ok := c.Next()
		if !ok {
			break
		}
		got = append(got, d)
	}
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms}, got)
	assert.Equal(t, 3, c.Attempt())
	_, ok := c.Next()
	assert.False(t, ok, "a finished cursor stays finished")
	c.Reset()
	assert.Equal(t, 0, c.Attempt())
	d, ok := c.Next()
	assert.True(t, ok)
	assert.Equal(t, 10*ms, d)
}

// TestCursorIdleReset: after a quiet period the cursor starts over, as
// Kubernetes' ExponentialBackoffManager does.
func TestCursorIdleReset(t *testing.T) {
	mock := clock.NewMock()
	c := resilience.NewCursor(resilience.Exponential(time.Second, 2), resilience.WithCursorIdleReset(time.Minute), resilience.WithClock(mock))
	steps := []struct {
		advance time.Duration
		want    time.Duration
	}{
		{0, time.Second},
		{10 * time.Second, 2 * time.Second},
		{time.Minute, 4 * time.Second}, // exactly the idle period: no reset
		{time.Minute + 1, time.Second}, // longer: back to the start
		{0, 2 * time.Second},
	}
	for i, s := range steps {
		mock.Add(s.advance)
		d, ok := c.Next()
		require.True(t, ok)
		assert.Equal(t, s.want, d, "step %d", i)
	}
}

// TestCursorIdleResetZero: with a reset of 0 the cursor starts over after
// any pause, as Kubernetes' ExponentialBackoffManager does with a reset
// duration of 0; calls at the same instant go on down the backoff. Without
// the option it never resets.
func TestCursorIdleResetZero(t *testing.T) {
	tests := []struct {
		name string
		opts []resilience.CursorOption
		want []time.Duration // one wait per step below
	}{
		{"reset 0", []resilience.CursorOption{resilience.WithCursorIdleReset(0)}, []time.Duration{time.Second, 2 * time.Second, time.Second, time.Second, 2 * time.Second, time.Second}},
		{"no reset", nil, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second}},
	}
	advances := []time.Duration{0, 0, 1, time.Hour, 0, time.Nanosecond}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			c := resilience.NewCursor(resilience.Exponential(time.Second, 2), append(tc.opts, resilience.WithClock(mock))...)
			for i, adv := range advances {
				mock.Add(adv)
				d, ok := c.Next()
				require.True(t, ok)
				assert.Equal(t, tc.want[i], d, "step %d", i)
			}
		})
	}
}

// TestCursorIdleResetAfterStop: a cursor whose backoff has stopped starts
// over after a quiet period since its last call, stopped or not.
func TestCursorIdleResetAfterStop(t *testing.T) {
	mock := clock.NewMock()
	c := resilience.NewCursor(resilience.Schedule(time.Second), resilience.WithCursorIdleReset(time.Minute), resilience.WithClock(mock))
	d, ok := c.Next()
	assert.True(t, ok)
	assert.Equal(t, time.Second, d)
	mock.Add(50 * time.Second)
	_, ok = c.Next()
	assert.False(t, ok, "stopped")
	mock.Add(50 * time.Second) // 100s since the first call, 50s since the last
	_, ok = c.Next()
	assert.False(t, ok, "still stopped: the last call was 50s ago")
	mock.Add(time.Minute + 1)
	d, ok = c.Next()
	assert.True(t, ok, "started over")
	assert.Equal(t, time.Second, d)
}

func TestCursorConcurrent(t *testing.T) {
	c := resilience.NewCursor(resilience.Constant(ms))
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 1000 {
				c.Next()
			}
		}()
	}
	for range 4 {
		<-done
	}
	assert.Equal(t, 4000, c.Attempt())
}

func TestDelays(t *testing.T) {
	got := slices.Collect(resilience.Delays(resilience.Schedule(ms, 2*ms, 3*ms)))
	assert.Equal(t, []time.Duration{ms, 2 * ms, 3 * ms}, got)
	var first []time.Duration
	for d := range resilience.Delays(resilience.Exponential(ms, 2)) {
		if len(first) == 4 {
			break
		}
		first = append(first, d)
	}
	assert.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms}, first)
}

func TestRepeat(t *testing.T) {
	tests := []struct {
		name      string
		opts      []resilience.RepeatOption
		work      time.Duration // how long each call of f takes
		want      []time.Duration
		backoff   resilience.Backoff
		runFor    time.Duration
		wantCalls int
	}{
		// Sliding: the 100ms wait starts when f returns after 30ms.
		{"sliding", nil, 30 * ms, []time.Duration{0, 130 * ms, 260 * ms, 390 * ms}, resilience.Constant(100 * ms), 400 * ms, 4},
		// Fixed rate: f's 30ms are part of the 100ms period.
		{"fixed rate", []resilience.RepeatOption{resilience.WithRepeatFixedRate()}, 30 * ms, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms}, resilience.Constant(100 * ms), 350 * ms, 4},
		// f outlasting the period is followed at once.
		{"fixed rate, slow f", []resilience.RepeatOption{resilience.WithRepeatFixedRate()}, 150 * ms, []time.Duration{0, 150 * ms, 300 * ms}, resilience.Constant(100 * ms), 400 * ms, 3},
		{"backoff ends", nil, 0, []time.Duration{0, 10 * ms, 30 * ms}, resilience.Schedule(10*ms, 20*ms), time.Hour, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), tc.runFor)
				defer cancel()
				start := time.Now()
				var calls []time.Duration
				resilience.Repeat(ctx, tc.backoff, func(ctx context.Context) {
					calls = append(calls, time.Since(start))
					time.Sleep(tc.work)
				}, tc.opts...)
				assert.Equal(t, tc.want, calls)
				assert.Len(t, calls, tc.wantCalls)
			})
		})
	}
}

func TestRepeatMockClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			resilience.Repeat(ctx, resilience.Constant(time.Minute), func(context.Context) { calls.Add(1) }, resilience.WithClock(mock))
		}()
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load())
		mock.Add(time.Minute)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load())
		cancel()
		<-done
		assert.Equal(t, int32(2), calls.Load(), "no call after ctx ends")
	})
}

func TestRepeatPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 250*ms)
		defer cancel()
		var panics []any
		calls := 0
		resilience.Repeat(ctx, resilience.Constant(100*ms), func(context.Context) {
			calls++
			panic(calls)
		}, resilience.WithRepeatPanicHandler(func(pe *resilience.PanicError) { panics = append(panics, pe.Value) }))
		assert.Equal(t, []any{1, 2, 3}, panics, "each panic is handled and the loop goes on")
	})
	assert.PanicsWithValue(t, "boom", func() {
		resilience.Repeat(context.Background(), resilience.Constant(ms), func(context.Context) { panic("boom") })
	}, "without a handler the panic goes up")
}

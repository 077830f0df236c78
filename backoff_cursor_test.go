package resilience_test

import (
	"context"
	"math"
	"math/rand/v2"
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

// FuzzBackoff checks that no strategy or decorator returns a negative wait,
// whatever n, factor, cap and jitter.
func FuzzBackoff(f *testing.F) {
	f.Add(1, int64(time.Millisecond), 2.0, int64(time.Second), 0.5, uint64(1))
	f.Add(math.MaxInt, int64(math.MaxInt64), 1e9, int64(math.MaxInt64), 1.0, uint64(7))
	f.Add(64, int64(1), 1.0000001, int64(0), 0.0, uint64(3))
	f.Fuzz(func(t *testing.T, n int, initial int64, factor float64, capD int64, frac float64, seed uint64) {
		if n < 1 || initial < 0 || capD < 0 || !(factor >= 1 && factor <= 1e9) || !(frac >= 0 && frac <= 1) {
			t.Skip()
		}
		d0, c := time.Duration(initial), time.Duration(capD)
		exp := resilience.Exponential(d0, factor)
		strategies := []resilience.Backoff{
			exp,
			resilience.Linear(d0, d0),
			resilience.Fibonacci(d0),
			resilience.Cap(exp, c),
			resilience.FullJitter(exp),
			resilience.EqualJitter(exp),
			resilience.SymmetricJitter(exp, frac),
			resilience.UpwardJitter(exp, frac),
			resilience.Cap(resilience.UpwardJitter(exp, frac), c),
			resilience.DecorrelatedJitter(min(d0, c), c),
			resilience.SmoothJitter(d0),
			resilience.KubernetesBackoff{Duration: d0, Factor: factor, Jitter: frac, Steps: n, Cap: c},
			resilience.Jpillora(d0, c, factor, true),
			resilience.Celery(d0, c, true),
			resilience.Ethernet(d0),
		}
		r := rand.New(rand.NewPCG(seed, seed))
		for i, b := range strategies {
			b = resilience.UseRand(b, r)
			d, ok := b.Delay(n, d0)
			if ok && d < 0 {
				t.Fatalf("strategy %d: Delay(%d) = %v, want >= 0", i, n, d)
			}
		}
		if d, _ := resilience.Cap(resilience.UpwardJitter(exp, frac), c).Delay(n, 0); d > c {
			t.Fatalf("Cap: Delay(%d) = %v, beyond the cap %v", n, d, c)
		}
	})
}

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

package resilience_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

const ms = time.Millisecond

// waits returns the first n waits of b, feeding each back as prev, and
// stops early when b stops.
func waits(b resilience.Backoff, n int) []time.Duration {
	var out []time.Duration
	var prev time.Duration
	for i := 1; i <= n; i++ {
		d, ok := b.Delay(i, prev)
		if !ok {
			break
		}
		out = append(out, d)
		prev = d
	}
	return out
}

func seeded() resilience.Rand { return rand.New(rand.NewPCG(1, 2)) }

// TestBackoffSequences pins the exact waits of every deterministic strategy
// and preset.
func TestBackoffSequences(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		b    resilience.Backoff
		n    int
		want []time.Duration
	}{
		{"constant", resilience.Constant(50 * ms), 3, []time.Duration{50 * ms, 50 * ms, 50 * ms}},
		{"linear", resilience.Linear(100*ms, 50*ms), 4, []time.Duration{100 * ms, 150 * ms, 200 * ms, 250 * ms}},
		{"exponential (seed article)", resilience.Exponential(10*ms, 2), 5, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms}},
		{"fibonacci (seed article)", resilience.Fibonacci(10 * ms), 7, []time.Duration{10 * ms, 10 * ms, 20 * ms, 30 * ms, 50 * ms, 80 * ms, 130 * ms}},
		{"schedule stops after the list", resilience.Schedule(1*ms, 5*ms, 2*ms), 5, []time.Duration{1 * ms, 5 * ms, 2 * ms}},
		{"empty schedule makes no retry", resilience.Schedule(), 3, nil},
		{"cap", resilience.Cap(resilience.Exponential(s, 2), 5*s), 5, []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s}},
		{"max retries", resilience.MaxRetries(resilience.Constant(ms), 2), 5, []time.Duration{ms, ms}},
		{"kubernetes {1s, x2, Steps 10, Cap 5s}", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: 10, Cap: 5 * s}, 6,
			[]time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s, 5 * s}},
		{"kubernetes {1s, x2, Steps 3}", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: 3}, 6,
			[]time.Duration{s, 2 * s, 4 * s, 8 * s, 8 * s, 8 * s}},
		{"kubernetes Steps MaxInt grows", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: math.MaxInt}, 3, []time.Duration{s, 2 * s, 4 * s}},
		{"kubernetes Steps 0: no growth", resilience.KubernetesBackoff{Duration: s, Factor: 2}, 3, []time.Duration{s, s, s}},
		{"kubernetes Factor 0: no growth", resilience.KubernetesBackoff{Duration: s, Steps: 5}, 3, []time.Duration{s, s, s}},
		{"kubernetes Duration above Cap: first step uncapped", resilience.KubernetesBackoff{Duration: 10 * s, Factor: 2, Steps: 5, Cap: 5 * s}, 3,
			[]time.Duration{10 * s, 5 * s, 5 * s}},
		{"jpillora defaults", resilience.Jpillora(0, 0, 0, false), 10, []time.Duration{
			100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 10 * s, 10 * s, 10 * s}},
		{"jpillora min >= max gives max", resilience.Jpillora(5*s, 2*s, 2, false), 3, []time.Duration{2 * s, 2 * s, 2 * s}},
		{"celery factor 1s, max 60s", resilience.Celery(s, 60*s, false), 8, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}},
		{"go-resiliency ConstantBackoff(3, 10ms)", resilience.ConstantSchedule(3, 10*ms), 5, []time.Duration{10 * ms, 10 * ms, 10 * ms}},
		{"go-resiliency ExponentialBackoff(4, 10ms)", resilience.ExponentialSchedule(4, 10*ms), 6, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms}},
		{"go-resiliency LimitedExponentialBackoff(5, 10ms, 35ms)", resilience.LimitedExponentialSchedule(5, 10*ms, 35*ms), 6,
			[]time.Duration{10 * ms, 20 * ms, 35 * ms, 35 * ms, 35 * ms}},
		{"full jitter of zero", resilience.FullJitter(resilience.Constant(0)), 2, []time.Duration{0, 0}},
		{"upward jitter 0 means none", resilience.UpwardJitter(resilience.Constant(ms), 0), 2, []time.Duration{ms, ms}},
		{"symmetric jitter 0 means none", resilience.SymmetricJitter(resilience.Constant(ms), 0), 2, []time.Duration{ms, ms}},
		{"ethernet stops after 16 attempts", resilience.Ethernet(0), 20, make([]time.Duration, 15)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, waits(tc.b, tc.n))
		})
	}
}

// TestBackoffRandomBounds checks every draw of each random strategy against
// its bounds, and the mean against the distribution's for a fixed seed.
func TestBackoffRandomBounds(t *testing.T) {
	const draws = 20000
	s := time.Second
	tests := []struct {
		name     string
		b        resilience.Backoff
		n        int // retry number to draw for
		lo, hi   time.Duration
		mean     time.Duration
		loClosed bool
	}{
		{"random [100ms, 300ms)", resilience.Random(100*ms, 300*ms), 1, 100 * ms, 300*ms - 1, 200 * ms, true},
		{"full jitter [0, 8s]", resilience.FullJitter(resilience.Exponential(s, 2)), 4, 0, 8 * s, 4 * s, true},
		{"equal jitter [4s, 8s]", resilience.EqualJitter(resilience.Exponential(s, 2)), 4, 4 * s, 8 * s, 6 * s, true},
		{"symmetric jitter 8s ± 20%", resilience.SymmetricJitter(resilience.Constant(8*s), 0.2), 1, 6400 * ms, 9600 * ms, 8 * s, true},
		{"upward jitter [8s, 12s)", resilience.UpwardJitter(resilience.Constant(8*s), 0.5), 1, 8 * s, 12 * s, 10 * s, true},
		{"kubernetes jitter 1.0 on 4s", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: 10, Jitter: 1}, 3, 4 * s, 8 * s, 6 * s, true},
		{"jpillora jitter [100ms, 800ms)", resilience.Jpillora(0, 0, 0, true), 4, 100 * ms, 800 * ms, 450 * ms, true},
		{"celery full jitter whole seconds [0, 8s]", resilience.Celery(s, time.Minute, true), 4, 0, 8 * s, 4 * s, true},
		{"ethernet after 3 collisions: 0..7 slots", resilience.Ethernet(s), 3, 0, 7 * s, 3500 * ms, true},
		{"ethernet truncated at 10 collisions", resilience.Ethernet(ms), 14, 0, 1023 * ms, 511500 * time.Microsecond, true},
		{"grpc retry 3: 2.56s ± 20%", resilience.GRPC(), 3, 2048 * ms, 3072 * ms, 2560 * ms, true},
		{"grpc capped at 120s ± 20%", resilience.GRPC(), 40, 96 * s, 144 * s, 120 * s, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := resilience.UseRand(tc.b, seeded())
			var sum float64
			for range draws {
				d, ok := b.Delay(tc.n, 0)
				require.True(t, ok)
				require.GreaterOrEqual(t, d, tc.lo)
				require.LessOrEqual(t, d, tc.hi)
				sum += float64(d)
			}
			mean := time.Duration(sum / draws)
			assert.InEpsilon(t, float64(tc.mean), float64(mean), 0.02, "mean %v, want %v", mean, tc.mean)
		})
	}
}

func TestBackoffCelerySecondsAreWhole(t *testing.T) {
	b := resilience.UseRand(resilience.Celery(time.Second, time.Minute, true), seeded())
	for n := 1; n < 10; n++ {
		d, _ := b.Delay(n, 0)
		assert.Zero(t, d%time.Second, "Celery jitter draws whole seconds, got %v", d)
	}
}

func TestBackoffDecorrelatedJitter(t *testing.T) {
	b := resilience.UseRand(resilience.DecorrelatedJitter(10*ms, time.Second), seeded())
	prev := time.Duration(0)
	for n := 1; n < 10000; n++ {
		d, ok := b.Delay(n, prev)
		require.True(t, ok)
		require.GreaterOrEqual(t, d, 10*ms)
		require.LessOrEqual(t, d, min(time.Second, 3*max(prev, 10*ms)))
		prev = d
	}
}

// TestBackoffSmoothJitter checks Polly's V2 shape: the first retry's median
// wait is close to the median asked for, later medians double from retry to
// retry, and no wait is negative.
func TestBackoffSmoothJitter(t *testing.T) {
	b := resilience.UseRand(resilience.SmoothJitter(100*ms), seeded())
	median := func(n int) time.Duration {
		ds := make([]time.Duration, 4001)
		for i := range ds {
			d, ok := b.Delay(n, 0)
			require.True(t, ok)
			require.GreaterOrEqual(t, d, time.Duration(0))
			ds[i] = d
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	first := median(1)
	assert.InDelta(t, float64(100*ms), float64(first), float64(15*ms), "first median %v", first)
	prev := median(2)
	for n := 3; n <= 8; n++ {
		m := median(n)
		assert.InDelta(t, 2.0, float64(m)/float64(prev), 0.25, "median of retry %d is %v, of retry %d %v", n, m, n-1, prev)
		prev = m
	}
}

func TestBackoffWithRandIsReproducible(t *testing.T) {
	b := resilience.FullJitter(resilience.Cap(resilience.Exponential(ms, 2), time.Second))
	a := waits(resilience.UseRand(b, seeded()), 20)
	c := waits(resilience.UseRand(b, seeded()), 20)
	assert.Equal(t, a, c)
}

// TestBackoffSaturates checks the edges: huge n, huge factors, no cap.
func TestBackoffSaturates(t *testing.T) {
	maxD := time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		b    resilience.Backoff
		n    int
		want time.Duration
	}{
		{"exponential at MaxInt", resilience.Exponential(ms, 2), math.MaxInt, maxD},
		{"exponential factor 1e9", resilience.Exponential(time.Hour, 1e9), 3, maxD},
		{"exponential factor 1", resilience.Exponential(ms, 1), math.MaxInt, ms},
		{"linear at MaxInt", resilience.Linear(ms, ms), math.MaxInt, maxD},
		{"fibonacci at MaxInt", resilience.Fibonacci(ms), math.MaxInt, maxD},
		{"fibonacci past int64", resilience.Fibonacci(1), 93, maxD},
		{"capped exponential at MaxInt", resilience.Cap(resilience.Exponential(ms, 3), time.Minute), math.MaxInt, time.Minute},
		{"kubernetes at MaxInt", resilience.KubernetesBackoff{Duration: ms, Factor: 10, Steps: math.MaxInt}, math.MaxInt, maxD},
		{"jpillora at MaxInt", resilience.Jpillora(0, 0, 0, false), math.MaxInt, 10 * time.Second},
		{"celery at MaxInt", resilience.Celery(time.Second, time.Hour, false), math.MaxInt, time.Hour},
		{"celery saturates at 63", resilience.Celery(time.Second, maxD, false), 63, maxD},
		{"celery factor 0 at MaxInt", resilience.Celery(0, time.Hour, false), math.MaxInt, 0},
		{"celery factor 1ns at 63", resilience.Celery(1, maxD, false), 63, 1 << 62},
		{"smooth at MaxInt", resilience.SmoothJitter(ms), math.MaxInt, maxD},
		{"equal jitter of max", resilience.UseRand(resilience.EqualJitter(resilience.Constant(maxD)), seeded()), 1, -1},
		{"upward jitter of max", resilience.UpwardJitter(resilience.Constant(maxD), 1), 1, maxD},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := tc.b.Delay(tc.n, 0)
			require.True(t, ok)
			if tc.want < 0 {
				assert.GreaterOrEqual(t, d, maxD/2)
				return
			}
			assert.Equal(t, tc.want, d)
		})
	}
}

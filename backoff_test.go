package resilience_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"grpc retry 3: 2.56s ± 20%", resilience.GRPCConnect(), 3, 2048 * ms, 3072 * ms, 2560 * ms, true},
		{"grpc capped at 120s ± 20%", resilience.GRPCConnect(), 40, 96 * s, 144 * s, 120 * s, true},
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

// hugeWaits are waits that float64 cannot hold exactly (above 2^53 ns, odd)
// and the largest ones.
var hugeWaits = []time.Duration{1<<53 + 1, 1<<60 + 1, 1<<62 + 3, math.MaxInt64 - 1, math.MaxInt64}

// TestJitterOfHugeWaits: upward jitter, Kubernetes' jitter and symmetric
// jitter stay within their bounds for waits past 2^53 ns: never negative,
// never below d for the upward kinds, exactly d with a factor of 0.
func TestJitterOfHugeWaits(t *testing.T) {
	maxD := time.Duration(math.MaxInt64)
	for _, d := range hugeWaits {
		for _, f := range []float64{0, 1e-9, 0.1, 0.5, 1, 2, 1e300} {
			upward := []struct {
				name string
				b    resilience.Backoff
			}{
				{"UpwardJitter", resilience.UpwardJitter(resilience.Constant(d), f)},
				{"UpwardJitter over a cap", resilience.UpwardJitter(resilience.Cap(resilience.Constant(d), d), f)},
				{"KubernetesBackoff", resilience.KubernetesBackoff{Duration: d, Jitter: f}},
				{"KubernetesBackoff with steps", resilience.KubernetesBackoff{Duration: d, Factor: 1, Jitter: f, Steps: 3}},
			}
			for _, u := range upward {
				t.Run(fmt.Sprintf("%s %d %v", u.name, d, f), func(t *testing.T) {
					b := resilience.UseRand(u.b, seeded())
					for range 100 {
						got, ok := b.Delay(1, 0)
						require.True(t, ok)
						require.GreaterOrEqual(t, got, d)
						if f == 0 {
							require.Equal(t, d, got, "a factor of 0 is no jitter")
						}
						if f <= 1 {
							require.LessOrEqual(t, float64(got-d), f*float64(d)+1)
						}
					}
				})
			}
			if f > 1 {
				continue
			}
			t.Run(fmt.Sprintf("SymmetricJitter %d %v", d, f), func(t *testing.T) {
				b := resilience.UseRand(resilience.SymmetricJitter(resilience.Constant(d), f), seeded())
				spread := time.Duration(f * float64(d))
				for range 100 {
					got, ok := b.Delay(1, 0)
					require.True(t, ok)
					if f == 0 {
						require.Equal(t, d, got, "a factor of 0 is no jitter")
					}
					require.GreaterOrEqual(t, got, d-min(spread, d))
					require.LessOrEqual(t, got, maxD)
				}
			})
		}
	}
}

// TestZeroWaitStaysZero: 0 grown by any factor is 0, at every retry, also
// where the factor's power is beyond any float (0·∞ is NaN).
func TestZeroWaitStaysZero(t *testing.T) {
	tests := []struct {
		name string
		b    resilience.Backoff
	}{
		{"Exponential(0, 2)", resilience.Exponential(0, 2)},
		{"Exponential(0, 10)", resilience.Exponential(0, 10)},
		{"Exponential(0, 1e300)", resilience.Exponential(0, 1e300)},
		{"Cap(Exponential(0, 1e9), 1s)", resilience.Cap(resilience.Exponential(0, 1e9), time.Second)},
		{"FullJitter(Exponential(0, 1e9))", resilience.FullJitter(resilience.Exponential(0, 1e9))},
		{"ExponentialSchedule(MaxInt, 0)", resilience.ExponentialSchedule(math.MaxInt, 0)},
		{"LimitedExponentialSchedule(MaxInt, 0, 1s)", resilience.LimitedExponentialSchedule(math.MaxInt, 0, time.Second)},
		{"Jpillora(0 means default)", resilience.Cap(resilience.Jpillora(0, 0, 0, false), 0)},
		{"KubernetesBackoff{0, x1e300}", resilience.KubernetesBackoff{Factor: 1e300, Steps: math.MaxInt}},
		{"Celery(0, max)", resilience.Celery(0, math.MaxInt64, false)},
		{"SmoothJitter(0)", resilience.SmoothJitter(0)},
		{"Fibonacci(0)", resilience.Fibonacci(0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{1, 2, 20, 21, 63, 64, 65, 100, 1000, 1 << 20, math.MaxInt} {
				d, ok := tc.b.Delay(n, 0)
				require.True(t, ok)
				assert.Zero(t, d, "Delay(%d)", n)
			}
		})
	}
}

// TestExactWaitsPastFloatPrecision: a wait that float64 cannot hold comes
// back to the nanosecond where nothing multiplies it.
func TestExactWaitsPastFloatPrecision(t *testing.T) {
	for _, d := range hugeWaits {
		for _, b := range []resilience.Backoff{
			resilience.Exponential(d, 2),
			resilience.Exponential(d, 1),
			resilience.ExponentialSchedule(3, d),
			resilience.LimitedExponentialSchedule(3, d, math.MaxInt64),
			resilience.SymmetricJitter(resilience.Constant(d), 0),
			resilience.UpwardJitter(resilience.Constant(d), 0),
			resilience.HoldLast(resilience.Schedule(d)),
		} {
			got, ok := b.Delay(1, 0)
			require.True(t, ok)
			assert.Equal(t, d, got, "%T", b)
		}
	}
	got, _ := resilience.ExponentialSchedule(3, 1<<53+1).Delay(2, 0)
	assert.Equal(t, time.Duration(1<<54+2), got, "doubling is done in integers")
}

// userBackoff is a Backoff of the user's own, for typed nils.
type userBackoff struct{ d time.Duration }

func (u *userBackoff) Delay(int, time.Duration) (time.Duration, bool) { return u.d, true }

var (
	boNaN    = math.NaN()
	boInf    = math.Inf(1)
	boNegInf = math.Inf(-1)
	boMaxD   = time.Duration(math.MaxInt64)
)

// TestBackoffBadInputRefused sweeps every exported backoff constructor,
// preset, decorator and option with values that have no meaning: each
// panics at once with a message naming the function, the argument and the
// value.
func TestBackoffBadInputRefused(t *testing.T) {
	type refusal struct {
		name string
		f    func()
		want string
	}
	tests := []refusal{
		{"Constant negative", func() { resilience.Constant(-1) }, "resilience: Constant: d must not be negative, got -1ns"},
		{"Constant MinInt64", func() { resilience.Constant(math.MinInt64) }, "resilience: Constant: d must not be negative, got -2562047h47m16.854775808s"},
		{"Linear initial negative", func() { resilience.Linear(-ms, ms) }, "resilience: Linear: initial must not be negative, got -1ms"},
		{"Linear step negative", func() { resilience.Linear(ms, -ms) }, "resilience: Linear: step must not be negative, got -1ms"},
		{"Exponential initial negative", func() { resilience.Exponential(-ms, 2) }, "resilience: Exponential: initial must not be negative, got -1ms"},
		{"Exponential factor 0", func() { resilience.Exponential(ms, 0) }, "resilience: Exponential: factor must be a finite number >= 1, got 0"},
		{"Exponential factor below 1", func() { resilience.Exponential(ms, 0.5) }, "resilience: Exponential: factor must be a finite number >= 1, got 0.5"},
		{"Exponential factor negative", func() { resilience.Exponential(ms, -2) }, "resilience: Exponential: factor must be a finite number >= 1, got -2"},
		{"Exponential factor NaN", func() { resilience.Exponential(ms, boNaN) }, "resilience: Exponential: factor must be a finite number >= 1, got NaN"},
		{"Exponential factor +Inf", func() { resilience.Exponential(ms, boInf) }, "resilience: Exponential: factor must be a finite number >= 1, got +Inf"},
		{"Exponential factor -Inf", func() { resilience.Exponential(ms, boNegInf) }, "resilience: Exponential: factor must be a finite number >= 1, got -Inf"},
		{"Fibonacci negative", func() { resilience.Fibonacci(-ms) }, "resilience: Fibonacci: unit must not be negative, got -1ms"},
		{"Random min negative", func() { resilience.Random(-ms, ms) }, "resilience: Random: min must not be negative, got -1ms"},
		{"Random max below min", func() { resilience.Random(2*ms, ms) }, "resilience: Random: max must not be less than min, got min 2ms, max 1ms"},
		{"Random max negative", func() { resilience.Random(0, -ms) }, "resilience: Random: max must not be less than min, got min 0s, max -1ms"},
		{"Schedule negative wait", func() { resilience.Schedule(ms, -ms) }, "resilience: Schedule: waits[1] must not be negative, got -1ms"},
		{"Cap max negative", func() { resilience.Cap(resilience.Constant(ms), -1) }, "resilience: Cap: max must not be negative, got -1ns"},
		{"MaxRetries n negative", func() { resilience.MaxRetries(resilience.Constant(ms), -1) }, "resilience: MaxRetries: n must not be negative, got -1"},
		{"MaxRetries n MinInt", func() { resilience.MaxRetries(resilience.Constant(ms), math.MinInt) }, "resilience: MaxRetries: n must not be negative, got -9223372036854775808"},
		{"SymmetricJitter above 1", func() { resilience.SymmetricJitter(resilience.Constant(ms), 1.5) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got 1.5"},
		{"SymmetricJitter negative", func() { resilience.SymmetricJitter(resilience.Constant(ms), -0.1) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got -0.1"},
		{"SymmetricJitter NaN", func() { resilience.SymmetricJitter(resilience.Constant(ms), boNaN) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got NaN"},
		{"SymmetricJitter +Inf", func() { resilience.SymmetricJitter(resilience.Constant(ms), boInf) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got +Inf"},
		{"UpwardJitter negative", func() { resilience.UpwardJitter(resilience.Constant(ms), -0.1) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got -0.1"},
		{"UpwardJitter NaN", func() { resilience.UpwardJitter(resilience.Constant(ms), boNaN) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got NaN"},
		{"UpwardJitter +Inf", func() { resilience.UpwardJitter(resilience.Constant(ms), boInf) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got +Inf"},
		{"UpwardJitter -Inf", func() { resilience.UpwardJitter(resilience.Constant(ms), boNegInf) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got -Inf"},
		{"DecorrelatedJitter base negative", func() { resilience.DecorrelatedJitter(-ms, ms) }, "resilience: DecorrelatedJitter: base must not be negative, got -1ms"},
		{"DecorrelatedJitter max below base", func() { resilience.DecorrelatedJitter(ms, 0) }, "resilience: DecorrelatedJitter: max must not be less than base, got base 1ms, max 0s"},
		{"SmoothJitter negative", func() { resilience.SmoothJitter(-ms) }, "resilience: SmoothJitter: median must not be negative, got -1ms"},
		{"Jpillora min negative", func() { resilience.Jpillora(-ms, 0, 0, false) }, "resilience: Jpillora: min must not be negative, got -1ms"},
		{"Jpillora max negative", func() { resilience.Jpillora(0, -ms, 0, false) }, "resilience: Jpillora: max must not be negative, got -1ms"},
		{"Jpillora factor below 1", func() { resilience.Jpillora(0, 0, 0.5, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got 0.5"},
		{"Jpillora factor negative", func() { resilience.Jpillora(0, 0, -1, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got -1"},
		{"Jpillora factor NaN", func() { resilience.Jpillora(0, 0, boNaN, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got NaN"},
		{"Jpillora factor +Inf", func() { resilience.Jpillora(0, 0, boInf, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got +Inf"},
		{"Celery factor negative", func() { resilience.Celery(-time.Second, time.Minute, false) }, "resilience: Celery: factor must not be negative, got -1s"},
		{"Celery maximum negative", func() { resilience.Celery(time.Second, -time.Minute, false) }, "resilience: Celery: maximum must not be negative, got -1m0s"},
		{"Ethernet negative", func() { resilience.Ethernet(-1) }, "resilience: Ethernet: slot must not be negative, got -1ns"},
		{"ConstantSchedule n negative", func() { resilience.ConstantSchedule(-1, ms) }, "resilience: ConstantSchedule: n must not be negative, got -1"},
		{"ConstantSchedule d negative", func() { resilience.ConstantSchedule(3, -ms) }, "resilience: ConstantSchedule: d must not be negative, got -1ms"},
		{"ExponentialSchedule n negative", func() { resilience.ExponentialSchedule(-1, ms) }, "resilience: ExponentialSchedule: n must not be negative, got -1"},
		{"ExponentialSchedule initial negative", func() { resilience.ExponentialSchedule(3, -ms) }, "resilience: ExponentialSchedule: initial must not be negative, got -1ms"},
		{"LimitedExponentialSchedule n negative", func() { resilience.LimitedExponentialSchedule(-1, ms, ms) }, "resilience: LimitedExponentialSchedule: n must not be negative, got -1"},
		{"LimitedExponentialSchedule initial negative", func() { resilience.LimitedExponentialSchedule(3, -ms, ms) }, "resilience: LimitedExponentialSchedule: initial must not be negative, got -1ms"},
		{"LimitedExponentialSchedule limit negative", func() { resilience.LimitedExponentialSchedule(3, ms, -ms) }, "resilience: LimitedExponentialSchedule: limit must not be negative, got -1ms"},
		{"UseRand rand nil", func() { resilience.UseRand(resilience.Constant(ms), nil) }, "resilience: UseRand: rand is nil"},
		{"UseRand rand typed nil", func() { resilience.UseRand(resilience.Constant(ms), (*rand.Rand)(nil)) }, "resilience: UseRand: rand is a nil *rand.Rand"},
		{"NewCursor nil option", func() { resilience.NewCursor(resilience.Constant(ms), nil) }, "resilience: NewCursor: option is nil"},
		{"WithCursorIdleReset negative", func() { resilience.WithCursorIdleReset(-1) }, "resilience: WithCursorIdleReset: d must not be negative, got -1ns"},
		{"Repeat ctx nil", func() {
			//lint:ignore SA1012 a nil ctx is what this test passes
			resilience.Repeat(nil, resilience.Constant(ms), func(context.Context) {})
		}, "resilience: Repeat: ctx is nil"},
		{"Repeat f nil", func() { resilience.Repeat(context.Background(), resilience.Constant(ms), nil) }, "resilience: Repeat: f is nil"},
		{"Repeat nil option", func() {
			resilience.Repeat(context.Background(), resilience.Constant(ms), func(context.Context) {}, nil)
		}, "resilience: Repeat: option is nil"},
		{"WithRepeatPanicHandler nil", func() { resilience.WithRepeatPanicHandler(nil) }, "resilience: WithRepeatPanicHandler: handler is nil"},
		{"BackoffFunc nil called", func() { resilience.BackoffFunc(nil).Delay(1, 0) }, "resilience: BackoffFunc.Delay: the function is nil"},
	}

	// Everything that takes a Backoff refuses one that cannot answer Delay.
	takers := []struct {
		fn   string
		take func(resilience.Backoff)
	}{
		{"Cap", func(b resilience.Backoff) { resilience.Cap(b, time.Second) }},
		{"MaxRetries", func(b resilience.Backoff) { resilience.MaxRetries(b, 3) }},
		{"HoldLast", func(b resilience.Backoff) { resilience.HoldLast(b) }},
		{"FullJitter", func(b resilience.Backoff) { resilience.FullJitter(b) }},
		{"EqualJitter", func(b resilience.Backoff) { resilience.EqualJitter(b) }},
		{"SymmetricJitter", func(b resilience.Backoff) { resilience.SymmetricJitter(b, 0.1) }},
		{"UpwardJitter", func(b resilience.Backoff) { resilience.UpwardJitter(b, 0.1) }},
		{"UseRand", func(b resilience.Backoff) { resilience.UseRand(b, seeded()) }},
		{"NewCursor", func(b resilience.Backoff) { resilience.NewCursor(b) }},
		{"Delays", func(b resilience.Backoff) { resilience.Delays(b) }},
		{"Repeat", func(b resilience.Backoff) { resilience.Repeat(context.Background(), b, func(context.Context) {}) }},
	}
	bad := []struct {
		name string
		b    resilience.Backoff
		want string // after "resilience: <fn>: "
	}{
		{"nil", nil, "backoff is nil"},
		{"nil BackoffFunc", resilience.BackoffFunc(nil), "backoff is a nil resilience.BackoffFunc"},
		{"typed nil of the user", (*userBackoff)(nil), "backoff is a nil *resilience_test.userBackoff"},
		{"nil *KubernetesBackoff", (*resilience.KubernetesBackoff)(nil), "backoff is a nil *resilience.KubernetesBackoff"},
		{"Kubernetes negative Factor", resilience.KubernetesBackoff{Duration: ms, Factor: -2, Steps: 3},
			"backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got -2"},
		{"Kubernetes NaN Factor", resilience.KubernetesBackoff{Duration: ms, Factor: boNaN}, "backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got NaN"},
		{"Kubernetes -Inf Factor", resilience.KubernetesBackoff{Duration: ms, Factor: boNegInf}, "backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got -Inf"},
		{"Kubernetes negative Duration", resilience.KubernetesBackoff{Duration: -ms}, "backoff is a KubernetesBackoff whose Duration must not be negative, got -1ms"},
		{"Kubernetes NaN Jitter", resilience.KubernetesBackoff{Duration: ms, Jitter: boNaN}, "backoff is a KubernetesBackoff whose Jitter must be a finite number >= 0, got NaN"},
		{"*KubernetesBackoff +Inf Jitter", &resilience.KubernetesBackoff{Duration: ms, Jitter: boInf}, "backoff is a KubernetesBackoff whose Jitter must be a finite number >= 0, got +Inf"},
	}
	for _, tk := range takers {
		for _, b := range bad {
			tests = append(tests, refusal{tk.fn + " " + b.name, func() { tk.take(b.b) }, "resilience: " + tk.fn + ": " + b.want})
		}
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestBackoffEdgeInputMeaning sweeps the values at the edges that are
// accepted, each with the meaning its documentation gives: zero, the
// largest values, and KubernetesBackoff's fields that mean "none".
func TestBackoffEdgeInputMeaning(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		b    resilience.Backoff
		n    int
		want []time.Duration // the first waits, nil for no retry; ignored when check is set
		// check, when set, is run on every wait of the first n instead.
		check func(t *testing.T, d time.Duration)
	}{
		{"Constant(0) waits 0", resilience.Constant(0), 3, []time.Duration{0, 0, 0}, nil},
		{"Constant(max)", resilience.Constant(boMaxD), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Linear(max, max) saturates", resilience.Linear(boMaxD, boMaxD), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Exponential(0, huge) stays 0", resilience.Exponential(0, math.MaxFloat64), 3, []time.Duration{0, 0, 0}, nil},
		{"Exponential(1ns, huge) saturates", resilience.Exponential(1, math.MaxFloat64), 3, []time.Duration{1, boMaxD, boMaxD}, nil},
		{"Fibonacci(max) saturates", resilience.Fibonacci(boMaxD), 3, []time.Duration{boMaxD, boMaxD, boMaxD}, nil},
		{"Random(0, 0) waits 0", resilience.Random(0, 0), 2, []time.Duration{0, 0}, nil},
		{"Random(max, max)", resilience.Random(boMaxD, boMaxD), 1, []time.Duration{boMaxD}, nil},
		{"Schedule() makes no retry", resilience.Schedule(), 3, nil, nil},
		{"Cap(b, 0) waits 0", resilience.Cap(resilience.Exponential(s, 2), 0), 3, []time.Duration{0, 0, 0}, nil},
		{"MaxRetries(b, 0) makes no retry", resilience.MaxRetries(resilience.Constant(s), 0), 3, nil, nil},
		{"MaxRetries(b, MaxInt) goes on", resilience.MaxRetries(resilience.Constant(s), math.MaxInt), 2, []time.Duration{s, s}, nil},
		{"SymmetricJitter 0 is none", resilience.SymmetricJitter(resilience.Constant(boMaxD), 0), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"SymmetricJitter 1 of max stays in range", resilience.SymmetricJitter(resilience.Constant(boMaxD), 1), 50, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"UpwardJitter huge saturates", resilience.UpwardJitter(resilience.Constant(s), math.MaxFloat64), 50, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, s) }},
		{"FullJitter of max", resilience.FullJitter(resilience.Constant(boMaxD)), 50, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"DecorrelatedJitter(0, 0) waits 0", resilience.DecorrelatedJitter(0, 0), 3, []time.Duration{0, 0, 0}, nil},
		{"DecorrelatedJitter(max, max)", resilience.DecorrelatedJitter(boMaxD, boMaxD), 3, []time.Duration{boMaxD, boMaxD, boMaxD}, nil},
		{"SmoothJitter(0) waits 0", resilience.SmoothJitter(0), 3, []time.Duration{0, 0, 0}, nil},
		{"SmoothJitter(max)", resilience.SmoothJitter(boMaxD), 20, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"KubernetesBackoff zero value waits 0", resilience.KubernetesBackoff{}, 3, []time.Duration{0, 0, 0}, nil},
		{"KubernetesBackoff Steps < 1: no growth", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: -5}, 3, []time.Duration{s, s, s}, nil},
		{"KubernetesBackoff Steps MinInt: no growth", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: math.MinInt}, 2, []time.Duration{s, s}, nil},
		{"KubernetesBackoff Cap < 0: no cap", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: 3, Cap: -s}, 4, []time.Duration{s, 2 * s, 4 * s, 8 * s}, nil},
		{"KubernetesBackoff Factor 0: no growth", resilience.KubernetesBackoff{Duration: s, Steps: 3, Cap: s / 2}, 3, []time.Duration{s, s, s}, nil},
		{"KubernetesBackoff huge Factor reaches Cap", resilience.KubernetesBackoff{Duration: s, Factor: math.MaxFloat64, Steps: 3, Cap: time.Hour}, 3, []time.Duration{s, time.Hour, time.Hour}, nil},
		{"KubernetesBackoff huge Factor saturates", resilience.KubernetesBackoff{Duration: s, Factor: math.MaxFloat64, Steps: 3}, 3, []time.Duration{s, boMaxD, boMaxD}, nil},
		{"KubernetesBackoff huge Jitter saturates", resilience.KubernetesBackoff{Duration: s, Jitter: math.MaxFloat64}, 20, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, s) }},
		{"Jpillora zeros take the defaults", resilience.Jpillora(0, 0, 0, false), 2, []time.Duration{100 * ms, 200 * ms}, nil},
		{"Jpillora(max, max, huge)", resilience.Jpillora(boMaxD, boMaxD, math.MaxFloat64, true), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Celery maximum 0 waits 0", resilience.Celery(s, 0, true), 3, []time.Duration{0, 0, 0}, nil},
		{"Celery(max, max)", resilience.Celery(boMaxD, boMaxD, false), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Ethernet(0) waits 0", resilience.Ethernet(0), 2, []time.Duration{0, 0}, nil},
		{"Ethernet(max) saturates", resilience.Ethernet(boMaxD), 15, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"ConstantSchedule(0, d) makes no retry", resilience.ConstantSchedule(0, s), 3, nil, nil},
		{"ConstantSchedule(MaxInt, d) builds no slice", resilience.ConstantSchedule(math.MaxInt, s), 2, []time.Duration{s, s}, nil},
		{"ExponentialSchedule(MaxInt, max)", resilience.ExponentialSchedule(math.MaxInt, boMaxD), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"LimitedExponentialSchedule limit 0 waits 0", resilience.LimitedExponentialSchedule(3, s, 0), 5, []time.Duration{0, 0, 0}, nil},
		{"LimitedExponentialSchedule limit below initial", resilience.LimitedExponentialSchedule(2, 2*s, s), 5, []time.Duration{s, s}, nil},
		{"HoldLast of no retry makes none", resilience.HoldLast(resilience.ConstantSchedule(0, s)), 3, nil, nil},
		{"nil slice as a user's Backoff is an empty schedule", resilience.Cap(userSchedule(nil), s), 3, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := resilience.UseRand(tc.b, seeded())
			got := waits(b, tc.n)
			if tc.check == nil {
				assert.Equal(t, tc.want, got)
				return
			}
			require.Len(t, got, tc.n)
			for _, d := range got {
				tc.check(t, d)
			}
		})
	}

	// Far retries of the huge presets: no slice, no overflow.
	d, ok := resilience.ConstantSchedule(math.MaxInt, s).Delay(math.MaxInt, 0)
	assert.True(t, ok)
	assert.Equal(t, s, d)
	_, ok = resilience.ConstantSchedule(math.MaxInt-1, s).Delay(math.MaxInt, 0)
	assert.False(t, ok)
	d, _ = resilience.ExponentialSchedule(math.MaxInt, ms).Delay(math.MaxInt, 0)
	assert.Equal(t, boMaxD, d)

	// The idle reset's edges: 0 is documented (TestCursorIdleResetZero);
	// the largest never resets in practice.
	assert.NotPanics(t, func() {
		resilience.NewCursor(resilience.Constant(s), resilience.WithCursorIdleReset(0), resilience.WithCursorIdleReset(boMaxD))
	})
}

// userSchedule is a user's Backoff whose nil value works: a nil slice is
// not refused as a typed nil.
type userSchedule []time.Duration

func (s userSchedule) Delay(n int, _ time.Duration) (time.Duration, bool) {
	if n < 1 || n > len(s) {
		return 0, false
	}
	return s[n-1], true
}

// backoffs are every strategy and decorator, built as a user would.
func backoffs() []struct {
	name string
	b    resilience.Backoff
} {
	exp := resilience.Exponential(100*ms, 2)
	return []struct {
		name string
		b    resilience.Backoff
	}{
		{"Constant", resilience.Constant(ms)},
		{"Linear", resilience.Linear(ms, ms)},
		{"Exponential", exp},
		{"Fibonacci", resilience.Fibonacci(ms)},
		{"Random", resilience.Random(ms, time.Second)},
		{"Schedule", resilience.Schedule(ms, 2*ms, 3*ms, 4*ms, 5*ms, 6*ms)},
		{"Cap", resilience.Cap(exp, 10*time.Second)},
		{"MaxRetries", resilience.MaxRetries(exp, 10)},
		{"FullJitter", resilience.FullJitter(resilience.Cap(exp, 10*time.Second))},
		{"EqualJitter", resilience.EqualJitter(exp)},
		{"SymmetricJitter", resilience.SymmetricJitter(exp, 0.2)},
		{"UpwardJitter", resilience.UpwardJitter(exp, 0.5)},
		{"DecorrelatedJitter", resilience.DecorrelatedJitter(ms, time.Second)},
		{"SmoothJitter", resilience.SmoothJitter(ms)},
		{"Kubernetes", resilience.KubernetesBackoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 5 * time.Second}},
		{"KubernetesNoJitter", resilience.KubernetesBackoff{Duration: 10 * ms, Factor: 1.5, Steps: 10, Cap: 5 * time.Second}},
		{"HoldLast", resilience.HoldLast(resilience.Schedule(ms, 2*ms, 3*ms))},
		{"HoldLastJitter", resilience.HoldLast(resilience.MaxRetries(resilience.FullJitter(exp), 3))},
		{"Jpillora", resilience.Jpillora(0, 0, 0, true)},
		{"Celery", resilience.Celery(time.Second, time.Minute, true)},
		{"Ethernet", resilience.Ethernet(51200 * time.Nanosecond)},
		{"GRPC", resilience.GRPCConnect()},
	}
}

func BenchmarkBackoffDelay(b *testing.B) {
	for _, bb := range backoffs() {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = n%6 + 1
				_, _ = bb.b.Delay(n, time.Millisecond)
			}
		})
	}
}

var drawSink uint64

// BenchmarkRandDraw is one draw of math/rand/v2, the default randomness:
// the floor under every jittered Delay above.
func BenchmarkRandDraw(b *testing.B) {
	for b.Loop() {
		drawSink += rand.Uint64()
	}
}

func TestBackoffDelayAllocatesNothing(t *testing.T) {
	for _, bb := range backoffs() {
		t.Run(bb.name, func(t *testing.T) {
			n := 0
			allocs := testing.AllocsPerRun(1000, func() {
				n = n%6 + 1
				_, _ = bb.b.Delay(n, time.Millisecond)
			})
			if allocs != 0 {
				t.Errorf("Delay allocates %v times, want 0", allocs)
			}
		})
	}
}

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

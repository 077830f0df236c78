package resilience_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

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

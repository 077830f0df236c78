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

// stepper is wait.Backoff with its Step method, written here from
// Kubernetes' documented semantics and without its jitter: while steps are
// left, Step returns Duration and then sets it to Duration·Factor truncated
// to whole nanoseconds (unless Factor is 0); a grown Duration past Cap
// (when Cap > 0) becomes Cap and ends the steps; with no steps left, Step
// returns Duration unchanged. A product past the largest Duration saturates
// there, the library's one documented departure (Kubernetes' conversion
// yields a negative wait).
type stepper struct {
	Duration time.Duration
	Factor   float64
	Steps    int
	Cap      time.Duration
}

func (b *stepper) Step() time.Duration {
	if b.Steps < 1 {
		return b.Duration
	}
	b.Steps--
	d := b.Duration
	if b.Factor != 0 {
		grown := float64(b.Duration) * b.Factor
		if grown >= math.MaxInt64 {
			b.Duration = math.MaxInt64
		} else {
			b.Duration = time.Duration(grown)
		}
		if b.Cap > 0 && b.Duration > b.Cap {
			b.Duration = b.Cap
			b.Steps = 0
		}
	}
	return d
}

// TestKubernetesMatchesStep compares KubernetesBackoff with the
// transcription of Step over a grid of its four parameters, retry by retry,
// past the 64 waits the library keeps in a table.
func TestKubernetesMatchesStep(t *testing.T) {
	const retries = 150
	durations := []time.Duration{0, 1, 3, 7, 999, time.Microsecond, 10 * ms, 333333333, time.Hour, 1<<53 + 1, math.MaxInt64 / 3, math.MaxInt64}
	factors := []float64{0, 0.3, 0.5, 0.999, 1, 1.0000001, 1.1, 1.5, 1.6, 2, math.Pi, 10, 1e9, 1e300}
	steps := []int{-1, 0, 1, 2, 5, 10, 63, 64, 65, 100, math.MaxInt32, math.MaxInt}
	caps := []time.Duration{-time.Second, 0, 1, 10, 5 * time.Second, time.Hour, math.MaxInt64}
	cases := 0
	for _, d0 := range durations {
		for _, f := range factors {
			for _, s := range steps {
				for _, c := range caps {
					cases++
					k := resilience.KubernetesBackoff{Duration: d0, Factor: f, Steps: s, Cap: c}
					ref := &stepper{Duration: d0, Factor: f, Steps: s, Cap: c}
					for n := 1; n <= retries; n++ {
						want := ref.Step()
						got, ok := k.Delay(n, 0)
						if !ok || got != want {
							t.Fatalf("%+v: Delay(%d) = %v, %v; Step gives %v", k, n, got, ok, want)
						}
					}
				}
			}
		}
	}
	t.Logf("%d parameter sets, %d retries each", cases, retries)
}

// TestKubernetesTruncatesEachStep pins the waits that show the per-step
// truncation, and large n.
func TestKubernetesTruncatesEachStep(t *testing.T) {
	tests := []struct {
		name string
		k    resilience.KubernetesBackoff
		n    int
		want time.Duration
	}{
		{"{10ms, x1.5} retry 11", resilience.KubernetesBackoff{Duration: 10 * ms, Factor: 1.5, Steps: 20}, 11, 576650389},
		{"{3ns, x1.1} stays 3ns", resilience.KubernetesBackoff{Duration: 3, Factor: 1.1, Steps: math.MaxInt}, 1000, 3},
		{"{3ns, x1.1} stays 3ns at MaxInt", resilience.KubernetesBackoff{Duration: 3, Factor: 1.1, Steps: math.MaxInt}, math.MaxInt, 3},
		{"{10ns, x1.1} grows once truncation lets it", resilience.KubernetesBackoff{Duration: 10, Factor: 1.1, Steps: math.MaxInt}, 3, 12},
		{"{1ms, x1.01} far past the table", resilience.KubernetesBackoff{Duration: ms, Factor: 1.01, Steps: 1000}, 5000, -1},
		{"saturates rather than going negative", resilience.KubernetesBackoff{Duration: time.Hour, Factor: 1e9, Steps: 10}, 4, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.k.Delay(tc.n, 0)
			require.True(t, ok)
			want := tc.want
			if want < 0 { // compute it with the transcription
				ref := &stepper{tc.k.Duration, tc.k.Factor, tc.k.Steps, tc.k.Cap}
				for range tc.n {
					want = ref.Step()
				}
			}
			assert.Equal(t, want, got, "%v", got)
		})
	}
}

// TestKubernetesJitterMatchesStep checks a jittered KubernetesBackoff: each
// wait lies in [d, d + Jitter·d), d being Step's, and never below zero, also
// for durations past float64's 53 bits.
func TestKubernetesJitterMatchesStep(t *testing.T) {
	for _, k := range []resilience.KubernetesBackoff{
		{Duration: 10 * ms, Factor: 1.5, Jitter: 0.5, Steps: 20, Cap: 2 * time.Second},
		{Duration: 1<<60 + 1, Factor: 1.5, Jitter: 1, Steps: 5},
		{Duration: math.MaxInt64 - 1, Factor: 2, Jitter: 0.1, Steps: 3},
	} {
		t.Run(fmt.Sprintf("%v x%v jitter %v", k.Duration, k.Factor, k.Jitter), func(t *testing.T) {
			b := resilience.UseRand(k, seeded())
			ref := &stepper{k.Duration, k.Factor, k.Steps, k.Cap}
			for n := 1; n <= 30; n++ {
				base := ref.Step()
				hi := base + time.Duration(float64(base)*k.Jitter)
				if hi < base {
					hi = math.MaxInt64
				}
				for range 200 {
					d, ok := b.Delay(n, 0)
					require.True(t, ok)
					require.GreaterOrEqual(t, d, base, "retry %d", n)
					require.LessOrEqual(t, d, hi, "retry %d", n)
				}
			}
		})
	}
}

// TestKubernetesDelayRefusesNonsense pins what Delay does with fields that
// have no meaning, and that fields with one keep it.
func TestKubernetesDelayRefusesNonsense(t *testing.T) {
	tests := []struct {
		name string
		k    resilience.KubernetesBackoff
		want string
	}{
		{"negative Duration", resilience.KubernetesBackoff{Duration: -1, Factor: 2, Steps: 3}, "resilience: KubernetesBackoff.Delay: Duration must not be negative, got -1ns"},
		{"negative Factor", resilience.KubernetesBackoff{Duration: 1, Factor: -1, Steps: 3}, "resilience: KubernetesBackoff.Delay: Factor must be a finite number >= 0, got -1"},
		{"NaN Factor", resilience.KubernetesBackoff{Duration: 1, Factor: math.NaN(), Steps: 3}, "resilience: KubernetesBackoff.Delay: Factor must be a finite number >= 0, got NaN"},
		{"NaN Factor, no Steps", resilience.KubernetesBackoff{Duration: 1, Factor: math.NaN()}, "resilience: KubernetesBackoff.Delay: Factor must be a finite number >= 0, got NaN"},
		{"+Inf Factor", resilience.KubernetesBackoff{Duration: 1, Factor: math.Inf(1), Steps: 3}, "resilience: KubernetesBackoff.Delay: Factor must be a finite number >= 0, got +Inf"},
		{"negative Jitter", resilience.KubernetesBackoff{Duration: 1, Jitter: -0.5}, "resilience: KubernetesBackoff.Delay: Jitter must be a finite number >= 0, got -0.5"},
		{"NaN Jitter", resilience.KubernetesBackoff{Duration: 1, Jitter: math.NaN()}, "resilience: KubernetesBackoff.Delay: Jitter must be a finite number >= 0, got NaN"},
		{"+Inf Jitter", resilience.KubernetesBackoff{Duration: 1, Jitter: math.Inf(1)}, "resilience: KubernetesBackoff.Delay: Jitter must be a finite number >= 0, got +Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, func() { tc.k.Delay(2, 0) })
		})
	}
}

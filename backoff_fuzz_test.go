package resilience_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

// FuzzBackoff checks, whatever n, waits, factors, cap, jitter and steps:
// no strategy or decorator returns a negative wait; a Cap is a hard cap
// over any of them; KubernetesBackoff returns what the transcription of
// Step returns (stepper, in backoff_kubernetes_test.go), jittered or not;
// HoldLast repeats the last wait of what it wraps; the schedule presets
// match their reference.
func FuzzBackoff(f *testing.F) {
	f.Add(1, int64(time.Millisecond), 2.0, int64(time.Second), 0.5, uint64(1), 10)
	f.Add(math.MaxInt, int64(math.MaxInt64), 1e9, int64(math.MaxInt64), 1.0, uint64(7), math.MaxInt)
	f.Add(64, int64(1), 1.0000001, int64(0), 0.0, uint64(3), 0)
	f.Add(11, int64(10*time.Millisecond), 1.5, int64(0), 0.0, uint64(4), 20)
	f.Add(500, int64(3), 1.1, int64(0), 0.9, uint64(5), math.MaxInt)
	f.Add(70, int64(1<<53+1), 1.0, int64(1<<62), 0.0, uint64(6), 65)
	f.Fuzz(func(t *testing.T, n int, initial int64, factor float64, capD int64, frac float64, seed uint64, steps int) {
		if n < 1 || initial < 0 || capD < 0 || !(factor >= 1 && factor <= 1e300) || !(frac >= 0 && frac <= 1) {
			t.Skip()
		}
		d0, c := time.Duration(initial), time.Duration(capD)
		k := steps & 0xff // a retry count small enough for a reference loop
		exp := resilience.Exponential(d0, factor)
		strategies := []resilience.Backoff{
			exp,
			resilience.Linear(d0, d0),
			resilience.Fibonacci(d0),
			resilience.Random(min(d0, c), max(d0, c)),
			resilience.Cap(exp, c),
			resilience.FullJitter(exp),
			resilience.EqualJitter(exp),
			resilience.SymmetricJitter(exp, frac),
			resilience.UpwardJitter(exp, frac),
			resilience.UpwardJitter(exp, factor),
			resilience.DecorrelatedJitter(min(d0, c), max(d0, c)),
			resilience.SmoothJitter(d0),
			resilience.KubernetesBackoff{Duration: d0, Factor: factor, Jitter: frac, Steps: steps, Cap: c},
			resilience.KubernetesBackoff{Duration: d0, Factor: frac, Jitter: factor, Steps: steps, Cap: c},
			resilience.Jpillora(d0, c, factor, true),
			resilience.Celery(d0, c, true),
			resilience.Ethernet(d0),
			resilience.ExponentialSchedule(k, d0),
			resilience.LimitedExponentialSchedule(k, d0, c),
			resilience.HoldLast(resilience.MaxRetries(exp, k)),
			resilience.HoldLast(resilience.MaxRetries(resilience.UpwardJitter(exp, frac), k)),
			resilience.HoldLast(resilience.ExponentialSchedule(k, d0)),
		}
		r := rand.New(rand.NewPCG(seed, seed))
		for i, b := range strategies {
			b = resilience.UseRand(b, r)
			if d, ok := b.Delay(n, d0); ok && d < 0 {
				t.Fatalf("strategy %d: Delay(%d) = %v, want >= 0", i, n, d)
			}
			if d, ok := resilience.Cap(b, c).Delay(n, d0); ok && (d < 0 || d > c) {
				t.Fatalf("strategy %d: Cap: Delay(%d) = %v, beyond the cap %v", i, n, d, c)
			}
		}

		// KubernetesBackoff against Step, retry by retry up to m.
		m := min(n, 300)
		for _, f := range []float64{factor, frac} {
			kb := resilience.KubernetesBackoff{Duration: d0, Factor: f, Steps: steps, Cap: c}
			jb := resilience.UseRand(resilience.KubernetesBackoff{Duration: d0, Factor: f, Jitter: frac, Steps: steps, Cap: c}, r)
			ref := &stepper{Duration: d0, Factor: f, Steps: steps, Cap: c}
			for i := 1; i <= m; i++ {
				want := ref.Step()
				if got, _ := kb.Delay(i, 0); got != want {
					t.Fatalf("%+v: Delay(%d) = %v; Step gives %v", kb, i, got, want)
				}
				got, _ := jb.Delay(i, 0)
				if got < want || float64(got-want) > frac*float64(want)+1 {
					t.Fatalf("%+v jitter %v: Delay(%d) = %v; Step gives %v before jitter", kb, frac, i, got, want)
				}
			}
		}

		// HoldLast: b's own wait while b lasts, b's last wait after.
		held := resilience.HoldLast(resilience.MaxRetries(exp, k))
		d, ok := held.Delay(n, 0)
		switch {
		case k == 0:
			if ok {
				t.Fatalf("HoldLast of no retry: Delay(%d) = %v, true", n, d)
			}
		default:
			want, _ := exp.Delay(min(n, k), 0)
			if !ok || d != want {
				t.Fatalf("HoldLast(MaxRetries(exp, %d)): Delay(%d) = %v, %v; want %v", k, n, d, ok, want)
			}
		}

		// ExponentialSchedule: doubling in integers, saturating.
		if n <= k {
			want := d0
			for range n - 1 {
				if want > math.MaxInt64/2 {
					want = math.MaxInt64
				} else {
					want *= 2
				}
			}
			if got, _ := resilience.ExponentialSchedule(k, d0).Delay(n, 0); got != want {
				t.Fatalf("ExponentialSchedule(%d, %v): Delay(%d) = %v, want %v", k, d0, n, got, want)
			}
		} else if _, ok := resilience.ExponentialSchedule(k, d0).Delay(n, 0); ok {
			t.Fatalf("ExponentialSchedule(%d, %v): Delay(%d) makes a retry", k, d0, n)
		}
	})
}

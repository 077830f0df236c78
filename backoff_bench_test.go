package resilience_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

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
		{"GRPC", resilience.GRPC()},
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

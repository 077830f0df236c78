package resilience_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// show prints the first n waits of b.
func show(b resilience.Backoff, n int) {
	var ds []time.Duration
	for d := range resilience.Delays(b) {
		if len(ds) == n {
			break
		}
		ds = append(ds, d)
	}
	fmt.Println(ds)
}

func ExampleConstant() {
	show(resilience.Constant(time.Second), 3)
	// Output: [1s 1s 1s]
}

func ExampleLinear() {
	show(resilience.Linear(time.Second, 500*time.Millisecond), 4)
	// Output: [1s 1.5s 2s 2.5s]
}

func ExampleExponential() {
	show(resilience.Exponential(10*time.Millisecond, 2), 5)
	// Output: [10ms 20ms 40ms 80ms 160ms]
}

func ExampleFibonacci() {
	show(resilience.Fibonacci(10*time.Millisecond), 7)
	// Output: [10ms 10ms 20ms 30ms 50ms 80ms 130ms]
}

func ExampleRandom() {
	b := resilience.UseRand(resilience.Random(time.Second, 2*time.Second), rand.New(rand.NewPCG(1, 1)))
	d, _ := b.Delay(1, 0)
	fmt.Println(d >= time.Second && d < 2*time.Second)
	// Output: true
}

func ExampleSchedule() {
	show(resilience.Schedule(time.Second, 5*time.Second, 30*time.Second), 10)
	// Output: [1s 5s 30s]
}

func ExampleCap() {
	show(resilience.Cap(resilience.Exponential(time.Second, 2), 5*time.Second), 5)
	// Output: [1s 2s 4s 5s 5s]
}

func ExampleHoldLast() {
	// go-resiliency's infinite retry: the schedule's last wait, for ever.
	show(resilience.HoldLast(resilience.Schedule(time.Second, 5*time.Second, 30*time.Second)), 6)
	show(resilience.HoldLast(resilience.ExponentialSchedule(3, 100*time.Millisecond)), 5)
	// Output:
	// [1s 5s 30s 30s 30s 30s]
	// [100ms 200ms 400ms 400ms 400ms]
}

func ExampleMaxRetries() {
	show(resilience.MaxRetries(resilience.Constant(time.Second), 2), 10)
	// Output: [1s 1s]
}

func ExampleFullJitter() {
	// Retry's default: full jitter over doubling waits from 100ms, capped at 10s.
	b := resilience.FullJitter(resilience.Cap(resilience.Exponential(100*time.Millisecond, 2), 10*time.Second))
	d, _ := b.Delay(4, 0) // uniform in [0, 800ms]
	fmt.Println(d <= 800*time.Millisecond)
	// Output: true
}

func ExampleEqualJitter() {
	b := resilience.EqualJitter(resilience.Constant(time.Second))
	d, _ := b.Delay(1, 0) // uniform in [500ms, 1s]
	fmt.Println(d >= 500*time.Millisecond && d <= time.Second)
	// Output: true
}

func ExampleSymmetricJitter() {
	b := resilience.SymmetricJitter(resilience.Constant(time.Second), 0.1)
	d, _ := b.Delay(1, 0) // uniform in [900ms, 1.1s]
	fmt.Println(d >= 900*time.Millisecond && d <= 1100*time.Millisecond)
	// Output: true
}

func ExampleUpwardJitter() {
	b := resilience.UpwardJitter(resilience.Constant(time.Second), 0.5)
	d, _ := b.Delay(1, 0) // uniform in [1s, 1.5s)
	fmt.Println(d >= time.Second && d < 1500*time.Millisecond)
	// Output: true
}

func ExampleDecorrelatedJitter() {
	b := resilience.DecorrelatedJitter(100*time.Millisecond, 10*time.Second)
	d, _ := b.Delay(2, time.Second) // uniform in [100ms, 3s]
	fmt.Println(d >= 100*time.Millisecond && d <= 3*time.Second)
	// Output: true
}

func ExampleSmoothJitter() {
	b := resilience.Cap(resilience.SmoothJitter(time.Second), time.Minute)
	d, _ := b.Delay(1, 0)
	fmt.Println(d >= 0 && d <= time.Minute)
	// Output: true
}

func ExampleKubernetesBackoff() {
	show(resilience.KubernetesBackoff{Duration: time.Second, Factor: 2, Steps: 10, Cap: 5 * time.Second}, 6)
	show(resilience.KubernetesBackoff{Duration: time.Second, Factor: 2, Steps: 3}, 6)
	// Output:
	// [1s 2s 4s 5s 5s 5s]
	// [1s 2s 4s 8s 8s 8s]
}

func ExampleJpillora() {
	show(resilience.Jpillora(0, 0, 0, false), 9) // the defaults: 100ms, 10s, ×2
	// Output: [100ms 200ms 400ms 800ms 1.6s 3.2s 6.4s 10s 10s]
}

func ExampleCelery() {
	show(resilience.Celery(time.Second, 30*time.Second, false), 7)
	// Output: [1s 2s 4s 8s 16s 30s 30s]
}

func ExampleEthernet() {
	b := resilience.UseRand(resilience.Ethernet(51200*time.Nanosecond), rand.New(rand.NewPCG(1, 1)))
	d, _ := b.Delay(3, 0) // 0 to 7 slots
	fmt.Println(d%(51200*time.Nanosecond) == 0 && d <= 7*51200*time.Nanosecond)
	// Output: true
}

func ExampleGRPCConnect() {
	d, _ := resilience.GRPCConnect().Delay(1, 0) // 1s ± 20%
	fmt.Println(d >= 800*time.Millisecond && d <= 1200*time.Millisecond)
	// Output: true
}

func ExampleConstantSchedule() {
	show(resilience.ConstantSchedule(3, time.Second), 10)
	// Output: [1s 1s 1s]
}

func ExampleExponentialSchedule() {
	show(resilience.ExponentialSchedule(4, 10*time.Millisecond), 10)
	// Output: [10ms 20ms 40ms 80ms]
}

func ExampleLimitedExponentialSchedule() {
	show(resilience.LimitedExponentialSchedule(5, 10*time.Millisecond, 35*time.Millisecond), 10)
	// Output: [10ms 20ms 35ms 35ms 35ms]
}

func ExampleUseRand() {
	b := resilience.FullJitter(resilience.Exponential(time.Second, 2))
	a := resilience.UseRand(b, rand.New(rand.NewPCG(7, 7)))
	c := resilience.UseRand(b, rand.New(rand.NewPCG(7, 7)))
	da, _ := a.Delay(3, 0)
	dc, _ := c.Delay(3, 0)
	fmt.Println(da == dc) // the same seed gives the same waits
	// Output: true
}

func ExampleNewCursor() {
	c := resilience.NewCursor(resilience.MaxRetries(resilience.Exponential(time.Second, 2), 3))
	for {
		d, ok := c.Next()
		if !ok {
			break
		}
		fmt.Println(c.Attempt(), d)
	}
	// Output:
	// 1 1s
	// 2 2s
	// 3 4s
}

func ExampleDelays() {
	for d := range resilience.Delays(resilience.Schedule(time.Second, 2*time.Second)) {
		fmt.Println(d)
	}
	// Output:
	// 1s
	// 2s
}

func ExampleRepeat() {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	resilience.Repeat(ctx, resilience.Constant(time.Millisecond), func(context.Context) {
		calls++
		if calls == 3 {
			cancel()
		}
	})
	fmt.Println(calls)
	// Output: 3
}

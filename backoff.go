package resilience

import (
	"fmt"
	"math"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// Backoff decides how long to wait before each retry. Implementations are
// stateless values, safe for concurrent use ([Cursor] keeps a walk over
// one). The strategies of this package never return a negative wait and
// saturate at their cap or at the largest time.Duration.
type Backoff interface {
	// Delay is the wait before retry n (n >= 1), given the wait before the
	// previous retry (0 before the first). ok is false when no further retry
	// should be made.
	Delay(n int, prev time.Duration) (d time.Duration, ok bool)
}

// BackoffFunc adapts an ordinary function to a [Backoff].
type BackoffFunc func(n int, prev time.Duration) (time.Duration, bool)

// Delay calls f(n, prev). It panics if f is nil.
func (f BackoffFunc) Delay(n int, prev time.Duration) (time.Duration, bool) {
	if f == nil {
		panic("resilience: BackoffFunc.Delay: the function is nil")
	}
	return f(n, prev)
}

// checkBackoff panics, naming fn, when b cannot make a single Delay call: a
// nil interface, a nil pointer, function or channel in one (see isNil), or
// a KubernetesBackoff whose fields have no meaning.
func checkBackoff(fn string, b Backoff) {
	switch v := b.(type) {
	case nil:
		panic("resilience: " + fn + ": backoff is nil")
	case KubernetesBackoff:
		if msg := v.invalid(); msg != "" {
			panic("resilience: " + fn + ": backoff is a KubernetesBackoff whose " + msg)
		}
		return
	}
	if isNil(b) {
		panic(fmt.Sprintf("resilience: %s: backoff is a nil %T", fn, b))
	}
	if k, ok := b.(*KubernetesBackoff); ok {
		checkBackoff(fn, *k)
	}
}

func checkDuration(fn, name string, d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("resilience: %s: %s must not be negative, got %v", fn, name, d))
	}
}

// pow returns f^k for f >= 1 and k >= 0, stopping early once the result is
// beyond any duration.
func pow(f float64, k int) float64 {
	r := 1.0
	for k > 0 && r < 1e19 {
		if k&1 == 1 {
			r *= f
		}
		f *= f
		k >>= 1
		if f > 1e19 && k > 0 {
			return math.Inf(1)
		}
	}
	return r
}

// Constant waits d before every retry. It panics if d is negative.
func Constant(d time.Duration) Backoff {
	checkDuration("Constant", "d", d)
	return &constant{d}
}

type constant struct{ d time.Duration }

func (c *constant) Delay(int, time.Duration) (time.Duration, bool) { return c.d, true }

// Linear waits initial before the first retry and step more before each one
// after: initial + (n-1)·step. It panics if either is negative.
func Linear(initial, step time.Duration) Backoff {
	checkDuration("Linear", "initial", initial)
	checkDuration("Linear", "step", step)
	return &linear{initial, step}
}

type linear struct{ initial, step time.Duration }

func (l *linear) Delay(n int, _ time.Duration) (time.Duration, bool) {
	return sat.Add(l.initial, sat.Mul(l.step, int64(max(n, 1)-1))), true
}

// Exponential waits initial·factor^(n-1) before retry n: with (100ms, 2),
// 100ms, 200ms, 400ms and so on; wrap it in [Cap] to bound it. It panics if
// initial is negative or factor is not a finite number of at least 1.
func Exponential(initial time.Duration, factor float64) Backoff {
	checkDuration("Exponential", "initial", initial)
	if !(factor >= 1) || math.IsInf(factor, 0) {
		panic(fmt.Sprintf("resilience: Exponential: factor must be a finite number >= 1, got %v", factor))
	}
	if factor == 1 {
		return &constant{initial}
	}
	e := &exponential{initial: initial, factor: factor}
	for i := range e.powers {
		e.powers[i] = pow(factor, i)
	}
	return e
}

// exponential keeps the first powers of its factor, computed when it is
// made, so that Delay is a lookup for every retry a program is likely to
// make.
type exponential struct {
	initial time.Duration
	factor  float64
	powers  [64]float64
}

func (e *exponential) Delay(n int, _ time.Duration) (time.Duration, bool) {
	k := max(n, 1) - 1
	if k < len(e.powers) {
		if k == 0 { // initial itself, which float64 may not hold
			return e.initial, true
		}
		return sat.Scale(e.initial, e.powers[k]), true
	}
	return sat.Scale(e.initial, pow(e.factor, k)), true
}

// fibonacci holds the Fibonacci numbers that fit in an int64, written out so
// that they are part of the program's data and cost nothing when the
// package starts.
var fibonacci = [93]int64{
	0, 1, 1, 2,
	3, 5, 8, 13,
	21, 34, 55, 89,
	144, 233, 377, 610,
	987, 1597, 2584, 4181,
	6765, 10946, 17711, 28657,
	46368, 75025, 121393, 196418,
	317811, 514229, 832040, 1346269,
	2178309, 3524578, 5702887, 9227465,
	14930352, 24157817, 39088169, 63245986,
	102334155, 165580141, 267914296, 433494437,
	701408733, 1134903170, 1836311903, 2971215073,
	4807526976, 7778742049, 12586269025, 20365011074,
	32951280099, 53316291173, 86267571272, 139583862445,
	225851433717, 365435296162, 591286729879, 956722026041,
	1548008755920, 2504730781961, 4052739537881, 6557470319842,
	10610209857723, 17167680177565, 27777890035288, 44945570212853,
	72723460248141, 117669030460994, 190392490709135, 308061521170129,
	498454011879264, 806515533049393, 1304969544928657, 2111485077978050,
	3416454622906707, 5527939700884757, 8944394323791464, 14472334024676221,
	23416728348467685, 37889062373143906, 61305790721611591, 99194853094755497,
	160500643816367088, 259695496911122585, 420196140727489673, 679891637638612258,
	1100087778366101931, 1779979416004714189, 2880067194370816120, 4660046610375530309,
	7540113804746346429,
}

// Fibonacci waits unit·F(n), F being the Fibonacci numbers 1, 1, 2, 3, 5,
// 8…. It panics if unit is negative.
func Fibonacci(unit time.Duration) Backoff {
	checkDuration("Fibonacci", "unit", unit)
	return &fib{unit}
}

type fib struct{ unit time.Duration }

func (f *fib) Delay(n int, _ time.Duration) (time.Duration, bool) {
	if n >= len(fibonacci) {
		if f.unit == 0 {
			return 0, true
		}
		return sat.Max, true
	}
	return sat.Mul(f.unit, fibonacci[max(n, 1)]), true
}

// Random waits a uniformly random time in [min, max) before every retry
// (min when they are equal). It panics if min is negative or max < min.
func Random(min, max time.Duration) Backoff {
	checkDuration("Random", "min", min)
	if max < min {
		panic(fmt.Sprintf("resilience: Random: max must not be less than min, got min %v, max %v", min, max))
	}
	return &random{min: min, max: max}
}

type random struct {
	min, max time.Duration
	src      source
}

func (r *random) Delay(int, time.Duration) (time.Duration, bool) {
	return r.min + time.Duration(r.src.int64n(int64(r.max-r.min))), true
}

func (r random) withRand(rr Rand) Backoff { r.src = source{rr}; return &r }

// Schedule waits the given times in turn and stops after the last: retry n
// waits waits[n-1]; an empty schedule makes no retry. It panics if a wait
// is negative.
func Schedule(waits ...time.Duration) Backoff {
	for i, w := range waits {
		if w < 0 {
			panic(fmt.Sprintf("resilience: Schedule: waits[%d] must not be negative, got %v", i, w))
		}
	}
	return schedule(append([]time.Duration(nil), waits...))
}

type schedule []time.Duration

func (s schedule) Delay(n int, _ time.Duration) (time.Duration, bool) {
	if n < 1 || n > len(s) {
		return 0, false
	}
	return s[n-1], true
}

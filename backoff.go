package resilience

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Backoff decides how long to wait before each retry. Implementations are
// stateless values, safe for concurrent use; a stateful walk over one is
// kept by the caller (see [Cursor]).
//
// The strategies of this package never return a negative wait and never
// overflow: for any n they saturate at their cap or at the largest
// time.Duration. Their Delay costs a few nanoseconds and allocates nothing.
type Backoff interface {
	// Delay is the wait before retry n (n >= 1), given the wait before the
	// previous retry (0 before the first). ok is false when no further retry
	// should be made.
	Delay(n int, prev time.Duration) (d time.Duration, ok bool)
}

// BackoffFunc adapts an ordinary function to a [Backoff].
type BackoffFunc func(n int, prev time.Duration) (time.Duration, bool)

// Delay calls f(n, prev).
func (f BackoffFunc) Delay(n int, prev time.Duration) (time.Duration, bool) { return f(n, prev) }

// Rand is the randomness a jittered backoff draws from. *rand.Rand of
// math/rand/v2 is one; it is not safe for concurrent use, so give a backoff
// that is shared between goroutines a source that is, or none: by default
// jitter comes from math/rand/v2's top-level functions, which are.
type Rand interface {
	// Uint64 returns a uniform 64-bit number.
	Uint64() uint64
}

// UseRand returns a copy of b whose jitter draws from r, so that tests see
// the same waits on every run. Every jittered layer of b made by this
// package is changed; other Backoff implementations are kept as they are.
// It panics if r is nil.
func UseRand(b Backoff, r Rand) Backoff {
	if r == nil {
		panic("resilience: UseRand: rand is nil")
	}
	return withRandOf(b, r)
}

// randomized is implemented by the package's backoffs that draw random
// numbers or wrap one that does.
type randomized interface {
	withRand(r Rand) Backoff
}

// source is the randomness of one backoff; nil means math/rand/v2.
type source struct{ r Rand }

func (s source) uint64() uint64 {
	if s.r == nil {
		return rand.Uint64()
	}
	return s.r.Uint64()
}

// int64n returns a uniform number in [0, n), by the multiply-high method
// (its bias, below n/2^64, is far beneath anything a wait can show).
func (s source) int64n(n int64) int64 {
	if n <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(s.uint64(), uint64(n))
	return int64(hi)
}

// below returns a uniform duration in [0, w), or 0 when w is 0.
func (s source) below(w uint64) time.Duration {
	hi, _ := bits.Mul64(s.uint64(), w)
	return time.Duration(hi)
}

// upTo returns a uniform duration in [0, d].
func (s source) upTo(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(s.uint64(), uint64(d)+1)
	return time.Duration(hi)
}

func withRandOf(b Backoff, r Rand) Backoff {
	if rb, ok := b.(randomized); ok {
		return rb.withRand(r)
	}
	return b
}

// fixed reports whether b is one of the package's backoffs whose wait
// depends on n alone, never on prev or on chance.
func fixed(b Backoff) bool {
	switch b.(type) {
	case *constant, *linear, *exponential, *fib, schedule, *table:
		return true
	}
	return false
}

// tabulate returns b as a [table] when its inner backoff is fixed, and b as
// it is otherwise.
func tabulate(b, inner Backoff) Backoff {
	if fixed(inner) {
		return tableOf(b)
	}
	return b
}

// table holds the first waits of a fixed backoff made of layers (a Cap or a
// MaxRetries over a fixed backoff), so that Delay reads an array instead of
// calling through one interface per layer.
type table struct {
	waits [64]time.Duration // waits[k] is the wait before retry k+1
	ok    uint64            // bit k: retry k+1 is made
	b     Backoff           // the backoff itself, for n outside the table
}

func tableOf(b Backoff) *table {
	t := &table{b: b}
	for k := range t.waits {
		d, ok := b.Delay(k+1, 0)
		t.waits[k] = d
		if ok {
			t.ok |= 1 << k
		}
	}
	return t
}

func (t *table) Delay(n int, prev time.Duration) (time.Duration, bool) {
	if k := uint(n - 1); k < uint(len(t.waits)) {
		return t.waits[k], t.ok>>k&1 == 1
	}
	return t.b.Delay(n, prev)
}

// Saturating arithmetic: no result is negative or beyond the largest Duration.

const maxDuration = time.Duration(math.MaxInt64)

// scale returns d·f, saturated to [0, maxDuration].
func scale(d time.Duration, f float64) time.Duration {
	x := float64(d) * f
	switch {
	case x != x || x >= float64(maxDuration): // NaN or too large
		return maxDuration
	case x <= 0:
		return 0
	}
	return time.Duration(x)
}

// add returns a+b, saturated at maxDuration; both are non-negative.
func add(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}

// times returns d·k, saturated at maxDuration; both are non-negative.
func times(d time.Duration, k int64) time.Duration {
	hi, lo := bits.Mul64(uint64(d), uint64(k))
	if hi != 0 || lo > uint64(maxDuration) {
		return maxDuration
	}
	return time.Duration(lo)
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

func checkDuration(fn, name string, d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("resilience: %s: %s must not be negative, got %v", fn, name, d))
	}
}

func checkFraction(fn string, f float64, max float64) {
	if !(f >= 0 && f <= max) { // also false for NaN
		panic(fmt.Sprintf("resilience: %s: jitter fraction must be in [0, %v], got %v", fn, max, f))
	}
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
	return add(l.initial, times(l.step, int64(max(n, 1)-1))), true
}

// Exponential waits initial·factor^(n-1) before retry n: with (100ms, 2),
// 100ms, 200ms, 400ms and so on. Without a [Cap] it grows until it saturates
// at the largest Duration. It panics if initial is negative or factor is
// not a finite number of at least 1.
func Exponential(initial time.Duration, factor float64) Backoff {
	checkDuration("Exponential", "initial", initial)
	if !(factor >= 1) || math.IsInf(factor, 0) {
		panic(fmt.Sprintf("resilience: Exponential: factor must be a finite number >= 1, got %v", factor))
	}
	e := &exponential{initial: initial, factor: factor}
	for i := range e.powers {
		e.powers[i] = pow(factor, i)
	}
	return e
}

// exponential keeps the first powers of its factor, so that Delay is a
// lookup for every retry a program is likely to make.
type exponential struct {
	initial time.Duration
	factor  float64
	powers  [64]float64
}

func (e *exponential) Delay(n int, _ time.Duration) (time.Duration, bool) {
	k := max(n, 1) - 1
	if k < len(e.powers) {
		return scale(e.initial, e.powers[k]), true
	}
	return scale(e.initial, pow(e.factor, k)), true
}

// fibonacci holds the Fibonacci numbers that fit in an int64.
var fibonacci = func() [93]int64 {
	var f [93]int64
	f[1], f[2] = 1, 1
	for i := 3; i < len(f); i++ {
		f[i] = f[i-1] + f[i-2]
	}
	return f
}()

// Fibonacci waits unit·F(n), F being the Fibonacci numbers 1, 1, 2, 3, 5, 8…:
// with 10ms, 10ms, 10ms, 20ms, 30ms, 50ms, 80ms, 130ms. It grows more gently
// than doubling. It panics if unit is negative.
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
		return maxDuration, true
	}
	return times(f.unit, fibonacci[max(n, 1)]), true
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
// waits waits[n-1], and there is no retry len(waits)+1. An empty schedule
// makes no retry. It panics if a wait is negative.
func Schedule(waits ...time.Duration) Backoff {
	for _, w := range waits {
		checkDuration("Schedule", "wait", w)
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

// Cap bounds every wait of b by max: a hard cap, whatever b returns. Put it
// outside a jitter decorator to bound the jittered wait, inside to jitter
// the capped one (as gRPC does). It panics if max is negative.
func Cap(b Backoff, max time.Duration) Backoff {
	checkDuration("Cap", "max", max)
	return tabulate(&capped{b: b, max: max}, b)
}

type capped struct {
	b   Backoff
	max time.Duration
}

func (c *capped) Delay(n int, prev time.Duration) (time.Duration, bool) {
	d, ok := c.b.Delay(n, prev)
	return min(d, c.max), ok
}

func (c capped) withRand(r Rand) Backoff { c.b = withRandOf(c.b, r); return &c }

// MaxRetries stops b after n retries: Delay reports ok false for retry n+1
// and later. It panics if n is negative.
func MaxRetries(b Backoff, n int) Backoff {
	if n < 0 {
		panic(fmt.Sprintf("resilience: MaxRetries: n must not be negative, got %d", n))
	}
	return tabulate(&limited{b: b, n: n}, b)
}

type limited struct {
	b Backoff
	n int
}

func (l *limited) Delay(n int, prev time.Duration) (time.Duration, bool) {
	if n > l.n {
		return 0, false
	}
	return l.b.Delay(n, prev)
}

func (l limited) withRand(r Rand) Backoff { l.b = withRandOf(l.b, r); return &l }

// FullJitter waits a uniformly random time in [0, d], d being b's wait: the
// strategy that, in AWS's study of contending clients, does the least work.
func FullJitter(b Backoff) Backoff { return newJitter(b, jitterFull, 0) }

// EqualJitter waits d/2 plus a uniformly random time in [0, d/2]: never
// less than half of b's wait.
func EqualJitter(b Backoff) Backoff { return newJitter(b, jitterEqual, 0) }

// SymmetricJitter waits d ± f·d, uniformly: with f = 0.2, between 80% and
// 120% of b's wait. It panics unless 0 <= f <= 1.
func SymmetricJitter(b Backoff, f float64) Backoff {
	checkFraction("SymmetricJitter", f, 1)
	return newJitter(b, jitterSymmetric, f)
}

// UpwardJitter waits a uniformly random time in [d, d + f·d): never less
// than b's wait, as Kubernetes' wait.Jitter does. f = 0 means no jitter
// (unlike Kubernetes, where a factor of 0 silently means 1). It panics if f
// is negative, NaN or infinite.
func UpwardJitter(b Backoff, f float64) Backoff {
	checkFraction("UpwardJitter", f, math.MaxFloat64)
	return newJitter(b, jitterUpward, f)
}

type jitterKind uint8

const (
	jitterFull jitterKind = iota
	jitterEqual
	jitterSymmetric
	jitterUpward
)

type jitter struct {
	b      Backoff
	kind   jitterKind
	f      float64
	src    source
	spread *spread // the bounds for b's first waits, when they depend on n alone
}

// spread holds, for each of the first waits of a fixed backoff, the bounds
// its jittered wait is drawn between, so that Delay is a lookup and a draw.
type spread struct {
	lo    [64]time.Duration
	width [64]uint64
	ok    uint64 // bit k: retry k+1 is made
}

func newJitter(b Backoff, kind jitterKind, f float64) *jitter {
	j := &jitter{b: b, kind: kind, f: f}
	if fixed(b) {
		j.spread = new(spread)
		for k := range j.spread.lo {
			if d, ok := b.Delay(k+1, 0); ok {
				j.spread.lo[k], j.spread.width[k] = j.bounds(d)
				j.spread.ok |= 1 << k
			}
		}
	}
	return j
}

// bounds returns where the jittered wait for a wait of d lies: lo plus a
// uniform whole number of nanoseconds in [0, width).
func (j *jitter) bounds(d time.Duration) (lo time.Duration, width uint64) {
	d = max(d, 0)
	switch j.kind {
	case jitterFull: // [0, d]
		return 0, uint64(d) + 1
	case jitterEqual: // [d - d/2, d]
		half := d / 2
		return d - half, uint64(half) + 1
	case jitterSymmetric: // [d - f·d, d + f·d)
		lo = scale(d, 1-j.f)
		return lo, uint64(scale(d, 1+j.f) - lo)
	default: // [d, d + f·d)
		return d, uint64(scale(d, 1+j.f) - d)
	}
}

func (j *jitter) Delay(n int, prev time.Duration) (time.Duration, bool) {
	if s := j.spread; s != nil {
		if k := uint(n - 1); k < uint(len(s.lo)) {
			if s.ok>>k&1 == 0 {
				return 0, false
			}
			return s.lo[k] + j.src.below(s.width[k]), true
		}
	}
	d, ok := j.b.Delay(n, prev)
	if !ok {
		return 0, false
	}
	lo, width := j.bounds(d)
	return lo + j.src.below(width), true
}

func (j jitter) withRand(r Rand) Backoff {
	j.b = withRandOf(j.b, r)
	j.src = source{r}
	return &j
}

// DecorrelatedJitter is AWS's "decorrelated jitter": each wait is uniform in
// [base, 3·prev] (prev being the previous wait, base before the first),
// capped at max. Waits wander up and down rather than only grow. It panics
// if base is negative or max < base.
func DecorrelatedJitter(base, max time.Duration) Backoff {
	checkDuration("DecorrelatedJitter", "base", base)
	if max < base {
		panic(fmt.Sprintf("resilience: DecorrelatedJitter: max must not be less than base, got base %v, max %v", base, max))
	}
	return &decorrelated{base: base, max: max}
}

type decorrelated struct {
	base, max time.Duration
	src       source
}

func (d *decorrelated) Delay(_ int, prev time.Duration) (time.Duration, bool) {
	hi := times(max(prev, d.base), 3)
	w := d.base + d.src.upTo(hi-d.base)
	return min(w, d.max), true
}

func (d decorrelated) withRand(r Rand) Backoff { d.src = source{r}; return &d }

// SmoothJitter is Polly's "decorrelated jitter V2": waits whose median
// starts at median and doubles with each retry, spread smoothly so that
// they neither pile up at a floor or a cap nor leave gaps. Retry n waits
// k·median·(g(t) − g(t−1)) with t = n−1+u, u uniform in [0, 1),
// g(t) = 2^t·tanh(√(4t)) (0 for t ≤ 0) and k = 1/1.4. Unlike Polly's, it
// keeps no state between retries: the previous point of the curve is taken
// one step back with the same draw. Wrap it in [Cap] to bound it. It panics
// if median is negative.
func SmoothJitter(median time.Duration) Backoff {
	checkDuration("SmoothJitter", "median", median)
	return &smooth{median: median}
}

type smooth struct {
	median time.Duration
	src    source
}

func smoothCurve(t float64) float64 {
	if t <= 0 {
		return 0
	}
	return math.Exp2(t) * math.Tanh(math.Sqrt(4*t))
}

// smoothSteps holds g(t) − g(t−1), divided by 1.4, at smoothStepsPerUnit
// points a unit of t, for t below smoothSpan: Delay interpolates between two
// of them instead of computing exponentials and a hyperbolic tangent. The
// curve is smooth, and the error stays below 1e-4 of the wait.
const (
	smoothStepBits     = 6
	smoothStepsPerUnit = 1 << smoothStepBits
	smoothSpan         = 64 // 2^64 ns is far past any duration
)

var smoothSteps = func() []float64 {
	steps := make([]float64, smoothSpan*smoothStepsPerUnit+1)
	for i := range steps {
		t := float64(i) / smoothStepsPerUnit
		steps[i] = (smoothCurve(t) - smoothCurve(t-1)) / 1.4
	}
	return steps
}()

func (s *smooth) Delay(n int, _ time.Duration) (time.Duration, bool) {
	k := max(n, 1) - 1
	if k >= smoothSpan {
		if s.median == 0 {
			return 0, true
		}
		return maxDuration, true
	}
	// t = k + u, u uniform in [0, 1): the draw's top bits pick the step
	// within the unit, the next 53 where t falls between two steps.
	r := s.src.uint64()
	i := k*smoothStepsPerUnit + int(r>>(64-smoothStepBits))
	between := float64(r<<smoothStepBits>>11) / (1 << 53)
	f := smoothSteps[i] + (smoothSteps[i+1]-smoothSteps[i])*between
	return scale(s.median, f), true
}

func (s smooth) withRand(r Rand) Backoff { s.src = source{r}; return &s }

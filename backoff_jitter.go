package resilience

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// FullJitter waits a uniformly random time in [0, d], d being b's wait. It
// panics if b is nil.
func FullJitter(b Backoff) Backoff { return newJitter("FullJitter", b, jitterFull, 0) }

// EqualJitter waits d/2 plus a uniformly random time in [0, d/2]: never
// less than half of b's wait. It panics if b is nil.
func EqualJitter(b Backoff) Backoff { return newJitter("EqualJitter", b, jitterEqual, 0) }

// SymmetricJitter waits d ± f·d, uniformly, d being b's wait: with f = 0.2,
// between 80% and 120% of it. It panics if b is nil or unless 0 <= f <= 1.
func SymmetricJitter(b Backoff, f float64) Backoff {
	if !(f >= 0 && f <= 1) { // also true for NaN
		panic(fmt.Sprintf("resilience: SymmetricJitter: jitter fraction must be in [0, 1], got %v", f))
	}
	return newJitter("SymmetricJitter", b, jitterSymmetric, f)
}

// UpwardJitter waits a uniformly random time in [d, d + f·d), d being b's
// wait, as Kubernetes' wait.Jitter does, but f = 0 means no jitter. It
// panics if b is nil or f is negative, NaN or infinite.
func UpwardJitter(b Backoff, f float64) Backoff {
	if !(f >= 0) || math.IsInf(f, 0) {
		panic(fmt.Sprintf("resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got %v", f))
	}
	return newJitter("UpwardJitter", b, jitterUpward, f)
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

// newJitter makes a jitter decorator; when b is fixed it computes the
// spread of b's first waits now, once, rather than on every Delay.
func newJitter(fn string, b Backoff, kind jitterKind, f float64) *jitter {
	checkBackoff(fn, b)
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
// uniform whole number of nanoseconds in [0, width). The spread f·d is
// computed once and added to or taken from d in integers, so that d itself
// is never rounded (float64 holds only 53 bits) and lo + width − 1 never
// passes the largest Duration.
func (j *jitter) bounds(d time.Duration) (lo time.Duration, width uint64) {
	d = max(d, 0)
	switch j.kind {
	case jitterFull: // [0, d]
		return 0, uint64(d) + 1
	case jitterEqual: // [d - d/2, d]
		half := d / 2
		return d - half, uint64(half) + 1
	case jitterSymmetric: // [d - f·d, d + f·d)
		s := min(sat.Scale(d, j.f), d)
		return d - s, uint64(s) + uint64(min(s, sat.Max-d))
	default: // [d, d + f·d)
		return d, uint64(min(sat.Scale(d, j.f), sat.Max-d))
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
// capped at max. It panics if base is negative or max < base.
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
	hi := sat.Mul(max(prev, d.base), 3)
	w := d.base + d.src.upTo(hi-d.base)
	return min(w, d.max), true
}

func (d decorrelated) withRand(r Rand) Backoff { d.src = source{r}; return &d }

// SmoothJitter is Polly's "decorrelated jitter V2": waits whose median
// starts at median and doubles with each retry, spread so that they neither
// pile up at a floor or a cap nor leave gaps (docs/retry.md gives the
// curve). Wrap it in [Cap] to bound it. It panics if median is negative.
func SmoothJitter(median time.Duration) Backoff {
	checkDuration("SmoothJitter", "median", median)
	return &smooth{median: median, steps: smoothStepTable()}
}

type smooth struct {
	median time.Duration
	steps  *smoothSteps
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

type smoothSteps [smoothSpan*smoothStepsPerUnit + 1]float64

// The table is computed by the first SmoothJitter made, not when the
// package starts: a program that never uses it never pays its 32 KB.
var (
	smoothOnce  sync.Once
	smoothTable *smoothSteps
)

func smoothStepTable() *smoothSteps {
	smoothOnce.Do(func() {
		steps := new(smoothSteps)
		for i := range steps {
			t := float64(i) / smoothStepsPerUnit
			steps[i] = (smoothCurve(t) - smoothCurve(t-1)) / 1.4
		}
		smoothTable = steps
	})
	return smoothTable
}

func (s *smooth) Delay(n int, _ time.Duration) (time.Duration, bool) {
	k := max(n, 1) - 1
	if k >= smoothSpan {
		if s.median == 0 {
			return 0, true
		}
		return sat.Max, true
	}
	// t = k + u, u uniform in [0, 1): the draw's top bits pick the step
	// within the unit, the next 53 where t falls between two steps.
	r := s.src.uint64()
	i := k*smoothStepsPerUnit + int(r>>(64-smoothStepBits))
	between := float64(r<<smoothStepBits>>11) / (1 << 53)
	f := s.steps[i] + (s.steps[i+1]-s.steps[i])*between
	return sat.Scale(s.median, f), true
}

func (s smooth) withRand(r Rand) Backoff { s.src = source{r}; return &s }

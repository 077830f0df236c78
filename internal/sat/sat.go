// Package sat is saturating arithmetic on durations: no result is
// negative or beyond the largest Duration, and nothing wraps.
package sat

import (
	"math"
	"math/bits"
	"time"
)

// Max is the largest Duration, where every result saturates.
const Max = time.Duration(math.MaxInt64)

// Scale returns d·f truncated to whole nanoseconds, saturated to [0,
// Max]; d and f are not negative. 0 times anything, +Inf included,
// is 0. Past 2^53 ns float64 rounds d: callers that must return d itself
// for a factor of 1 do so before calling.
func Scale(d time.Duration, f float64) time.Duration {
	x := float64(d) * f
	switch {
	case x >= float64(Max):
		return Max
	case x > 0:
		return time.Duration(x)
	}
	return 0 // also for NaN, 0·∞
}

// Add returns a+b, saturated at Max; both are non-negative.
func Add(a, b time.Duration) time.Duration {
	if a > Max-b {
		return Max
	}
	return a + b
}

// Mul returns d·k, saturated at Max; both are non-negative.
func Mul(d time.Duration, k int64) time.Duration {
	hi, lo := bits.Mul64(uint64(d), uint64(k))
	if hi != 0 || lo > uint64(Max) {
		return Max
	}
	return time.Duration(lo)
}

// Shift returns d·2^k, saturated at Max, in whole integers.
func Shift(d time.Duration, k int) time.Duration {
	switch {
	case d == 0:
		return 0
	case k >= 63:
		return Max
	}
	return Mul(d, 1<<k)
}

// CeilDiv returns d/unit rounded up, for a hint in whole seconds or
// milliseconds; 0 for d ≤ 0. It never overflows: the quotient of the
// largest Duration is the largest result.
func CeilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	q := int64(d / unit)
	if d%unit != 0 {
		q++
	}
	return q
}

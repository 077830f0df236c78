package resilience

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Rand is a source of randomness, such as a *rand.Rand of math/rand/v2,
// for the jitter of a backoff ([UseRand]), the draws of an
// [AdaptiveThrottler] ([WithThrottleRand]) and those of a chaos policy
// ([WithChaosRand]). By default they draw from math/rand/v2's top-level
// functions, which are safe for concurrent use.
//
// A Rand must be safe for concurrent use when two goroutines may draw
// from it at once. A backoff and a throttle draw in the goroutine of each
// call, so a shared one draws from several at once; a chaos policy draws
// under a lock of its own, one call at a time. A *rand.Rand, which is not
// safe for concurrent use, thus suits one chaos policy, or a backoff or a
// throttle that one goroutine uses.
type Rand interface {
	// Uint64 returns a uniform 64-bit number.
	Uint64() uint64
}

// UseRand returns a copy of b whose jittered layers made by this package
// draw from r, so that tests see the same waits on every run. It panics if
// b or r is nil.
func UseRand(b Backoff, r Rand) Backoff {
	checkBackoff("UseRand", b)
	if r == nil {
		panic("resilience: UseRand: rand is nil")
	}
	if isNil(r) {
		panic(fmt.Sprintf("resilience: UseRand: rand is a nil %T", r))
	}
	return withRandOf(b, r)
}

// randomized is implemented by the package's backoffs that draw random
// numbers or wrap one that does.
type randomized interface {
	withRand(r Rand) Backoff
}

func withRandOf(b Backoff, r Rand) Backoff {
	if rb, ok := b.(randomized); ok {
		return rb.withRand(r)
	}
	return b
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

package resilience

import (
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"
)

// Rand is a source of randomness, such as a *rand.Rand of math/rand/v2 with
// a fixed seed, so that a test sees the same draws on every run: the jitter
// of a backoff, a throttle's refusals, a chaos policy's picks, a breaker's
// spread of its retry hints. Components take one with [WithRand], a
// [Backoff] used on its own with [UseRand]. By default they draw from
// math/rand/v2's top-level functions.
//
// The package draws from a Rand one number at a time, under a lock that
// comes with the WithRand option or the UseRand copy, so a Rand need not be
// safe for concurrent use (a *rand.Rand is not), unless something else
// draws from it too: then it must be.
type Rand interface {
	// Uint64 returns a uniform 64-bit number.
	Uint64() uint64
}

// UseRand returns a copy of b whose jittered layers made by this package
// draw from r (see [Rand]), for a backoff used on its own; a policy or
// [Cursor] takes [WithRand] instead. It panics if b or r is nil.
func UseRand(b Backoff, r Rand) Backoff {
	checkBackoff("UseRand", b)
	if isNil(r) {
		panic("resilience: UseRand: rand is " + nilName(r))
	}
	return withRandOf(b, &lockedRand{r: r})
}

// WithRand makes a component draw its random numbers from r (see [Rand]):
// a [Retry]'s or [Cursor]'s backoff jitter, a [Breaker]'s spread of its
// retry hints, an [AdaptiveThrottler]'s refusals, a chaos policy's picks.
// Components given the same WithRand option draw one at a time from r. By
// default they draw from math/rand/v2. It panics if r is nil.
func WithRand(r Rand) Option {
	if isNil(r) {
		panic("resilience: WithRand: rand is " + nilName(r))
	}
	lr := &lockedRand{r: r}
	return Option{set: func(c *common) { c.rand = lr }}
}

// lockedRand draws from r one number at a time.
type lockedRand struct {
	mu sync.Mutex
	r  Rand
}

func (l *lockedRand) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Uint64()
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

// Package backoff offers the API of github.com/jpillora/backoff on top of
// resilience.Jpillora, so that that library's own tests check the preset.
// It is written for this module's tests, not for use.
package backoff

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

// Backoff is a counter of attempts over resilience.Jpillora. Zero or
// negative fields take the preset's defaults (Min 100ms, Max 10s, Factor
// 2). Duration, Reset and Attempt are safe for concurrent use.
type Backoff struct {
	// Factor multiplies the wait from one attempt to the next.
	Factor float64
	// Jitter draws each wait at random between Min and the exponential wait.
	Jitter bool
	// Min and Max bound every wait.
	Min, Max time.Duration

	n atomic.Uint64 // attempts counted by Duration
}

// Duration returns the wait for the current attempt and counts it.
func (b *Backoff) Duration() time.Duration {
	return b.ForAttempt(float64(b.n.Add(1) - 1))
}

// ForAttempt returns the wait for attempt (0 for the first), rounded down
// to a whole attempt. It is safe for concurrent use.
func (b *Backoff) ForAttempt(attempt float64) time.Duration {
	factor := b.Factor
	if factor <= 0 {
		factor = 0 // the preset's default, 2
	}
	// The preset makes retry n wait min·factor^(n-1): attempt 0 is retry 1.
	n := 1
	if attempt > 0 {
		n = int(min(attempt, math.MaxInt32)) + 1
	}
	d, _ := resilience.Jpillora(max(b.Min, 0), max(b.Max, 0), factor, b.Jitter).Delay(n, 0)
	return d
}

// Reset sets the attempt counter back to zero.
func (b *Backoff) Reset() { b.n.Store(0) }

// Attempt returns the attempt counter.
func (b *Backoff) Attempt() float64 { return float64(b.n.Load()) }

// Copy returns a Backoff with b's settings and a counter at zero.
func (b *Backoff) Copy() *Backoff {
	return &Backoff{Factor: b.Factor, Jitter: b.Jitter, Min: b.Min, Max: b.Max}
}

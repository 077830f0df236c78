// Package window counts the outcomes of recent calls, for a breaker's
// failure rate: a [Count] over the last n calls, lock-free, and a [Time]
// over the last span of time, in rolling buckets.
package window

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// MaxCalls is the largest count-based window: its ring holds
// one bit per outcome, 125 KB at most, made afresh each time the breaker
// closes.
const MaxCalls = 1_000_000

// Count holds the outcomes of the last n calls, one bit each (set: a
// failure), and is written without a lock: each outcome takes the next
// index with one atomic add and flips its bit atomically. A breaker makes
// a new ring each time it closes, so an outcome that arrives late lands in
// a ring nobody reads any more.
//
// failures is the number of set bits once no record is in progress; while
// records race, the counts are those of the last n calls give or take the
// ones in flight.
type Count struct {
	n        uint64
	inv      uint64        // ⌊(2^64−1)/n⌋: divides by n with a multiplication
	next     atomic.Uint64 // outcomes recorded since the ring was made
	failures atomic.Int64
	bits     []atomic.Uint64
}

func NewCount(n int) *Count {
	return &Count{n: uint64(n), inv: math.MaxUint64 / uint64(n), bits: make([]atomic.Uint64, (n+63)/64)}
}

// slot returns i mod n. The quotient by the reciprocal is floor(i/n) or
// one less, so the remainder needs one correction at most; a hardware
// division would cost more than the rest of a success.
func (r *Count) slot(i uint64) uint64 {
	q, _ := bits.Mul64(i, r.inv)
	s := i - q*r.n
	if s >= r.n {
		s -= r.n
	}
	return s
}

// record stores an outcome and returns its index, from 0.
func (r *Count) Record(failed bool) uint64 {
	i := r.next.Add(1) - 1
	slot := r.slot(i)
	w, bit := &r.bits[slot/64], uint64(1)<<(slot%64)
	if failed {
		if w.Or(bit)&bit == 0 {
			r.failures.Add(1)
		}
	} else if w.Load()&bit != 0 { // most successes replace a success: no write
		if w.And(^bit)&bit != 0 {
			r.failures.Add(-1)
		}
	}
	return i
}

// counts returns how many outcomes the ring holds and how many failed.
func (r *Count) Counts() (calls, failures int) {
	return int(min(r.next.Load(), r.n)), int(max(r.failures.Load(), 0))
}

// Buckets is how many buckets a Time rolls through.
const Buckets = 10

// Time counts outcomes over the last span of time in rolling
// buckets whose expired counts drop out. Times are offsets on the
// breaker's own time line, negative when an injected clock went back
// before the breaker was made. Guarded by its breaker's mutex.
type Time struct {
	width   time.Duration
	buckets [Buckets]struct {
		slot            int64 // the bucket's start, in widths since the breaker's start
		calls, failures int
	}
}

func NewTime(span time.Duration) *Time {
	return &Time{width: span / Buckets}
}

// slot returns the bucket number of at, rounding down.
func (w *Time) slot(at time.Duration) int64 {
	s := int64(at / w.width)
	if at%w.width < 0 {
		s--
	}
	return s
}

func (w *Time) Record(at time.Duration, failed bool) {
	s := w.slot(at)
	b := &w.buckets[(s%Buckets+Buckets)%Buckets] // never negative
	if b.slot != s {
		b.slot, b.calls, b.failures = s, 0, 0
	}
	b.calls++
	if failed {
		b.failures++
	}
}

// counts returns the outcomes and failures in the window at at. Buckets
// ahead of at (the clock went back) do not count.
func (w *Time) Counts(at time.Duration) (calls, failures int) {
	s := w.slot(at)
	for _, b := range w.buckets {
		if b.slot <= s && uint64(s)-uint64(b.slot) < Buckets {
			calls += b.calls
			failures += b.failures
		}
	}
	return calls, failures
}

func (w *Time) Reset() { clear(w.buckets[:]) }

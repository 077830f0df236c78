package resilience

import "time"

// windowBuckets is how many buckets a time-based window rolls through.
const windowBuckets = 10

// failureWindow counts outcomes over the last n calls (a ring) or over the
// last span of time (rolling buckets, whose expired counts drop out).
// Guarded by its breaker's mutex.
type failureWindow struct {
	// count-based
	ring     []bool
	next     int
	filled   int
	failures int

	// time-based
	span    time.Duration
	width   time.Duration
	buckets [windowBuckets]struct {
		start           int64 // bucket start, in widths since the Unix epoch
		calls, failures int
	}
}

func newFailureWindow(calls int, span time.Duration) *failureWindow {
	if span > 0 {
		return &failureWindow{span: span, width: span / windowBuckets}
	}
	return &failureWindow{ring: make([]bool, calls)}
}

func (w *failureWindow) record(now time.Time, failed bool) {
	if w.ring != nil {
		if w.filled == len(w.ring) {
			if w.ring[w.next] {
				w.failures--
			}
		} else {
			w.filled++
		}
		w.ring[w.next] = failed
		if failed {
			w.failures++
		}
		w.next = (w.next + 1) % len(w.ring)
		return
	}
	slot := now.UnixNano() / int64(w.width)
	b := &w.buckets[slot%windowBuckets]
	if b.start != slot {
		b.start, b.calls, b.failures = slot, 0, 0
	}
	b.calls++
	if failed {
		b.failures++
	}
}

// counts returns the outcomes and failures in the window at now.
func (w *failureWindow) counts(now time.Time) (calls, failures int) {
	if w.ring != nil {
		return w.filled, w.failures
	}
	slot := now.UnixNano() / int64(w.width)
	for _, b := range w.buckets {
		if b.start > slot-windowBuckets && b.start <= slot {
			calls += b.calls
			failures += b.failures
		}
	}
	return calls, failures
}

func (w *failureWindow) reset() {
	if w.ring != nil {
		clear(w.ring)
		w.next, w.filled, w.failures = 0, 0, 0
		return
	}
	w.buckets = [windowBuckets]struct {
		start           int64
		calls, failures int
	}{}
}

package resilience

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Cap bounds every wait of b by max. Put it outside a jitter decorator to
// bound the jittered wait, inside to jitter the capped one. It panics if b
// is nil or max is negative.
func Cap(b Backoff, max time.Duration) Backoff {
	checkBackoff("Cap", b)
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

// MaxRetries stops b after n retries; with n = 0 no retry is made. It
// panics if b is nil or n is negative.
func MaxRetries(b Backoff, n int) Backoff {
	checkBackoff("MaxRetries", b)
	if n < 0 {
		panic(fmt.Sprintf("resilience: MaxRetries: n must not be negative, got %d", n))
	}
	return tabulate(&limited{b: b, n: n}, b)
}

// limitedTo is MaxRetries for the presets, whose arguments are checked
// under their own names.
func limitedTo(b Backoff, n int) Backoff { return tabulate(&limited{b: b, n: n}, b) }

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

// HoldLast keeps b going once it stops: every retry after b's last one
// waits as that last retry did (a jittered wait drawn afresh), for ever. If
// b makes no retry at all, neither does HoldLast(b). b must stop for good
// once it stops, at a retry that depends on n alone, as every backoff of
// this package does. It panics if b is nil.
func HoldLast(b Backoff) Backoff {
	checkBackoff("HoldLast", b)
	return tabulate(&holdLast{b: b}, b)
}

type holdLast struct {
	b    Backoff
	last atomic.Int64 // b's last retry once found; -1 when b makes none
}

func (h *holdLast) Delay(n int, prev time.Duration) (time.Duration, bool) {
	if d, ok := h.b.Delay(n, prev); ok || n < 1 {
		return d, ok
	}
	m := h.lastRetry(n)
	if m < 1 {
		return 0, false
	}
	return h.b.Delay(m, prev)
}

// lastRetry returns the last retry b makes, knowing that it makes no retry
// n, or 0 when it makes none at all.
func (h *holdLast) lastRetry(n int) int {
	if m := h.last.Load(); m != 0 {
		return int(max(m, 0))
	}
	lo, hi := 0, n // b makes retry lo (or lo is 0) and not retry hi
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, ok := h.b.Delay(mid, 0); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		h.last.Store(-1)
	} else {
		h.last.Store(int64(lo))
	}
	return lo
}

func (h *holdLast) withRand(r Rand) Backoff { return &holdLast{b: withRandOf(h.b, r)} }

package resilience

import "time"

// fixed reports whether b is one of the package's backoffs whose wait
// depends on n alone, never on prev or on chance.
func fixed(b Backoff) bool {
	switch v := b.(type) {
	case *constant, *linear, *exponential, *fib, schedule, *doubling, *table:
		return true
	case KubernetesBackoff:
		return v.Jitter == 0
	case *holdLast:
		return fixed(v.b)
	}
	return false
}

// tabulate returns b as a [table] when its inner backoff is fixed, and b as
// it is otherwise. The table is built here, when the backoff is made, never
// when the package starts.
func tabulate(b, inner Backoff) Backoff {
	if fixed(inner) {
		return tableOf(b)
	}
	return b
}

// table holds the first waits of a fixed backoff made of layers (a Cap, a
// MaxRetries or a HoldLast over a fixed backoff), so that Delay reads an
// array instead of calling through one interface per layer.
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

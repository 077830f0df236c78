package resilience

import (
	"context"
	"sync/atomic"
)

// countingObserver is the internal tests' observer: it counts events by
// kind; outcomes makes it ask for EventCallEnded.
type countingObserver struct {
	n        [32]atomic.Int64
	outcomes bool
}

func (o *countingObserver) Observe(_ context.Context, e Event) { o.n[e.Kind].Add(1) }
func (o *countingObserver) ObserveOutcomes() bool              { return o.outcomes }

// total returns the events counted.
func (o *countingObserver) total() int64 {
	var t int64
	for i := range o.n {
		t += o.n[i].Load()
	}
	return t
}

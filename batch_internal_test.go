package resilience

import (
	"context"
	"testing"
)

// TestBatcherObservedAllocatesNothingMore: an observer, even one that
// wants every outcome, adds no allocation to a Do; an item allocates
// nothing with or without one once the pools are warm.
func TestBatcherObservedAllocatesNothingMore(t *testing.T) {
	ctx := context.Background()
	echo := func(_ context.Context, items []int) ([]int, error) { return items, nil }
	allocs := func(opts ...BatchOption) float64 {
		b := NewBatcher(echo, append(opts, WithBatchMaxWait(0))...)
		defer b.Close(ctx)
		return testing.AllocsPerRun(1000, func() { _, _ = b.Do(ctx, 1) })
	}
	plain := allocs()
	o := counter{Outcomes: true}
	observed := allocs(WithObserver(&o))
	if observed > plain {
		t.Errorf("Do allocates %v times with an observer, %v without", observed, plain)
	}
	if o.Total() == 0 {
		t.Error("the observer saw nothing")
	}
	t.Logf("allocations per Do of a lone caller: %v unobserved, %v observed", plain, observed)
}

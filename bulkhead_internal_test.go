package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBulkheadAllocatesNothing(t *testing.T) {
	b := NewBulkhead(4)
	ctx := context.Background()
	p := Guarded[int](b)
	c := Compose(passThrough[int]{}, Guarded[int](b))
	tests := []struct {
		name string
		f    func()
	}{
		{"Guarded", func() { _, _ = p.Execute(ctx, okFunc) }},
		{"Compose", func() { _, _ = c.Execute(ctx, okFunc) }},
		{"Enter", func() {
			done, _ := b.Enter(ctx)
			done(nil)
		}},
	}
	// Observed: an observer that wants every outcome allocates nothing
	// either, and neither does a refusal.
	o := counter{Outcomes: true}
	ob := NewBulkhead(1, WithObserver(&o))
	op := Guarded[int](ob)
	full := NewBulkhead(1, WithObserver(&o))
	full.TryAcquire()
	fp := Guarded[int](full)
	tests = append(tests, []struct {
		name string
		f    func()
	}{
		{"Guarded observed", func() { _, _ = op.Execute(ctx, okFunc) }},
		{"refused observed", func() { _ = full.Acquire(ctx) }},
		{"Guarded refused observed", func() { _, _ = fp.Execute(ctx, okFunc) }},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tc.name, allocs)
			}
		})
	}
}

// TestBulkheadRaces drives the bulkhead's slow paths through the moments
// where another goroutine changes the state, with the hook that stops each
// path there.
func TestBulkheadRaces(t *testing.T) {
	t.Run("a slot freed before Acquire queues is taken at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewBulkhead(1, WithBulkheadWait(time.Hour))
			require.True(t, b.TryAcquire())
			b.hook = func(s bulkheadStep) {
				if s == stepFull {
					b.Release() // the holder leaves just after TryAcquire failed
				}
			}
			start := time.Now()
			require.NoError(t, b.Acquire(context.Background()))
			assert.Zero(t, time.Since(start), "Acquire did not wait for a slot that was free")
			assert.Equal(t, 1, b.InFlight())
			assert.Zero(t, b.Waiting())
		})
	})
	t.Run("a slot handed over just as the context ends is kept", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewBulkhead(1, WithBulkheadWait(time.Hour))
			require.True(t, b.TryAcquire())
			b.hook = func(s bulkheadStep) {
				if s == stepWaitEnded {
					b.Release() // the holder hands its slot to the waiter now
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- b.Acquire(ctx) }()
			synctest.Wait()
			require.Equal(t, 1, b.Waiting())
			cancel()
			require.NoError(t, <-errc, "the waiter holds the slot it was handed")
			assert.Equal(t, 1, b.InFlight())
			assert.Zero(t, b.Waiting())
			b.Release()
			assert.Zero(t, b.InFlight(), "no slot is lost")
			assert.True(t, b.TryAcquire())
		})
	})
	t.Run("a slot released after every waiter left is freed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewBulkhead(1, WithBulkheadWait(time.Hour))
			require.True(t, b.TryAcquire())
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- b.Acquire(ctx) }()
			synctest.Wait()
			require.Equal(t, 1, b.Waiting())
			b.hook = func(s bulkheadStep) {
				if s == stepHandOver {
					cancel() // the waiter leaves after Release saw it
					synctest.Wait()
				}
			}
			b.Release()
			assert.ErrorIs(t, <-errc, context.Canceled)
			assert.Zero(t, b.InFlight(), "the slot is freed, not handed to nobody")
			assert.Zero(t, b.Waiting())
			assert.True(t, b.TryAcquire())
		})
	})
}

package resilience_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

func TestBulkheadAdmission(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		opts    []resilience.BulkheadOption
		held    int // slots taken before the call
		wantErr error
	}{
		{"free slot", 2, nil, 1, nil},
		{"full, no wait", 2, nil, 2, resilience.ErrBulkheadFull},
		{"full, queue of zero", 1, []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Second), resilience.WithBulkheadQueue(0)}, 1, resilience.ErrBulkheadFull},
		{"full, wait runs out", 1, []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Second)}, 1, resilience.ErrBulkheadFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := resilience.NewBulkhead(tc.limit, tc.opts...)
				for range tc.held {
					require.True(t, b.TryAcquire())
				}
				err := b.Acquire(context.Background())
				if tc.wantErr != nil {
					assert.ErrorIs(t, err, tc.wantErr)
					assert.Equal(t, tc.held, b.InUse())
				} else {
					require.NoError(t, err)
					assert.Equal(t, tc.held+1, b.InUse())
				}
				assert.Zero(t, b.Waiting())
			})
		})
	}
}

// TestBulkheadZeroWaitNeverFailsWithFreeSlot is the test go-resiliency's
// semaphore would have failed: with a timeout of 0 it refused about half of
// the acquires while tickets were free.
func TestBulkheadZeroWaitNeverFailsWithFreeSlot(t *testing.T) {
	b := resilience.NewBulkhead(4, resilience.WithBulkheadWait(0))
	for i := range 10000 {
		require.NoError(t, b.Acquire(context.Background()), "acquire %d", i)
		b.Release()
	}
}

func TestBulkheadWaitIsServedFirstComeFirstServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Hour))
		require.True(t, b.TryAcquire())
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.Acquire(context.Background()); err != nil {
					t.Errorf("Acquire() = %v, want nil", err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				b.Release()
			}()
			synctest.Wait() // waiter i is queued before waiter i+1 arrives
			assert.Equal(t, i+1, b.Waiting())
		}
		// A newcomer may not jump the queue while others wait.
		assert.False(t, b.TryAcquire(), "TryAcquire took a slot ahead of the waiters")
		b.Release()
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
		assert.Zero(t, b.InUse())
		assert.Zero(t, b.Waiting())
	})
}

func TestBulkheadWaitEnds(t *testing.T) {
	errCause := errors.New("caller gave up")
	tests := []struct {
		name    string
		end     func(cancel context.CancelCauseFunc, mock *clock.Mock)
		wantErr error
	}{
		{"wait runs out", func(_ context.CancelCauseFunc, mock *clock.Mock) { mock.Add(time.Second) }, resilience.ErrBulkheadFull},
		{"ctx ends", func(cancel context.CancelCauseFunc, _ *clock.Mock) { cancel(errCause) }, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := clock.NewMock()
				b := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Second), resilience.WithClock(mock))
				require.True(t, b.TryAcquire())
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				errc := make(chan error, 1)
				go func() { errc <- b.Acquire(ctx) }()
				synctest.Wait()
				assert.Equal(t, 1, b.Waiting())
				tc.end(cancel, mock)
				assert.ErrorIs(t, <-errc, tc.wantErr)
				assert.Zero(t, b.Waiting(), "a waiter that gives up leaves the queue")
				b.Release()
				assert.Zero(t, b.InUse(), "no slot is lost")
				assert.True(t, b.TryAcquire())
			})
		})
	}
}

func TestBulkheadQueueBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Minute), resilience.WithBulkheadQueue(2))
		require.True(t, b.TryAcquire())
		errc := make(chan error, 2)
		for range 2 {
			go func() { errc <- b.Acquire(context.Background()) }()
		}
		synctest.Wait()
		assert.ErrorIs(t, b.Acquire(context.Background()), resilience.ErrBulkheadFull, "the third waiter finds the queue full")
		b.Release()
		require.NoError(t, <-errc)
		b.Release()
		require.NoError(t, <-errc)
		b.Release()
		assert.Zero(t, b.InUse())
	})
}

func TestBulkheadGuardedPanicFreesSlot(t *testing.T) {
	b := resilience.NewBulkhead(1)
	p := resilience.Guarded[int](b)
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		_, _ = resilience.Do(context.Background(), p, func(context.Context) (int, error) { panic("boom") })
	}()
	assert.Zero(t, b.InUse(), "the panicking call's slot is freed")
	v, err := resilience.Do(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, v)
}

func TestBulkheadEnter(t *testing.T) {
	b := resilience.NewBulkhead(1)
	done, err := b.Enter(context.Background())
	require.NoError(t, err)
	_, err = b.Enter(context.Background())
	assert.ErrorIs(t, err, resilience.ErrBulkheadFull)
	done(nil)
	assert.Zero(t, b.InUse())
}

// TestBulkheadStress runs many goroutines through a small bulkhead that lets
// callers wait: concurrency never exceeds the limit, and every call is
// answered exactly once.
func TestBulkheadStress(t *testing.T) {
	goroutines, calls := 1000, 1000
	if raceEnabled || testing.Short() {
		calls = 200 // the race detector makes each call many times dearer
	}
	const limit = 8
	b := resilience.NewBulkhead(limit, resilience.WithBulkheadWait(time.Hour))
	p := resilience.Guarded[int](b)
	var inside, peak, answered, ran atomic.Int64
	fn := func(context.Context) (int, error) {
		n := inside.Add(1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		ran.Add(1)
		inside.Add(-1)
		return 1, nil
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				if _, err := resilience.Do(context.Background(), p, fn); err != nil {
					t.Errorf("Do() = %v, want nil", err)
				}
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	total := int64(goroutines * calls)
	assert.Equal(t, total, answered.Load(), "answers")
	assert.Equal(t, total, ran.Load(), "calls run")
	assert.LessOrEqual(t, peak.Load(), int64(limit), "peak concurrency")
	assert.Zero(t, b.InUse())
	assert.Zero(t, b.Waiting())
}

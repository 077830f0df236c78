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
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
					assert.Equal(t, tc.held, b.InFlight())
				} else {
					require.NoError(t, err)
					assert.Equal(t, tc.held+1, b.InFlight())
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
		assert.Zero(t, b.InFlight())
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
				assert.Zero(t, b.InFlight(), "no slot is lost")
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
		assert.Zero(t, b.InFlight())
	})
}

func TestBulkheadGuardedPanicFreesSlot(t *testing.T) {
	b := resilience.NewBulkhead(1)
	p := resilience.Guarded[int](b)
	func() {
		defer func() { assert.Equal(t, "boom", recover()) }()
		_, _ = resilience.Do(context.Background(), p, func(context.Context) (int, error) { panic("boom") })
	}()
	assert.Zero(t, b.InFlight(), "the panicking call's slot is freed")
	v, err := resilience.Do(context.Background(), p, okFunc)
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
	assert.Zero(t, b.InFlight())
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
	assert.Zero(t, b.InFlight())
	assert.Zero(t, b.Waiting())
}

// BenchmarkBulkhead measures a call that finds a free slot, beside a
// buffered channel used as a semaphore, the usual hand-made bulkhead.
func BenchmarkBulkhead(b *testing.B) {
	ctx := context.Background()
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBulkhead(64))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded-observed", func(b *testing.B) {
		// Events only: a call that finds a free slot reports nothing.
		var o counter
		p := resilience.Guarded[int](resilience.NewBulkhead(64, resilience.WithObserver(&o)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Guarded-outcomes", func(b *testing.B) {
		// Every call ends with an EventCallEnded.
		o := counter{Outcomes: true}
		p := resilience.Guarded[int](resilience.NewBulkhead(64, resilience.WithObserver(&o)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("TryAcquire+Release", func(b *testing.B) {
		bh := resilience.NewBulkhead(64)
		b.ReportAllocs()
		for b.Loop() {
			if bh.TryAcquire() {
				bh.Release()
			}
		}
	})
	b.Run("chan-semaphore", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		b.ReportAllocs()
		for b.Loop() {
			sem <- struct{}{}
			_, _ = okFunc(ctx)
			<-sem
		}
	})
	b.Run("Guarded-parallel", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewBulkhead(64))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
	b.Run("chan-semaphore-parallel", func(b *testing.B) {
		sem := make(chan struct{}, 64)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				sem <- struct{}{}
				_, _ = okFunc(ctx)
				<-sem
			}
		})
	})
	b.Run("Guarded-contended-wait", func(b *testing.B) {
		// Two slots for every goroutine RunParallel starts on 2 cores x 4.
		p := resilience.Guarded[int](resilience.NewBulkhead(2, resilience.WithBulkheadWait(1<<62)))
		b.SetParallelism(4)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
}

func TestBulkheadEvents(t *testing.T) {
	ev := func(kind resilience.EventKind, err error, wait time.Duration) resilience.Event {
		return resilience.Event{Kind: kind, Component: "bulkhead", Name: "db", Err: err, Wait: wait}
	}
	full := resilience.ErrBulkheadFull
	tests := []struct {
		name    string
		opts    []resilience.BulkheadOption
		held    bool
		release time.Duration // when the holder releases; 0: never
		ctxEnds time.Duration // when the caller's context ends; 0: never
		want    []resilience.Event
	}{
		{"a free slot: nothing", nil, false, 0, 0, nil},
		{"refused at once", nil, true, 0, 0, []resilience.Event{ev(resilience.EventRefused, full, 0)}},
		{"refused: the queue is full", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Second), resilience.WithBulkheadQueue(0)}, true, 0, 0,
			[]resilience.Event{ev(resilience.EventRefused, full, 0)}},
		{"admitted after a wait", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Hour)}, true, 3 * time.Second, 0,
			[]resilience.Event{ev(resilience.EventWaitStarted, nil, 0), ev(resilience.EventWaitEnded, nil, 3*time.Second)}},
		{"the wait runs out", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Second)}, true, 0, 0,
			[]resilience.Event{ev(resilience.EventWaitStarted, nil, 0), ev(resilience.EventWaitEnded, full, time.Second), ev(resilience.EventRefused, full, 0)}},
		{"the context ends", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Hour)}, true, 0, 2 * time.Second,
			[]resilience.Event{ev(resilience.EventWaitStarted, nil, 0), ev(resilience.EventWaitEnded, context.DeadlineExceeded, 2*time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var o recorder
				b := resilience.NewBulkhead(1, append(tc.opts, resilience.WithObserver(&o), resilience.WithName("db"))...)
				if tc.held {
					require.True(t, b.TryAcquire())
				}
				if tc.release > 0 {
					go func() {
						time.Sleep(tc.release)
						b.Release()
					}()
				}
				ctx := context.Background()
				if tc.ctxEnds > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxEnds)
					defer cancel()
				}
				if err := b.Acquire(ctx); err == nil {
					b.Release()
				}
				assert.Equal(t, tc.want, o.take())
			})
		})
	}
}

// TestBulkheadCallEnded: a call through the bulkhead as a guard ends with
// an EventCallEnded only when the observer asks for outcomes.
func TestBulkheadCallEnded(t *testing.T) {
	errDown := errors.New("down")
	for _, outcomes := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			o := recorder{outcomes: outcomes}
			b := resilience.NewBulkhead(1, resilience.WithObserver(&o))
			p := resilience.Guarded[int](b)
			_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
				time.Sleep(5 * time.Millisecond)
				return 0, errDown
			})
			require.ErrorIs(t, err, errDown)
			done, err := b.Enter(context.Background())
			require.NoError(t, err)
			_, err = b.Enter(context.Background())
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			time.Sleep(time.Millisecond)
			done(nil)
			want := []resilience.Event{{Kind: resilience.EventRefused, Component: "bulkhead", Err: resilience.ErrBulkheadFull}}
			if outcomes {
				want = []resilience.Event{
					{Kind: resilience.EventCallEnded, Component: "bulkhead", Err: errDown, Duration: 5 * time.Millisecond},
					want[0],
					{Kind: resilience.EventCallEnded, Component: "bulkhead", Err: resilience.ErrBulkheadFull},
					{Kind: resilience.EventCallEnded, Component: "bulkhead", Duration: time.Millisecond},
				}
			}
			assert.Equal(t, want, o.take(), "outcomes %v", outcomes)
			assert.Zero(t, b.InFlight())
		})
	}
}

// TestBulkheadObserverPanics: an observer that panics while a call waits,
// or just as it is admitted, takes the call down with it, and the call
// gives back its place in the queue or its slot on the way.
func TestBulkheadObserverPanics(t *testing.T) {
	for _, kind := range []resilience.EventKind{resilience.EventWaitStarted, resilience.EventWaitEnded} {
		t.Run(kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
					if e.Kind == kind {
						panic("observer failed")
					}
				})
				b := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Hour), resilience.WithObserver(o))
				require.True(t, b.TryAcquire())
				panicked := make(chan any, 1)
				go func() {
					defer func() { panicked <- recover() }()
					_ = b.Acquire(context.Background())
				}()
				synctest.Wait()
				b.Release()
				assert.Equal(t, "observer failed", <-panicked)
				assert.Zero(t, b.InFlight(), "no slot is lost")
				assert.Zero(t, b.Waiting())
				assert.True(t, b.TryAcquire())
			})
		})
	}
}

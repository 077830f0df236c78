package resilience

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Bulkhead limits how many calls run at once, so that one slow dependency
// cannot take every goroutine, connection or thread of the caller with it.
// It is a [Guard]: wrap it with [Guarded] to use it in a policy, or use
// Acquire, TryAcquire and Release directly as a counting semaphore.
//
// By default a call that finds every slot taken is refused at once with
// [ErrBulkheadFull]. [WithBulkheadWait] lets it wait, first come first served,
// for a bounded time, and [WithBulkheadQueue] bounds how many may wait.
//
// Taking and releasing a slot when nobody waits is one atomic operation each
// and allocates nothing. A Bulkhead is safe for concurrent use.
type Bulkhead struct {
	limit int64
	// state holds the slots in use in its low 32 bits and the number of
	// waiters above them. While anybody waits, every slot is in use and a
	// released slot goes to the first waiter, never to a newcomer.
	state atomic.Int64

	wait  time.Duration
	queue int64 // most waiters; -1: any number
	common
	mu       sync.Mutex
	waiters  list.List // of *bulkheadWaiter, oldest first; guarded by mu
	doneFunc func(error)
}

const (
	bulkheadSlotMask  = 1<<32 - 1
	bulkheadOneWaiter = 1 << 32
)

// bulkheadWaiter is a call waiting for a slot.
type bulkheadWaiter struct {
	ready   chan struct{} // closed when the waiter is given a slot
	granted bool          // guarded by mu
	elem    *list.Element // its place in the queue
}

// NewBulkhead returns a bulkhead that lets at most limit calls run at once.
// It panics if limit is less than 1 or more than math.MaxInt32, or if an
// option is invalid.
func NewBulkhead(limit int, opts ...BulkheadOption) *Bulkhead {
	if limit < 1 || limit > math.MaxInt32 {
		panic(fmt.Sprintf("resilience: NewBulkhead: limit must be between 1 and %d, got %d", math.MaxInt32, limit))
	}
	cfg := bulkheadConfig{queue: -1}
	for _, o := range opts {
		if o == nil {
			panic("resilience: NewBulkhead: option is nil")
		}
		o.applyBulkhead(&cfg)
	}
	b := &Bulkhead{limit: int64(limit), wait: cfg.wait, queue: cfg.queue, common: cfg.common}
	b.doneFunc = func(error) { b.Release() }
	return b
}

// BulkheadOption configures [NewBulkhead]. [Option] ([WithClock],
// [WithObserver], [WithName]) is one too.
type BulkheadOption interface {
	applyBulkhead(*bulkheadConfig)
}

type bulkheadConfig struct {
	wait  time.Duration
	queue int64
	common
}

type bulkheadOptionFunc func(*bulkheadConfig)

func (f bulkheadOptionFunc) applyBulkhead(c *bulkheadConfig) { f(c) }

func (o Option) applyBulkhead(c *bulkheadConfig) { o.set(&c.common) }

// WithBulkheadWait lets a call that finds every slot taken wait up to d for
// one, in order of arrival, before it is refused with [ErrBulkheadFull]. The
// wait also ends when the call's context does. The default, 0, is not to
// wait. It panics if d is negative.
func WithBulkheadWait(d time.Duration) BulkheadOption {
	if d < 0 {
		panic(fmt.Sprintf("resilience: WithBulkheadWait: wait must not be negative, got %v", d))
	}
	return bulkheadOptionFunc(func(c *bulkheadConfig) { c.wait = d })
}

// WithBulkheadQueue bounds how many calls may wait at once; a call that finds
// the queue full is refused at once. It matters only with
// [WithBulkheadWait]. By default any number may wait; 0 means none may. It
// panics if n is negative.
func WithBulkheadQueue(n int) BulkheadOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithBulkheadQueue: queue length must not be negative, got %d", n))
	}
	return bulkheadOptionFunc(func(c *bulkheadConfig) { c.queue = int64(n) })
}

// Limit returns the number of calls the bulkhead lets run at once.
func (b *Bulkhead) Limit() int { return int(b.limit) }

// InUse returns the number of slots taken now.
func (b *Bulkhead) InUse() int { return int(b.state.Load() & bulkheadSlotMask) }

// Waiting returns the number of calls waiting for a slot now.
func (b *Bulkhead) Waiting() int { return int(b.state.Load() / bulkheadOneWaiter) }

// TryAcquire takes a slot if one is free and nobody waits for one, and
// reports whether it did. It never waits.
func (b *Bulkhead) TryAcquire() bool {
	for {
		s := b.state.Load()
		if s >= bulkheadOneWaiter || s >= b.limit {
			return false
		}
		if b.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// Acquire takes a slot, waiting for one as configured by [WithBulkheadWait].
// It returns nil when it holds a slot, which must then be given back with
// Release; an error matching [ErrBulkheadFull] when no slot could be had in
// time (at once, by default); or ctx's error when ctx ends while it waits.
// A slot handed over just as ctx ends is kept, and Acquire returns nil.
func (b *Bulkhead) Acquire(ctx context.Context) error {
	if b.TryAcquire() {
		return nil
	}
	if b.wait == 0 {
		return ErrBulkheadFull
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := b.enqueue()
	if w == nil {
		return err
	}
	wctx, stop := b.waitCtx(ctx, b.wait)
	defer stop()
	select {
	case <-w.ready:
		return nil
	case <-wctx.Done():
		err = ctx.Err()
		if err == nil {
			err = ErrBulkheadFull
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return nil
	}
	b.waiters.Remove(w.elem)
	b.state.Add(-bulkheadOneWaiter)
	return err
}

// enqueue takes a slot that is free, or joins the queue: it returns a nil
// waiter and a nil error when it took a slot, a nil waiter and an error when
// it may not wait, and the waiter otherwise.
func (b *Bulkhead) enqueue() (*bulkheadWaiter, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		s := b.state.Load()
		waiting, inUse := s/bulkheadOneWaiter, s&bulkheadSlotMask
		if waiting == 0 && inUse < b.limit {
			if b.state.CompareAndSwap(s, s+1) {
				return nil, nil
			}
			continue
		}
		if b.queue >= 0 && waiting >= b.queue {
			return nil, ErrBulkheadFull
		}
		if b.state.CompareAndSwap(s, s+bulkheadOneWaiter) {
			break
		}
	}
	w := &bulkheadWaiter{ready: make(chan struct{})}
	w.elem = b.waiters.PushBack(w)
	return w, nil
}

// Release gives back a slot taken by Acquire or TryAcquire, or by an
// admitted call of the bulkhead as a [Guard]. The slot goes to the first
// waiter if there is one. Release panics if no slot is taken.
func (b *Bulkhead) Release() {
	for {
		s := b.state.Load()
		if s&bulkheadSlotMask == 0 {
			panic("resilience: Bulkhead.Release: no slot is taken (Release without a matching Acquire)")
		}
		if s >= bulkheadOneWaiter {
			b.handOver()
			return
		}
		if b.state.CompareAndSwap(s, s-1) {
			return
		}
	}
}

// handOver gives a released slot to the first waiter, or frees it if the
// waiters have all left since Release looked.
func (b *Bulkhead) handOver() {
	b.mu.Lock()
	defer b.mu.Unlock()
	front := b.waiters.Front()
	if front == nil {
		b.state.Add(-1)
		return
	}
	w := b.waiters.Remove(front).(*bulkheadWaiter)
	b.state.Add(-bulkheadOneWaiter) // the slot passes on: in use stays the same
	w.granted = true
	close(w.ready)
}

// Enter takes a slot as Acquire does. The done function it returns gives the
// slot back; it must be called exactly once, and costs no allocation.
func (b *Bulkhead) Enter(ctx context.Context) (done func(err error), err error) {
	if err := b.Acquire(ctx); err != nil {
		return nil, err
	}
	return b.doneFunc, nil
}

func (b *Bulkhead) enter(ctx context.Context) (uint64, error) {
	if b.TryAcquire() { // kept apart from Acquire's larger frame
		return 0, nil
	}
	return 0, b.Acquire(ctx)
}

func (b *Bulkhead) exit(uint64, error) { b.Release() }

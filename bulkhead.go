package resilience

import (
	"container/list"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Bulkhead limits how many calls run at once, so that one slow dependency
// cannot take every goroutine of the caller with it. It is a [Guard], and
// Acquire, TryAcquire and Release make it a counting semaphore. A call that
// finds every slot taken is refused at once with [ErrBulkheadFull], unless
// [WithBulkheadWait] lets it wait. Its observer gets refusals, waits and
// [EventCallEnded] (see [Compose]); TryAcquire and Release report nothing.
// A Bulkhead is safe for concurrent use; the zero Bulkhead refuses every
// call.
type Bulkhead struct {
	limit int64
	// state holds the slots in use in its low 32 bits and the number of
	// waiters above them. While anybody waits, every slot is in use and a
	// released slot goes to the first waiter, never to a newcomer.
	state atomic.Int64

	wait  time.Duration
	queue int64 // most waiters; -1: any number
	common
	refusalCount
	mu       sync.Mutex
	waiters  list.List // of *bulkheadWaiter, oldest first; guarded by mu
	doneFunc func(error)
	origin   time.Time // outcome tickets count from it

	// hook, set only by the package's tests, is called at the steps of the
	// slow paths where another goroutine may change the state, so that a
	// test can make it change there.
	hook func(bulkheadStep)
}

// bulkheadStep names a point of a slow path (see Bulkhead.hook).
type bulkheadStep uint8

const (
	stepFull      bulkheadStep = iota + 1 // Acquire found no free slot, before it queues
	stepWaitEnded                         // a wait ran out or its context ended, before the waiter leaves
	stepHandOver                          // Release saw waiters, before it hands its slot over
)

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
		checkOption("NewBulkhead", o)
		o.applyBulkhead(&cfg)
	}
	cfg.route = newRoute(KindBulkhead, &cfg.common)
	b := &Bulkhead{limit: int64(limit), wait: cfg.wait, queue: cfg.queue, common: cfg.common}
	b.doneFunc = func(error) { b.Release() }
	if b.outcomes {
		b.origin = b.now()
	}
	return b
}

// BulkheadOption configures [NewBulkhead]; an [Option] is one too.
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
// one, in order of arrival, or until its context ends. The default, 0, is
// not to wait. It panics if d is negative.
func WithBulkheadWait(d time.Duration) BulkheadOption {
	checkDuration("WithBulkheadWait", "wait", d)
	return bulkheadOptionFunc(func(c *bulkheadConfig) { c.wait = d })
}

// WithBulkheadQueue bounds how many calls may wait at once, with
// [WithBulkheadWait]; a call that finds the queue full is refused at once.
// By default any number may wait; 0 means none may. It panics if n is
// negative.
func WithBulkheadQueue(n int) BulkheadOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithBulkheadQueue: queue length must not be negative, got %d", n))
	}
	return bulkheadOptionFunc(func(c *bulkheadConfig) { c.queue = int64(n) })
}

// Limit returns the number of calls the bulkhead lets run at once.
func (b *Bulkhead) Limit() int { return int(b.limit) }

// InFlight returns the number of calls that hold a slot now.
func (b *Bulkhead) InFlight() int { return int(b.state.Load() & bulkheadSlotMask) }

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

// Release gives back a slot taken by Acquire or TryAcquire, to the first
// waiter if there is one. It panics if no slot is taken.
func (b *Bulkhead) Release() {
	for {
		s := b.state.Load()
		if s&bulkheadSlotMask == 0 {
			panic("resilience: Bulkhead.Release: no slot is taken (Release without a matching Acquire)")
		}
		if s >= bulkheadOneWaiter {
			if b.hook != nil {
				b.hook(stepHandOver)
			}
			b.handOver()
			return
		}
		if b.state.CompareAndSwap(s, s-1) {
			return
		}
	}
}

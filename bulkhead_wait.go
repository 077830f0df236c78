package resilience

import (
	"context"
	"time"
)

// Acquire takes a slot, waiting for one as [WithBulkheadWait] says. It
// returns nil when it holds a slot, to be given back with Release (even
// when ctx ends as the slot is handed over); an error matching
// [ErrBulkheadFull] when none could be had in time; or ctx's error.
func (b *Bulkhead) Acquire(ctx context.Context) error {
	if b.TryAcquire() {
		return nil
	}
	if b.hook != nil {
		b.hook(stepFull)
	}
	if b.wait == 0 {
		return b.refuse(ctx, ErrBulkheadFull)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := b.enqueue()
	if w != nil {
		return b.await(ctx, w)
	}
	if err != nil {
		return b.refuse(ctx, err)
	}
	return nil
}

// refuse reports a refusal and returns its error.
func (b *Bulkhead) refuse(ctx context.Context, err error) error {
	b.refusedN.Add(1)
	if b.reports() {
		b.observe(ctx, Event{Kind: EventRefused, Component: KindBulkhead, Err: err})
	}
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
		if waiting == 0 && inUse < b.limit { // freed since TryAcquire looked
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

// await waits in the queue for a slot to be handed to w.
func (b *Bulkhead) await(ctx context.Context, w *bulkheadWaiter) error {
	var start time.Time
	if b.reports() {
		start = b.now()
		b.observeHolding(ctx, Event{Kind: EventWaitStarted, Component: KindBulkhead}, w)
	}
	wctx, stop := b.waitCtx(ctx, b.wait)
	defer stop()
	var err error
	select {
	case <-w.ready:
	case <-wctx.Done():
		if b.hook != nil {
			b.hook(stepWaitEnded)
		}
		err = b.leave(ctx, w)
		if err == ErrBulkheadFull {
			b.refusedN.Add(1)
		}
	}
	if b.reports() {
		e := Event{Kind: EventWaitEnded, Component: KindBulkhead, Wait: b.since(start), Err: err}
		if err == nil {
			b.observeHolding(ctx, e, w)
			return nil
		}
		b.observe(ctx, e)
		if err == ErrBulkheadFull {
			b.observe(ctx, Event{Kind: EventRefused, Component: KindBulkhead, Err: err})
		}
	}
	return err
}

// leave takes w out of the queue once its wait has ended, and returns why
// it ended: ctx's error, or ErrBulkheadFull when the wait ran out. It
// returns nil if a slot was handed to w meanwhile: w holds it.
func (b *Bulkhead) leave(ctx context.Context, w *bulkheadWaiter) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return nil
	}
	b.waiters.Remove(w.elem)
	b.state.Add(-bulkheadOneWaiter)
	if err := ctx.Err(); err != nil {
		return err
	}
	return ErrBulkheadFull
}

// observeHolding reports e about waiter w, which is queued or holds a
// slot. Should the observer panic, w gives back what it holds first, so
// that no slot goes to a call that is gone.
func (b *Bulkhead) observeHolding(ctx context.Context, e Event, w *bulkheadWaiter) {
	ok := false
	defer func() {
		if !ok && b.leave(ctx, w) == nil {
			b.Release()
		}
	}()
	b.observe(ctx, e)
	ok = true
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
// slot back; it must be called exactly once.
func (b *Bulkhead) Enter(ctx context.Context) (done func(err error), err error) {
	if b.outcomes {
		ticket, err := b.enterObserved(ctx, true)
		if err != nil {
			return nil, err
		}
		return func(err error) {
			b.Release()
			b.callEnded(ctx, ticket, err)
		}, nil
	}
	if err := b.Acquire(ctx); err != nil {
		return nil, err
	}
	return b.doneFunc, nil
}

func (b *Bulkhead) enter(ctx context.Context, report bool) (uint64, error) {
	if b.outcomes {
		return b.enterObserved(ctx, report)
	}
	if b.TryAcquire() { // kept apart from Acquire's larger frame
		return 0, nil
	}
	return 0, b.Acquire(ctx)
}

// exit ends a call of context ctx admitted by enter; report says whether
// its EventCallEnded is reported.
func (b *Bulkhead) exit(ctx context.Context, ticket uint64, err error, report bool) {
	b.Release()
	if b.outcomes && report {
		b.callEnded(ctx, ticket, err)
	}
}

// enterObserved is enter for an observer that wants outcomes: the ticket is
// the time the call began, counted from b.origin. A refused call ends here,
// reported if report is set.
func (b *Bulkhead) enterObserved(ctx context.Context, report bool) (uint64, error) {
	ticket := uint64(b.since(b.origin))
	if err := b.Acquire(ctx); err != nil {
		if report {
			b.callEnded(ctx, ticket, err)
		}
		return 0, err
	}
	return ticket, nil
}

func (b *Bulkhead) reportsOutcomes() bool { return b.outcomes }

func (b *Bulkhead) callEnded(ctx context.Context, ticket uint64, err error) {
	d := b.since(b.origin) - time.Duration(ticket)
	b.observe(ctx, Event{Kind: EventCallEnded, Component: KindBulkhead, Err: err, Duration: d})
}

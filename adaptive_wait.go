package resilience

import (
	"context"
	"time"
)

// enqueue takes a slot for a call of level lv if one is free for it and
// no call of its level or above waits, or queues it: it returns a nil
// waiter and true when it took a slot, nil and false when it may not wait.
func (l *AdaptiveLimiter) enqueue(lv int) (*limiterWaiter, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ahead := false
	for i := lv; i < priorityLevels; i++ {
		ahead = ahead || l.waiters[i].Len() > 0
	}
	for {
		s := l.state.Load()
		waiting, inFlight := s/adaptiveOneWaiter, s&adaptiveSlotMask
		if !ahead && inFlight < threshold(l.limit.Load(), lv) {
			if l.state.CompareAndSwap(s, s+1) {
				return nil, true
			}
			continue
		}
		if l.queue >= 0 && waiting >= l.queue {
			return nil, false
		}
		if l.state.CompareAndSwap(s, s+adaptiveOneWaiter) {
			break
		}
	}
	if !l.bound.Load() {
		l.bound.Store(true)
	}
	w := &limiterWaiter{ready: make(chan struct{}), level: lv}
	w.elem = l.waiters[lv].PushBack(w)
	return w, true
}

// await waits in the queue, up to wait, for a slot to be handed to w.
func (l *AdaptiveLimiter) await(ctx context.Context, w *limiterWaiter, p Priority, wait time.Duration) error {
	var start time.Time
	if l.reports() {
		start = l.now()
		l.observeHolding(ctx, Event{Kind: EventWaitStarted, Component: KindAdaptiveLimiter}, w)
	}
	wctx, stop := l.waitCtx(ctx, wait)
	defer stop()
	var err error
	select {
	case <-w.ready:
	case <-wctx.Done():
		err = l.leave(ctx, w, p)
	}
	if l.reports() {
		e := Event{Kind: EventWaitEnded, Component: KindAdaptiveLimiter, Wait: l.since(start), Err: err}
		if err == nil {
			l.observeHolding(ctx, e, w)
			return nil
		}
		l.observe(ctx, e)
		if se, ok := err.(*ShedError); ok {
			l.observe(ctx, Event{Kind: EventRefused, Component: KindAdaptiveLimiter, Err: err, Wait: se.after})
		}
	}
	return err
}

// leave takes w out of the queue once its wait has ended, and returns why
// it ended: ctx's error, or a refusal when the wait ran out. It returns nil
// if a slot was handed to w meanwhile: w holds it.
func (l *AdaptiveLimiter) leave(ctx context.Context, w *limiterWaiter, p Priority) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted {
		return nil
	}
	l.waiters[w.level].Remove(w.elem)
	l.state.Add(-adaptiveOneWaiter)
	if err := ctx.Err(); err != nil {
		return err
	}
	l.refusedN.Add(1)
	return &ShedError{sentinel: ErrLimitExceeded, priority: p, after: max(time.Duration(l.hint.Load()), time.Millisecond)}
}

// observeHolding reports e about waiter w, which is queued or holds a
// slot. Should the observer panic, w gives back what it holds first.
func (l *AdaptiveLimiter) observeHolding(ctx context.Context, e Event, w *limiterWaiter) {
	ok := false
	defer func() {
		if !ok && l.leave(ctx, w, PriorityFrom(ctx)) == nil {
			l.release()
		}
	}()
	l.observe(ctx, e)
	ok = true
}

// release frees a slot, or hands it to a waiter, and returns the number of
// calls that were in flight.
func (l *AdaptiveLimiter) release() int64 {
	s := l.state.Add(-1) + 1
	if s >= adaptiveOneWaiter {
		// Calls that come meanwhile queue behind the waiters of their
		// priority or above (enqueue, under mu): the slot is theirs.
		l.mu.Lock()
		l.admitWaiters()
		l.mu.Unlock()
	}
	return s & adaptiveSlotMask
}

// admitWaiters gives free slots to waiters, the highest priority first,
// as long as their share of the limit allows. l.mu is held.
func (l *AdaptiveLimiter) admitWaiters() {
	lim := l.limit.Load()
	for lv := priorityLevels - 1; lv >= 0; lv-- {
		q := &l.waiters[lv]
		for q.Len() > 0 && l.state.Load()&adaptiveSlotMask < threshold(lim, lv) {
			w := q.Remove(q.Front()).(*limiterWaiter)
			l.state.Add(1 - adaptiveOneWaiter)
			// The call is admitted now, in the queue's order: its
			// ticket is taken here, not when its goroutine next runs.
			w.ticket = l.ticket()
			w.granted = true
			close(w.ready)
		}
	}
}

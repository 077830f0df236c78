package resilience

import (
	"context"
	"time"
)

// stateChange is a change of state to deliver, with the context of the
// call that made it (nil for Trip, Reset and the other methods).
type stateChange struct {
	ctx      context.Context
	from, to BreakerState
}

// outbox holds the state changes not yet handed to the observer and the
// hook. Guarded by its breaker's mutex.
type outbox struct {
	queue      []stateChange
	head       int  // queue[head:] is pending
	delivering bool // a goroutine is handing changes out
}

// queue adds a change to deliver. b.mu is held.
func (b *Breaker) queue(from, to BreakerState) {
	if !b.cfg.reports() {
		return
	}
	b.out.queue = append(b.out.queue, stateChange{b.cause, from, to})
	b.pending.Store(true)
}

// deliver hands the queued state changes to the observer and the hook, in
// order, one at a time, outside the lock. Only one goroutine delivers at a
// time, so neither the observer nor the hook runs twice at once for state
// changes; changes made meanwhile, even by the hook itself, are delivered
// by the goroutine already delivering. When the observer or the hook
// panics, the goroutine stops delivering (the panic goes on up through its
// call) and the next caller of deliver takes over the changes left.
func (b *Breaker) deliver() {
	if !b.pending.Load() {
		return
	}
	b.mu.Lock()
	if b.out.delivering {
		b.mu.Unlock()
		return
	}
	b.out.delivering = true
	b.mu.Unlock()
	finished := false
	defer func() { // when the observer or the hook panicked or called runtime.Goexit
		if !finished {
			b.mu.Lock()
			b.out.delivering = false
			b.mu.Unlock()
		}
	}()
	for {
		b.mu.Lock()
		o := &b.out
		if o.head == len(o.queue) {
			// Found empty and given up under one lock: a change queued
			// after this is delivered by the goroutine that queued it.
			o.queue, o.head, o.delivering = o.queue[:0], 0, false // the memory is reused
			b.pending.Store(false)
			b.mu.Unlock()
			finished = true
			return
		}
		c := o.queue[o.head]
		o.queue[o.head] = stateChange{} // the reused memory keeps no context
		o.head++
		b.mu.Unlock()
		b.handOut(c)
	}
}

func (b *Breaker) handOut(c stateChange) {
	if b.cfg.reports() {
		// The call that made the change: the failure that tripped the
		// breaker, the probe that closed it. A method such as Trip has
		// none.
		ctx := c.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		b.cfg.observe(ctx, Event{Kind: EventStateChange, Component: KindBreaker, From: c.from, To: c.to})
	}
}

// reportRefusal reports a refusal to the observer, in the caller's
// goroutine and with its ctx.
func (b *Breaker) reportRefusal(ctx context.Context, err error) {
	var hint time.Duration
	if h, ok := err.(*BreakerOpenError); ok {
		hint = h.RetryAfter()
	}
	b.cfg.observe(ctx, Event{Kind: EventRefused, Component: KindBreaker, Err: err, Wait: hint})
}

// ended reports a call's end to an observer that asked for outcomes, with
// the call's context.
func (b *Breaker) ended(ctx context.Context, err error, took time.Duration) {
	b.cfg.observe(ctx, Event{Kind: EventCallEnded, Component: KindBreaker, Err: err, Duration: took})
}

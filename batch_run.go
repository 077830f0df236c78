package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// expire marks a batch whose first item has waited MaxWait as ready.
func (b *Batcher[In, Out]) expire(p *batch[In, Out], use uint64) {
	b.mu.Lock()
	if b.pending == p && p.use == use {
		p.ready = true
		b.dispatch()
	}
	b.unlock()
}

// dispatch starts batches while slots are free: queued ones first, then
// the pending one if it is ready. b.mu is held.
func (b *Batcher[In, Out]) dispatch() {
	for b.running < b.cfg.maxConcurrent {
		p := b.next()
		if p == nil {
			return
		}
		b.running++
		go b.run(p)
	}
}

// next takes the batch to send next, if any, and seals it: from now on its
// calls wait for fn. b.mu is held.
func (b *Batcher[In, Out]) next() *batch[In, Out] {
	var p *batch[In, Out]
	switch {
	case len(b.queue) > 0:
		p = b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
	case b.pending != nil && (b.pending.ready || b.closed):
		p = b.pending
		b.pending = nil
	default:
		return nil
	}
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
	for _, c := range p.calls {
		c.batch = nil
	}
	return p
}

// run sends batches until none is ready, then gives its slot back. When
// fn (or an observer) ends the goroutine with runtime.Goexit, the deferred
// part answers the batch's callers, gives the slot back, and lets another
// goroutine carry on with the batches that are ready.
func (b *Batcher[In, Out]) run(p *batch[In, Out]) {
	var (
		start    time.Time
		answered bool
		reuse    = true
	)
	defer func() {
		if p == nil {
			return
		}
		pe := newPanicError(nil) // the runtime.Goexit case
		size := len(p.items)
		if !answered {
			b.answer(p, nil, nil, pe)
		}
		b.mu.Lock()
		b.putBatch(p, answered && reuse)
		b.running--
		b.dispatch()
		b.unlock()
		if !answered && b.cfg.observer != nil {
			b.cfg.observeDetached(b.ctx, Event{Kind: EventBatchSent, Component: b.component, Size: size, Duration: b.cfg.since(start), Err: pe})
		}
	}()
	for p != nil {
		answered = false
		if b.cfg.observer != nil {
			start = b.cfg.now()
		}
		outs, itemErrs, err, r := b.call(p.items)
		reuse = r
		var sent Event
		if b.cfg.observer != nil {
			sent = Event{Kind: EventBatchSent, Component: b.component, Size: len(p.items), Duration: b.cfg.since(start), Err: err}
		}
		b.answer(p, outs, itemErrs, err)
		answered = true
		if b.cfg.observer != nil {
			b.cfg.observeDetached(b.ctx, sent) // the callers do not wait for it
		}
		b.mu.Lock()
		b.putBatch(p, reuse)
		p = b.next()
		if p == nil {
			b.running--
		}
		b.unlock()
	}
}

// answer gives each caller of p its result: its own error from itemErrs,
// or the batch's error err, or its result from outs.
func (b *Batcher[In, Out]) answer(p *batch[In, Out], outs []Out, itemErrs ItemErrors, err error) {
	for i, c := range p.calls {
		switch {
		case err != nil:
			c.err = err
		case itemErrs[i] != nil:
			c.err = itemErrs[i]
		default:
			c.out = outs[i]
		}
		c.done <- struct{}{} // c belongs to its caller from here on
	}
}

// call runs fn for items under the policy, if any. It
// returns the results, the items' own errors, and the batch's error: a
// panic in fn becomes a *PanicError. reuse is false when a call of fn may
// still run with items (a Timeout in the policy gave up on it), so that
// the batch is not reused under it.
func (b *Batcher[In, Out]) call(items []In) (outs []Out, itemErrs ItemErrors, err error, reuse bool) {
	ctx := b.ctx
	if b.policy == nil {
		defer func() {
			if r := recover(); r != nil {
				outs, itemErrs, err = nil, nil, newPanicError(r)
			}
		}()
		outs, itemErrs, err = b.attempt(ctx, items)
		return outs, itemErrs, err, true
	}
	// Under a policy, items' own errors are carried past it: the policy
	// sees a successful batch call, and only a whole-batch error fails it.
	k := new(itemErrorsKept[Out])
	defer func() {
		if r := recover(); r != nil {
			outs, itemErrs, err = nil, nil, newPanicError(r)
		}
		reuse = k.live.Load() == 0
	}()
	outs, err = b.policy.Execute(ctx, func(ctx context.Context) ([]Out, error) {
		k.live.Add(1)
		defer k.live.Add(-1)
		outs, itemErrs, err := b.attempt(ctx, items)
		if itemErrs != nil {
			k.keep(outs, itemErrs)
		}
		return outs, err
	})
	if err == nil && len(outs) != len(items) { // a policy that made results of its own
		err = &batchResultsError{items: len(items), results: len(outs)}
	}
	if err != nil {
		return nil, nil, err, reuse // reuse is set by the deferred call
	}
	return outs, k.find(outs), nil, reuse
}

// attempt calls fn once and splits its error into the items' own errors
// and a whole-batch error. A wrong number of results is a whole-batch
// error.
func (b *Batcher[In, Out]) attempt(ctx context.Context, items []In) ([]Out, ItemErrors, error) {
	outs, err := b.fn(ctx, items)
	var itemErrs ItemErrors
	if errors.As(err, &itemErrs) {
		err = nil
	}
	if err == nil && len(outs) != len(items) {
		return nil, nil, &batchResultsError{items: len(items), results: len(outs)}
	}
	if err != nil {
		return nil, nil, err
	}
	return outs, itemErrs, nil
}

// itemErrorsKept holds the items' own errors of the attempts a policy made
// of one batch call, for the results the policy returns. The results tell
// the attempts apart: each attempt's are a slice of its own (for a result
// type of size zero, or a fn that returns one buffer again and again, the
// latest attempt is taken). live counts the attempts still running.
type itemErrorsKept[Out any] struct {
	live atomic.Int32
	mu   sync.Mutex
	kept []keptItemErrors[Out]
}

type keptItemErrors[Out any] struct {
	first *Out // the attempt's results, by their first element
	errs  ItemErrors
}

func (k *itemErrorsKept[Out]) keep(outs []Out, errs ItemErrors) {
	k.mu.Lock()
	k.kept = append(k.kept, keptItemErrors[Out]{first: &outs[0], errs: errs})
	k.mu.Unlock()
}

// find returns the items' errors of the attempt whose results are outs.
func (k *itemErrorsKept[Out]) find(outs []Out) ItemErrors {
	if len(outs) == 0 {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := len(k.kept) - 1; i >= 0; i-- {
		if k.kept[i].first == &outs[0] {
			return k.kept[i].errs
		}
	}
	return nil
}

func (b *Batcher[In, Out]) newBatch() *batch[In, Out] {
	if p, ok := b.batches.Get().(*batch[In, Out]); ok {
		return p
	}
	return &batch[In, Out]{
		items: make([]In, 0, min(b.cfg.maxSize, 1024)),
		calls: make([]*batchCall[Out], 0, min(b.cfg.maxSize, 1024)),
	}
}

// putBatch retires p, and keeps it for reuse if reuse is set. b.mu is held.
func (b *Batcher[In, Out]) putBatch(p *batch[In, Out], reuse bool) {
	if p.stop != nil {
		p.stop()
	}
	p.use++ // a timer that fires anyway finds p stale
	if !reuse {
		return
	}
	clear(p.items)
	clear(p.calls)
	p.items, p.calls, p.ready, p.stop = p.items[:0], p.calls[:0], false, nil
	b.batches.Put(p)
}

func (b *Batcher[In, Out]) getCall() *batchCall[Out] {
	if c, ok := b.callPool.Get().(*batchCall[Out]); ok {
		return c
	}
	return &batchCall[Out]{done: make(chan struct{}, 1)}
}

func (b *Batcher[In, Out]) putCall(c *batchCall[Out]) {
	var zero Out
	c.out, c.err, c.batch = zero, nil, nil
	b.callPool.Put(c)
}

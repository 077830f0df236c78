package resilience

import (
	"context"
	"slices"
	"sync"
)

// Batcher turns many single calls into batch calls: each Do hands over one
// item and gets its own result, while fn is called once per batch with the
// items of many callers, once a batch is full or has waited long enough. A
// batch runs with a context of the batcher's own; a caller whose context
// ends leaves its batch if not yet sent. Every item accepted is answered
// exactly once. Its observer gets [EventBatchSent] and [EventCallEnded]. A
// Batcher is safe for concurrent use; the zero Batcher's Do panics.
type Batcher[In, Out any] struct {
	fn        func(ctx context.Context, batch []In) ([]Out, error)
	cfg       batchConfig
	component string // "batcher" or "loader", for events
	prefilter func(In) error
	policy    Policy[[]Out]
	ctx       context.Context // batches run under it

	mu       sync.Mutex
	pending  *batch[In, Out] // filling up
	queue    []*batch[In, Out]
	running  int
	closed   bool
	room     chan struct{} // closed when room appears (see unlock)
	drained  chan struct{} // closed when Close finds nothing left
	batches  sync.Pool     // of *batch[In, Out]
	callPool sync.Pool     // of *batchCall[Out]
}

// batch is a batch being filled, queued or sent.
type batch[In, Out any] struct {
	items []In
	calls []*batchCall[Out]
	stop  func() bool // stops the MaxWait timer
	ready bool        // MaxWait has passed, or the batch is full
	use   uint64      // counts the batch's uses, so a stale timer knows it is stale
}

// batchCall is one caller's item in flight.
type batchCall[Out any] struct {
	done  chan struct{} // one send when answered
	out   Out
	err   error
	batch any // *batch[In, Out] while not sent; nil once sent
	index int // in batch.calls
}

// NewBatcher returns a batcher that sends batches of items to fn. fn must
// return one result per item, in the items' order, or an error (see
// [ItemErrors]); it must not keep the batch slice once it has returned.
// NewBatcher panics if fn is nil or an option is invalid.
func NewBatcher[In, Out any](fn func(ctx context.Context, batch []In) ([]Out, error), opts ...BatchOption) *Batcher[In, Out] {
	if fn == nil {
		panic("resilience: NewBatcher: fn is nil")
	}
	return newBatcher("NewBatcher", KindBatcher, fn, opts)
}

// newBatcher builds a batcher for the constructor named ctor, reporting
// events as component.
func newBatcher[In, Out any](ctor, component string, fn func(context.Context, []In) ([]Out, error), opts []BatchOption) *Batcher[In, Out] {
	cfg := defaultBatchConfig()
	for _, o := range opts {
		checkOption(ctor, o)
		o.applyBatch(&cfg)
	}
	if cfg.maxQueued < 0 {
		cfg.maxQueued = cfg.maxConcurrent
	}
	b := &Batcher[In, Out]{fn: fn, cfg: cfg, component: component, ctx: context.Background()}
	b.prefilter, b.policy = batchFuncs[In, Out](ctor, &cfg)
	return b
}

// Do adds in to a batch and returns its result. It returns the
// prefilter's error for a rejected item, [ErrBatcherClosed] once Close has
// begun, ctx's error if ctx ends first, the item's own error from
// [ItemErrors], or the batch's error.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	if b.fn == nil {
		panic("resilience: Batcher.Do: the zero Batcher is not usable; use NewBatcher")
	}
	if !b.cfg.outcomes {
		return b.do(ctx, in)
	}
	start := b.cfg.now()
	out, err := b.do(ctx, in)
	b.cfg.observe(ctx, Event{Kind: EventCallEnded, Component: b.component, Err: err, Duration: b.cfg.since(start)})
	return out, err
}

func (b *Batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	var zero Out
	if b.prefilter != nil {
		if err := b.prefilter(in); err != nil {
			return zero, err
		}
	}
	c, err := b.add(ctx, in)
	if err != nil {
		return zero, err
	}
	if done := ctx.Done(); done == nil {
		<-c.done // a context that never ends: a plain receive is cheaper
	} else {
		select {
		case <-c.done:
		case <-done:
			if b.withdraw(c) {
				b.putCall(c)
			}
			// Otherwise the batch has it: it will answer c, which is left to it.
			return zero, ctx.Err()
		}
	}
	out, err := c.out, c.err
	b.putCall(c)
	return out, err
}

// full reports whether an item arriving now must wait for room: the batch
// being filled is full, and so are the queue and every batch slot. b.mu is
// held.
func (b *Batcher[In, Out]) full() bool {
	return b.pending != nil && len(b.pending.items) >= b.cfg.maxSize &&
		len(b.queue) >= b.cfg.maxQueued && b.running >= b.cfg.maxConcurrent
}

// unlock releases b.mu after waking whoever waits for the state it leaves:
// callers waiting for room once there is room (or the batcher is closed),
// and Close once nothing is left. Every change of state under b.mu ends
// with it, so that no way of making room (a batch sent from the queue or
// straight from pending, a batch emptied by its callers leaving, Close)
// can forget to wake the waiters.
func (b *Batcher[In, Out]) unlock() {
	if b.room != nil && (b.closed || !b.full()) {
		close(b.room)
		b.room = nil
	}
	if b.drained != nil && b.running == 0 && b.pending == nil && len(b.queue) == 0 {
		close(b.drained)
		b.drained = nil
	}
	b.mu.Unlock()
}

// add puts in into the pending batch, waiting for room if there is none.
func (b *Batcher[In, Out]) add(ctx context.Context, in In) (*batchCall[Out], error) {
	b.mu.Lock()
	for !b.closed && b.full() {
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room := b.room
		b.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		b.mu.Lock()
	}
	if b.closed {
		b.unlock()
		return nil, ErrBatcherClosed
	}
	c := b.getCall()
	p := b.pending
	if p == nil || len(p.items) == b.cfg.maxSize {
		if p != nil { // full and every slot busy: it waits in the queue
			b.queue = append(b.queue, p)
		}
		p = b.newBatch()
		b.pending = p
		if b.cfg.maxWait > 0 {
			use := p.use
			p.stop = b.cfg.afterFunc(b.cfg.maxWait, func() { b.expire(p, use) })
		}
	}
	c.batch, c.index = p, len(p.calls)
	p.items = append(p.items, in)
	p.calls = append(p.calls, c)
	if len(p.items) == b.cfg.maxSize || b.cfg.maxWait == 0 {
		p.ready = true
	}
	b.dispatch()
	b.unlock()
	return c, nil
}

// withdraw takes a call whose caller gave up out of its batch, if the
// batch has not been sent; it reports whether it did. A batch left empty
// leaves the pending place or the queue.
func (b *Batcher[In, Out]) withdraw(c *batchCall[Out]) bool {
	b.mu.Lock()
	defer b.unlock()
	p, ok := c.batch.(*batch[In, Out])
	if !ok {
		return false
	}
	last := len(p.calls) - 1
	moved := p.calls[last]
	p.calls[c.index], p.items[c.index] = moved, p.items[last]
	moved.index = c.index
	var zero In
	p.calls[last], p.items[last] = nil, zero
	p.calls, p.items = p.calls[:last], p.items[:last]
	c.batch = nil
	if len(p.items) == 0 {
		if b.pending == p {
			b.pending = nil
		} else if i := slices.Index(b.queue, p); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
		}
		b.putBatch(p, true)
	}
	return true
}

// Close stops the batcher taking items, sends the pending batch and waits
// until every batch has been answered, or returns ctx's error when ctx ends
// first (the batches still finish). Closing twice is harmless.
func (b *Batcher[In, Out]) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	if b.pending != nil {
		b.pending.ready = true
	}
	b.dispatch()
	if b.drained == nil {
		b.drained = make(chan struct{})
	}
	drained := b.drained
	b.unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

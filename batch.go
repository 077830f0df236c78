package resilience

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Batcher turns many single calls into batch calls: each Do hands over one
// item and gets its own result, while fn is called once per batch with the
// items of many callers. A batch is sent when it holds MaxSize items, or
// when its first item has waited MaxWait; with MaxWait 0 it is sent at
// once, and items gather only while every batch slot is busy.
//
// At most MaxConcurrent batches run at once; full batches beyond that wait
// their turn, at most MaxQueued of them, and callers beyond that wait for
// room. A caller whose context ends stops waiting and gets the context's
// error; if its item has not been sent, it leaves its batch, and the other
// callers are not hurt. The batch runs with a context of the batcher's own,
// never a caller's, so one caller cancelling fails no one else.
//
// fn may fail single items by returning [ItemErrors], or the whole batch
// with any other error. A panic in fn becomes a *[PanicError] for each
// caller of that batch, and the batcher goes on working. Close sends what
// is pending and waits for the batches to finish: every item accepted is
// answered exactly once.
//
// No goroutine runs while the batcher is idle: batches run in goroutines
// of their own and waits are timers. A Batcher is safe for concurrent use.
type Batcher[In, Out any] struct {
	fn        func(ctx context.Context, batch []In) ([]Out, error)
	cfg       batchConfig
	prefilter func(In) error
	policy    Policy[[]Out]
	ctx       context.Context // batches run under it

	mu       sync.Mutex
	pending  *batch[In, Out] // filling up
	queue    []*batch[In, Out]
	running  int
	closed   bool
	room     chan struct{} // closed when a queued batch leaves the queue
	drained  chan struct{} // closed when Close finds nothing left
	batches  sync.Pool     // of *batch[In, Out]
	callPool sync.Pool     // of *batchCall[Out]
}

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
// return one result per item, in the items' order, or an error. It panics
// if fn is nil or an option is invalid.
func NewBatcher[In, Out any](fn func(ctx context.Context, batch []In) ([]Out, error), opts ...BatchOption) *Batcher[In, Out] {
	if fn == nil {
		panic("resilience: NewBatcher: fn is nil")
	}
	cfg := batchConfig{maxSize: 100, maxWait: time.Millisecond, maxConcurrent: 8, maxQueued: -1}
	for _, o := range opts {
		if o == nil {
			panic("resilience: NewBatcher: option is nil")
		}
		o.applyBatch(&cfg)
	}
	if cfg.maxQueued < 0 {
		cfg.maxQueued = cfg.maxConcurrent
	}
	b := &Batcher[In, Out]{fn: fn, cfg: cfg, ctx: context.Background()}
	if cfg.prefilter != nil {
		f, ok := cfg.prefilter.(func(In) error)
		if !ok {
			var in In
			panic(fmt.Sprintf("resilience: WithBatchPrefilter: filter is %T, but the batcher's items are %T", cfg.prefilter, in))
		}
		b.prefilter = f
	}
	if cfg.policy != nil {
		p, ok := cfg.policy.(Policy[[]Out])
		if !ok {
			var out []Out
			panic(fmt.Sprintf("resilience: WithBatchPolicy: policy is %T, but the batcher's batches return %T", cfg.policy, out))
		}
		b.policy = p
	}
	return b
}

// BatchOption configures [NewBatcher] and [NewLoader]. [Option]
// ([WithClock], [WithObserver], [WithName]) is one too.
type BatchOption interface {
	applyBatch(*batchConfig)
}

type batchConfig struct {
	maxSize       int
	maxWait       time.Duration
	maxConcurrent int
	maxQueued     int
	timeout       time.Duration
	prefilter     any // func(In) error
	policy        any // Policy[[]Out]
	common
}

type batchOptionFunc func(*batchConfig)

func (f batchOptionFunc) applyBatch(c *batchConfig) { f(c) }

func (o Option) applyBatch(c *batchConfig) { o.set(&c.common) }

// WithBatchMaxSize sets the most items a batch holds; a full batch is sent at
// once. The default is 100. It panics if n < 1.
func WithBatchMaxSize(n int) BatchOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBatchMaxSize: size must be at least 1, got %d", n))
	}
	return batchOptionFunc(func(c *batchConfig) { c.maxSize = n })
}

// WithBatchMaxWait sets how long a batch's first item waits for others before
// the batch is sent. The default is 1ms; 0 sends at once, so that items
// gather only while every batch slot is busy. It panics if d is negative.
func WithBatchMaxWait(d time.Duration) BatchOption {
	checkDuration("WithBatchMaxWait", "d", d)
	return batchOptionFunc(func(c *batchConfig) { c.maxWait = d })
}

// WithBatchMaxConcurrent sets how many batches may run at once. The default is
// 8. It panics if n < 1.
func WithBatchMaxConcurrent(n int) BatchOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBatchMaxConcurrent: batches must be at least 1, got %d", n))
	}
	return batchOptionFunc(func(c *batchConfig) { c.maxConcurrent = n })
}

// WithBatchMaxQueued sets how many full batches may wait for a slot; callers
// beyond that wait for room (or until their context ends). The default is
// MaxConcurrent. It panics if n is negative.
func WithBatchMaxQueued(n int) BatchOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithBatchMaxQueued: queue must not be negative, got %d", n))
	}
	return batchOptionFunc(func(c *batchConfig) { c.maxQueued = n })
}

// WithBatchTimeout bounds each batch call: its context ends after d. The
// default, 0, is no bound beyond the policy's. It panics if d is negative.
func WithBatchTimeout(d time.Duration) BatchOption {
	checkDuration("WithBatchTimeout", "d", d)
	return batchOptionFunc(func(c *batchConfig) { c.timeout = d })
}

// WithBatchPrefilter rejects items before they join a batch: when f returns an
// error, Do returns it at once and the item is never sent. In is inferred
// from f; [NewBatcher] panics if it is not the batcher's item type, and
// WithBatchPrefilter panics if f is nil.
func WithBatchPrefilter[In any](f func(item In) error) BatchOption {
	if f == nil {
		panic("resilience: WithBatchPrefilter: filter is nil")
	}
	return batchOptionFunc(func(c *batchConfig) { c.prefilter = f })
}

// WithBatchPolicy runs every batch call under p: a retry, a breaker, a
// timeout, or a composition of them. Out is inferred from p; [NewBatcher]
// panics if it does not match, and WithBatchPolicy panics if p is nil.
func WithBatchPolicy[Out any](p Policy[[]Out]) BatchOption {
	if p == nil {
		panic("resilience: WithBatchPolicy: policy is nil")
	}
	return batchOptionFunc(func(c *batchConfig) { c.policy = p })
}

// ItemErrors is the error fn returns when some items of a batch failed and
// others did not: it maps an item's index in the batch to its error. Items
// not in the map get their result from fn's results, which must then still
// hold one per item.
type ItemErrors map[int]error

// Error lists the failed items.
func (e ItemErrors) Error() string {
	idx := make([]int, 0, len(e))
	for i := range e {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = "item " + strconv.Itoa(i) + ": " + e[i].Error()
	}
	return "resilience: batch items failed: " + strings.Join(parts, "; ")
}

// Unwrap returns the items' errors in the order of their indexes, so that
// errors.Is and errors.As see each of them.
func (e ItemErrors) Unwrap() []error {
	idx := make([]int, 0, len(e))
	for i := range e {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	errs := make([]error, len(idx))
	for k, i := range idx {
		errs[k] = e[i]
	}
	return errs
}

type batchResultsError struct{ items, results int }

func (e *batchResultsError) Error() string {
	return fmt.Sprintf("%v: %d items, %d results", ErrBatchResults, e.items, e.results)
}
func (e *batchResultsError) Is(target error) bool { return target == ErrBatchResults }

// Do adds in to a batch and returns its result. It returns the
// prefilter's error for a rejected item, [ErrBatcherClosed] once Close has
// begun, ctx's error if ctx ends first, the item's own error from
// [ItemErrors], or the batch's error.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
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

// add puts in into the pending batch, waiting for room if the queue is
// full.
func (b *Batcher[In, Out]) add(ctx context.Context, in In) (*batchCall[Out], error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, ErrBatcherClosed
		}
		if b.pending == nil || len(b.pending.items) < b.cfg.maxSize || len(b.queue) < b.cfg.maxQueued || b.running < b.cfg.maxConcurrent {
			break
		}
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
	}
	c := b.getCall()
	p := b.pending
	if p == nil || len(p.items) == b.cfg.maxSize {
		if p != nil { // full and stuck: it waits in the queue
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
	b.mu.Unlock()
	return c, nil
}

// expire marks a batch whose first item has waited MaxWait as ready.
func (b *Batcher[In, Out]) expire(p *batch[In, Out], use uint64) {
	b.mu.Lock()
	if b.pending == p && p.use == use {
		p.ready = true
		b.dispatch()
	}
	b.mu.Unlock()
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

// next takes the batch to send next, if any. b.mu is held.
func (b *Batcher[In, Out]) next() *batch[In, Out] {
	if len(b.queue) > 0 {
		p := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		if b.room != nil {
			close(b.room)
			b.room = nil
		}
		b.seal(p)
		return p
	}
	if p := b.pending; p != nil && (p.ready || b.closed) && len(p.items) > 0 {
		b.pending = nil
		b.seal(p)
		return p
	}
	return nil
}

// seal marks a batch's calls as sent: from now on they wait for fn.
func (b *Batcher[In, Out]) seal(p *batch[In, Out]) {
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
	for _, c := range p.calls {
		c.batch = nil
	}
}

// run sends batches until none is ready, then gives its slot back.
func (b *Batcher[In, Out]) run(p *batch[In, Out]) {
	for p != nil {
		b.send(p)
		b.mu.Lock()
		b.putBatch(p)
		p = b.next()
		if p == nil {
			b.running--
			if b.closed && b.running == 0 && b.drained != nil {
				close(b.drained)
				b.drained = nil
			}
		}
		b.mu.Unlock()
	}
}

// send calls fn for one batch and answers each of its callers.
func (b *Batcher[In, Out]) send(p *batch[In, Out]) {
	outs, err := b.call(p.items)
	var itemErrs ItemErrors
	if errors.As(err, &itemErrs) {
		err = nil
	}
	if err == nil && len(outs) != len(p.items) {
		err = &batchResultsError{items: len(p.items), results: len(outs)}
	}
	for i, c := range p.calls {
		switch {
		case err != nil:
			c.err = err
		case itemErrs[i] != nil:
			c.err = itemErrs[i]
		default:
			c.out = outs[i]
		}
		c.done <- struct{}{}
	}
}

// call runs fn under the policy and the batch timeout, turning a panic
// into an error.
func (b *Batcher[In, Out]) call(items []In) (outs []Out, err error) {
	ctx := b.ctx
	if b.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = b.cfg.withTimeout(ctx, b.cfg.timeout, ErrTimeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, newPanicError(r)
		}
	}()
	if b.policy != nil {
		return b.policy.Execute(ctx, func(ctx context.Context) ([]Out, error) { return b.fn(ctx, items) })
	}
	return b.fn(ctx, items)
}

// withdraw takes a call whose caller gave up out of its batch, if the
// batch has not been sent; it reports whether it did.
func (b *Batcher[In, Out]) withdraw(c *batchCall[Out]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
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
		if p.stop != nil {
			p.stop()
			p.stop = nil
		}
		if b.pending == p {
			b.pending = nil
		} else if i := indexOf(b.queue, p); i >= 0 {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
		}
		b.putBatch(p)
	}
	return true
}

func indexOf[T comparable](s []T, v T) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Close stops the batcher taking items: Do returns [ErrBatcherClosed] from
// now on. It sends the pending batch at once and waits until every batch
// has been answered, or until ctx ends, when it returns ctx's error (the
// batches still finish in the background). Closing twice is harmless.
func (b *Batcher[In, Out]) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	if b.pending != nil && len(b.pending.items) > 0 {
		b.pending.ready = true
	}
	b.dispatch()
	if b.room != nil {
		close(b.room) // waiters for room find the batcher closed
		b.room = nil
	}
	if b.running == 0 && b.pending == nil && len(b.queue) == 0 {
		b.mu.Unlock()
		return nil
	}
	if b.drained == nil {
		b.drained = make(chan struct{})
	}
	drained := b.drained
	b.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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

func (b *Batcher[In, Out]) putBatch(p *batch[In, Out]) {
	clear(p.items)
	clear(p.calls)
	p.items, p.calls, p.ready, p.stop = p.items[:0], p.calls[:0], false, nil
	p.use++
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

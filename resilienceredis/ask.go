package resilienceredis

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A decision never keeps its caller past its deadline. With a client that
// honours its context's deadline (a *redis.Client with
// ContextTimeoutEnabled), the script runs on the caller's goroutine: the
// client bounds its reads and writes by the deadline, and its waits (for a
// connection of its pool, a dial, a retry's backoff) end when the
// context's Done channel closes, which it does at the deadline. Any other
// client may wait longer than its context says (by default go-redis bounds
// reads by its ReadTimeout, 3 s, whatever the context), so the script runs
// in a worker goroutine and the caller stops waiting at the deadline.
//
// A request carries one decision: its context, its arguments, and, for a
// worker, the answer. A request whose decision ended before its deadline
// and before its caller's context is used again, with its timer, channels
// and argument slices, so that a decision allocates only what the client
// does; any other is left to the collector once nobody uses it.
type request struct {
	ctx     deadlineCtx
	l       *Limiter
	keys    [1]string
	args    [4]any
	d       decision
	err     error
	done    chan struct{} // a worker's answer is there
	expired chan struct{} // closed at the deadline
	expiry  *time.Timer   // closes expired at the deadline
}

var requests = sync.Pool{New: func() any {
	r := &request{done: make(chan struct{}, 1), expired: make(chan struct{})}
	r.expiry = time.AfterFunc(time.Hour, func() { close(r.expired) })
	r.expiry.Stop()
	return r
}}

// release returns r to the pool if its timer was stopped before it
// closed expired.
func (r *request) release() {
	if !r.expiry.Stop() {
		return
	}
	r.ctx, r.l, r.keys, r.args, r.err = deadlineCtx{}, nil, [1]string{}, [4]any{}, nil
	requests.Put(r)
}

// honoursDeadlines reports whether the client bounds every wait of a
// command by its context. Only a *redis.Client is known to: with
// ContextTimeoutEnabled it sets its connections' deadlines from the
// context and waits for a connection no longer than the context lets it.
func honoursDeadlines(c Scripter) bool {
	rc, ok := c.(*redis.Client)
	return ok && rc.Options().ContextTimeoutEnabled
}

// ask runs the script within the timeout: it returns the answer, the
// caller's context error when that context ended first (its deadline
// included, though its own timer may not have fired yet), or an error of
// the client or context.DeadlineExceeded when the timeout passed with no
// answer.
func (l *Limiter) ask(ctx context.Context, key string, n int, maxWait int64) (decision, error) {
	r := requests.Get().(*request)
	deadline := time.Now().Add(l.timeout)
	callers := false // whether the deadline is the caller's
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callers = d, true
	}
	r.l = l
	r.keys[0] = key
	if l.prefix != "" {
		r.keys[0] = l.prefix + key
	}
	r.args = [4]any{l.intervalArg, l.tauArg, n, maxWait}
	r.ctx = deadlineCtx{Context: ctx, deadline: deadline, done: r.expired}
	parent := ctx.Done()
	if parent != nil && (callers || !l.direct) {
		// The caller's context ends at the deadline or before, or a
		// worker's caller watches it and the deadline itself: its channel
		// is the request's.
		r.ctx.done = parent
	}
	r.expiry.Reset(time.Until(deadline))
	if l.direct {
		d, err := l.run(&r.ctx, r.keys[:], r.args[:])
		r.release()
		if err != nil && !time.Now().Before(deadline) {
			// Late, as a worker's caller would have been told.
			if callers {
				return decision{}, &callerEnded{context.DeadlineExceeded}
			}
			return decision{}, context.DeadlineExceeded
		}
		return d, err
	}
	workers.start(r)
	select {
	case <-r.done:
		d, err := r.d, r.err
		r.release()
		return d, err
	case <-parent:
		return decision{}, ctx.Err()
	case <-r.expired:
		if callers {
			return decision{}, &callerEnded{context.DeadlineExceeded}
		}
		return decision{}, context.DeadlineExceeded
	}
}

// A request for a worker goes to a parked one, so that it runs on a grown
// stack: a new goroutine starts on a small stack that the client's call
// grows, copying it, every time. A worker parks again when it has answered.
// Parked workers are kept on a stack, the most recently parked on top; one
// that has been parked for a whole sweep period (workerIdle) ends at the
// next sweep, and the sweeper runs only while a worker is parked. Requests
// are never queued: with no parked worker, a request starts a new one, so
// a client that hangs delays no other decision.
type worker struct {
	pool  *workerPool
	reqs  chan *request // the next request; nil ends the worker
	epoch uint64        // pool.epoch when it parked
}

// workerIdle is the sweep period: a worker parked for that long ends within
// another.
const workerIdle = time.Second

// workerPool keeps the parked workers.
type workerPool struct {
	mu      sync.Mutex
	idle    []*worker // parked, the longest parked first
	epoch   uint64    // sweeps so far
	armed   bool      // the sweeper will run
	sweeper *time.Timer
}

// workers is the pool of every limiter.
var workers workerPool

// start runs r in a parked worker, or in a new one when none is parked.
func (p *workerPool) start(r *request) {
	p.mu.Lock()
	if k := len(p.idle); k > 0 {
		w := p.idle[k-1]
		p.idle[k-1] = nil
		p.idle = p.idle[:k-1]
		p.mu.Unlock()
		w.reqs <- r
		return
	}
	p.mu.Unlock()
	w := &worker{pool: p, reqs: make(chan *request, 1)}
	go w.loop(r)
}

// loop runs r, then each request handed to the worker, until it is told to
// end.
func (w *worker) loop(r *request) {
	for r != nil {
		r.d, r.err = r.l.run(&r.ctx, r.keys[:], r.args[:])
		r.done <- struct{}{}
		w.pool.park(w)
		r = <-w.reqs
	}
}

// park puts w on the stack of parked workers, arming the sweeper.
func (p *workerPool) park(w *worker) {
	p.mu.Lock()
	w.epoch = p.epoch
	p.idle = append(p.idle, w)
	if !p.armed {
		p.armed = true
		if p.sweeper == nil {
			p.sweeper = time.AfterFunc(workerIdle, p.sweep)
		} else {
			p.sweeper.Reset(workerIdle)
		}
	}
	p.mu.Unlock()
}

// sweep ends the workers parked since before the previous sweep, and comes
// again while any worker is parked.
func (p *workerPool) sweep() {
	p.mu.Lock()
	p.epoch++
	k := 0
	for k < len(p.idle) && p.idle[k].epoch+1 < p.epoch {
		k++
	}
	stale := p.take(k)
	p.armed = len(p.idle) > 0
	if p.armed {
		p.sweeper.Reset(workerIdle)
	}
	p.mu.Unlock()
	for _, w := range stale {
		w.reqs <- nil
	}
}

// take removes the k longest parked workers and returns them. p.mu is
// held.
func (p *workerPool) take(k int) []*worker {
	if k == 0 {
		return nil
	}
	stale := append([]*worker(nil), p.idle[:k]...)
	n := copy(p.idle, p.idle[k:])
	clear(p.idle[n:])
	p.idle = p.idle[:n]
	return stale
}

// stop ends every parked worker, for tests that check that nothing is left
// running, and returns how many it ended.
func (p *workerPool) stop() int {
	p.mu.Lock()
	stale := p.take(len(p.idle))
	if p.armed {
		p.sweeper.Stop()
		p.armed = false
	}
	p.mu.Unlock()
	for _, w := range stale {
		w.reqs <- nil
	}
	return len(stale)
}

// deadlineCtx is the context of a request: its parent's, with the
// decision's deadline and a Done channel that closes by then, kept in the
// request so that it costs nothing. The client sets its connections'
// deadlines from it and ends its waits when it is done.
type deadlineCtx struct {
	context.Context
	deadline time.Time
	done     <-chan struct{}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// callerEnded is the caller's own context error, found by the limiter
// before the context said so: not a fault of Redis.
type callerEnded struct{ error }

func (e *callerEnded) Unwrap() error { return e.error }

package resilienceredis

import (
	"sync"
	"time"
)

// A request for a worker goes to a parked one, so that it runs on a grown
// stack: a new goroutine starts on a small stack that the client's call
// grows, copying it, every time. A worker parks again when it has answered.
// Parked workers are kept on a stack, the most recently parked on top; one
// that has been parked for a whole sweep period (workerIdle) ends at the
// next sweep, and the sweeper runs only while a worker is parked. Requests
// are never queued: with no parked worker, a request starts a new one, so
// a client that hangs delays no other decision.

// worker is a goroutine that runs requests, parked between two.
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

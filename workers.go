package resilience

import (
	"sync"
	"time"
)

// A default-mode Timeout runs fn in a goroutine other than the caller's. A
// fresh goroutine per call starts with a small stack, and a realistic call
// (a composition, a client that derives a context of its own) outgrows it,
// so the runtime grows and copies the stack on every call: most of the cost
// of the call. Parked workers keep the stack they grew: a call hands its
// task to one, and the worker parks again when the task is done.
//
// The pool is bounded: at most maxIdleWorkers park at once, and the others
// exit when their task is done. A worker that has been parked for a whole
// sweep period (workerIdle) exits at the next sweep, so a burst leaves
// nothing behind for long. Tasks are never queued: with no parked worker a
// call starts a new goroutine, so a slow or abandoned fn delays no other
// call.

// task is one run of fn that a worker executes.
type task interface{ run() }

const (
	maxIdleWorkers = 1024
	workerIdle     = time.Second
)

// worker is a parked goroutine, woken by a task on its channel; a nil task
// tells it to exit.
type worker struct {
	tasks chan task
	epoch uint64 // pool.epoch when it parked
}

var pool struct {
	mu      sync.Mutex
	idle    []*worker // a stack: the longest parked at the bottom
	epoch   uint64    // sweeps so far
	sweeper *time.Timer
	armed   bool // sweeper will fire
}

// startTask runs t on a parked worker, or on a new goroutine when none is
// parked or the caller is inside a testing/synctest bubble (whose goroutines
// must not outlive the bubble, and whose fake time a worker from outside
// would not see).
func startTask(t task) {
	if inBubble() {
		go t.run()
		return
	}
	pool.mu.Lock()
	if n := len(pool.idle); n > 0 {
		w := pool.idle[n-1]
		pool.idle[n-1] = nil
		pool.idle = pool.idle[:n-1]
		pool.mu.Unlock()
		w.tasks <- t
		return
	}
	pool.mu.Unlock()
	w := &worker{tasks: make(chan task, 1)}
	go w.loop(t)
}

// loop runs tasks until the pool lets the worker go. A task whose fn calls
// runtime.Goexit ends the worker there, which the pool never notices: a
// worker is in the pool only while it is parked.
func (w *worker) loop(t task) {
	for t != nil {
		t.run()
		if !w.park() {
			return
		}
		t = <-w.tasks
	}
}

// park puts w on the idle stack, and reports false if the stack is full.
func (w *worker) park() bool {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if len(pool.idle) >= maxIdleWorkers {
		return false
	}
	w.epoch = pool.epoch
	pool.idle = append(pool.idle, w)
	if !pool.armed {
		pool.armed = true
		if pool.sweeper == nil {
			pool.sweeper = time.AfterFunc(workerIdle, sweepWorkers)
		} else {
			pool.sweeper.Reset(workerIdle)
		}
	}
	return true
}

// sweepWorkers lets go of the workers that have been parked since before
// the previous sweep, a whole period at least, and comes again while any
// worker is parked.
func sweepWorkers() {
	pool.mu.Lock()
	pool.epoch++
	n := 0
	for n < len(pool.idle) && pool.idle[n].epoch+1 < pool.epoch {
		n++
	}
	stale := release(n)
	pool.armed = len(pool.idle) > 0
	if pool.armed {
		pool.sweeper.Reset(workerIdle)
	}
	pool.mu.Unlock()
	for _, w := range stale {
		w.tasks <- nil
	}
}

// release removes the n longest parked workers from the idle stack and
// returns them. pool.mu is held.
func release(n int) []*worker {
	if n == 0 {
		return nil
	}
	stale := append([]*worker(nil), pool.idle[:n]...)
	rest := copy(pool.idle, pool.idle[n:])
	clear(pool.idle[rest:])
	pool.idle = pool.idle[:rest]
	return stale
}

// stopIdleWorkers tells every parked worker to exit and returns how many it
// stopped, for tests that check that nothing is left running. A worker
// that is busy parks again when its task is done.
func stopIdleWorkers() int {
	pool.mu.Lock()
	stale := release(len(pool.idle))
	if pool.sweeper != nil {
		pool.sweeper.Stop()
	}
	pool.armed = false
	pool.mu.Unlock()
	for _, w := range stale {
		w.tasks <- nil
	}
	return len(stale)
}

// idleWorkers returns the number of parked workers.
func idleWorkers() int {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	return len(pool.idle)
}

// inBubble reports whether the calling goroutine is inside a
// testing/synctest bubble. There the clock is fake: it starts at midnight
// UTC, 2000-01-01, and its readings carry no monotonic reading, so the time
// since epoch (a real reading, taken when the package was loaded) is
// measured on the wall clock and comes out negative, or decades long if the
// machine's clock was set before 2000. A real reading is measured on the
// monotonic clock, and is neither. TestInBubble fails if a Go release
// changes this.
func inBubble() bool {
	e := time.Since(epoch)
	return e < 0 || e > bubbleGap
}

package resilience

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A default-mode Timeout runs fn in a goroutine other than the caller's. A
// fresh goroutine per call starts with a small stack, and a realistic call
// (a composition, a client that derives a context of its own) outgrows it,
// so the runtime grows and copies the stack on every call: most of the cost
// of the call. Parked workers keep the stack they grew: a call hands its
// task to one, and the worker parks again when the task is done.
//
// The pool is bounded: at most maxIdleWorkers park at once (and one more
// in the lock-free slot of each stack), and the others exit when their
// task is done. A worker that has been parked for a whole sweep period
// (workerIdle) exits at the next sweep, so a burst leaves nothing behind
// for long. Tasks are never queued: with no parked worker a call starts a
// new goroutine, so a slow or abandoned fn delays no other call. Parked
// workers are kept in a few stacks, each with its own lock, so that
// callers on different processors seldom meet.
//
// A worker runs with the profiler labels of the call that started it, not
// of the call it serves.

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
	home  uint32 // the stack it parks on, unless that one is full
}

// idleStack is one stack of parked workers: the longest parked at the
// bottom, and the latest in last, a slot taken and filled with one atomic
// operation and no lock, which is where a steady stream of calls finds its
// worker.
type idleStack struct {
	last atomic.Pointer[worker]
	mu   sync.Mutex
	idle []*worker
	_    [32]byte // keep stacks apart in the cache
}

var pool struct {
	once   sync.Once
	stacks []idleStack
	epoch  atomic.Uint64 // sweeps so far
	armed  atomic.Bool   // the sweeper will fire

	mu      sync.Mutex // arms the sweeper
	sweeper *time.Timer
}

func idleStacks() []idleStack {
	pool.once.Do(func() {
		n := 1
		for n < 2*runtime.GOMAXPROCS(0) && n < 64 {
			n *= 2
		}
		pool.stacks = make([]idleStack, n)
	})
	return pool.stacks
}

// startTask runs t on a parked worker, or on a new goroutine when none is
// parked. hint, any number that differs from caller to caller (see
// timedCall.hint), says where to look first. The caller must not be inside
// a testing/synctest bubble (see inBubble), whose goroutines must not
// outlive it and whose fake time a worker from outside would not see.
func startTask(t task, hint uintptr) {
	stacks := idleStacks()
	n := uint32(len(stacks))
	first := uint32(hint) & (n - 1)
	for i := range n {
		s := &stacks[(first+i)&(n-1)]
		if s.last.Load() != nil {
			if w := s.last.Swap(nil); w != nil {
				w.tasks <- t
				return
			}
		}
	}
	for i := range n {
		s := &stacks[(first+i)&(n-1)]
		s.mu.Lock()
		if k := len(s.idle); k > 0 {
			w := s.idle[k-1]
			s.idle[k-1] = nil
			s.idle = s.idle[:k-1]
			s.mu.Unlock()
			w.tasks <- t
			return
		}
		s.mu.Unlock()
	}
	w := &worker{tasks: make(chan task, 1), home: first}
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

// park puts w on an idle stack, and reports false if it is full.
func (w *worker) park() bool {
	stacks := idleStacks()
	s := &stacks[w.home&uint32(len(stacks)-1)]
	w.epoch = pool.epoch.Load()
	if !s.last.CompareAndSwap(nil, w) {
		s.mu.Lock()
		if len(s.idle) >= maxIdleWorkers/len(stacks) {
			s.mu.Unlock()
			return false
		}
		s.idle = append(s.idle, w)
		s.mu.Unlock()
	}
	if !pool.armed.Load() {
		armSweeper()
	}
	return true
}

// armSweeper makes sure a sweep will come.
func armSweeper() {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.armed.Load() {
		return
	}
	pool.armed.Store(true)
	if pool.sweeper == nil {
		pool.sweeper = time.AfterFunc(workerIdle, sweepWorkers)
		return
	}
	pool.sweeper.Reset(workerIdle)
}

// sweepWorkers lets go of the workers that have been parked since before
// the previous sweep, a whole period at least, and comes again while any
// worker is parked. It disarms itself before it looks, so that a worker
// parking meanwhile arms it again.
func sweepWorkers() {
	pool.mu.Lock()
	pool.armed.Store(false)
	epoch := pool.epoch.Add(1)
	pool.mu.Unlock()
	parked := 0
	for i := range pool.stacks {
		s := &pool.stacks[i]
		if w := s.last.Swap(nil); w != nil {
			// Kept if it parked in the last period and the slot is still
			// free; let go otherwise.
			if w.epoch+1 >= epoch && s.last.CompareAndSwap(nil, w) {
				parked++
			} else {
				w.tasks <- nil
			}
		}
		s.mu.Lock()
		k := 0
		for k < len(s.idle) && s.idle[k].epoch+1 < epoch {
			k++
		}
		stale := s.release(k)
		parked += len(s.idle)
		s.mu.Unlock()
		for _, w := range stale {
			w.tasks <- nil
		}
	}
	if parked > 0 {
		armSweeper()
	}
}

// release removes the k longest parked workers from the stack and returns
// them. s.mu is held.
func (s *idleStack) release(k int) []*worker {
	if k == 0 {
		return nil
	}
	stale := append([]*worker(nil), s.idle[:k]...)
	rest := copy(s.idle, s.idle[k:])
	clear(s.idle[rest:])
	s.idle = s.idle[:rest]
	return stale
}

// stopIdleWorkers tells every parked worker to exit and returns how many it
// stopped, for tests that check that nothing is left running. A worker
// that is busy parks again when its task is done.
func stopIdleWorkers() int {
	pool.mu.Lock()
	if pool.sweeper != nil {
		pool.sweeper.Stop()
	}
	pool.armed.Store(false)
	pool.mu.Unlock()
	stopped := 0
	stacks := idleStacks()
	for i := range stacks {
		s := &stacks[i]
		if w := s.last.Swap(nil); w != nil {
			w.tasks <- nil
			stopped++
		}
		s.mu.Lock()
		stale := s.release(len(s.idle))
		s.mu.Unlock()
		for _, w := range stale {
			w.tasks <- nil
		}
		stopped += len(stale)
	}
	return stopped
}

// idleWorkers returns the parked workers.
func idleWorkers() []*worker {
	var out []*worker
	stacks := idleStacks()
	for i := range stacks {
		s := &stacks[i]
		if w := s.last.Load(); w != nil {
			out = append(out, w)
		}
		s.mu.Lock()
		out = append(out, s.idle...)
		s.mu.Unlock()
	}
	return out
}

// inBubble reports whether the calling goroutine is inside a
// testing/synctest bubble. There the clock is fake: it starts at midnight
// UTC, 2000-01-01, and its readings carry no monotonic reading, so the time
// since epoch (a real reading, taken when the package was loaded) is
// measured on the wall clock and comes out negative (or decades long, on a
// machine whose clock was set decades before 2000). A real reading is
// measured on the monotonic clock, and is neither. TestInBubble fails if a Go release
// changes this.
func inBubble() bool {
	e := time.Since(epoch)
	return e < 0 || e > bubbleGap
}

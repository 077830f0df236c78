// Package workers runs tasks on parked goroutines, so that a task runs on a
// stack grown by the tasks before it.
//
// A goroutine starts on a small stack, and a realistic task (a composition
// of policies, a client that derives a context of its own) outgrows it: the
// runtime then grows and copies the stack on every call, which is most of
// the cost of handing a call to another goroutine. A parked worker keeps the
// stack it grew: a task goes to one, and the worker parks again when the
// task is done.
//
// The pool is bounded and short-lived. At most maxIdle workers park at once,
// and the others exit when their task is done. A worker parked for a whole
// sweep period (idlePeriod) exits at the next sweep, so a burst leaves
// nothing behind for long, and a test that checks for leaked goroutines
// with go.uber.org/goleak's default retries finds none once its tasks have
// returned. Tasks are never queued: with no parked worker a task gets a new
// goroutine, so a slow or abandoned task delays no other.
//
// # Bubbles
//
// A goroutine started inside a testing/synctest bubble belongs to it, and a
// channel or timer made there may not be used from outside (the runtime
// ends the process). So the pool never hands a task from inside a bubble to
// a worker, and never makes a worker inside one: such a task gets a new
// goroutine of its own, in the caller's bubble, which exits with the task.
// Whether the caller is in a bubble is told by what the testing/synctest
// documentation promises: a bubble's clock starts at midnight UTC,
// 2000-01-01, and moves only as the bubble's goroutines wait, so its
// readings lie before the time this package was initialised, which is
// outside any bubble (see [InBubble]).
package workers

import (
	"context"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// Task is work for a worker.
type Task interface{ Run() }

const (
	maxIdle    = 1024
	idlePeriod = 20 * time.Millisecond
)

// started is the wall clock when the package was initialised, with no
// monotonic reading, so that comparisons with it use the wall clock.
// Package initialisation runs before any test, so outside every bubble.
var started = time.Now().Round(0)

// InBubble reports whether now, a reading of time.Now that the calling
// goroutine has just made, was made inside a testing/synctest bubble: it
// lies before the package was initialised, as every reading of a bubble's
// clock does (the clock starts at 2000-01-01). A reading outside a bubble
// lies before only if the machine's wall clock was set back past the
// program's start; that costs a new goroutine for the task, nothing else.
// A bubble whose fake clock has been moved on past the program's start
// (more than two decades of fake waits) would be taken for the outside.
func InBubble(now time.Time) bool { return now.Before(started) }

// Go runs t on a parked worker, or on a new goroutine when none is parked
// or when now, a reading of time.Now the caller has just made, was made
// inside a testing/synctest bubble (see [InBubble]).
//
// t runs with the profiler labels of labels, the caller's context (as
// runtime/pprof.Do and WithLabels put them there), so that a CPU profile
// charges the task's work to the request that asked for it.
func Go(labels context.Context, now time.Time, t Task) {
	if InBubble(now) {
		go runOne(job{labels, t})
		return
	}
	stacks := idleStacks()
	n := uint32(len(stacks))
	first := rand.Uint32() & (n - 1)
	for i := range n {
		s := &stacks[(first+i)&(n-1)]
		if s.last.Load() != nil {
			if w := s.last.Swap(nil); w != nil {
				w.tasks <- job{labels, t}
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
			w.tasks <- job{labels, t}
			return
		}
		s.mu.Unlock()
	}
	w := &worker{tasks: make(chan job, 1), home: first}
	go w.loop(job{labels, t})
}

// job is a task and the context whose labels it runs with.
type job struct {
	labels context.Context
	t      Task
}

// runOne runs a task on a goroutine of its own, which ends with it.
func runOne(j job) {
	pprof.SetGoroutineLabels(j.labels)
	j.t.Run()
}

// worker is a parked goroutine, woken by a job on its channel; a job with
// no task tells it to exit.
type worker struct {
	tasks chan job
	epoch uint64 // pool.epoch when it parked
	home  uint32 // the stack it parks on, unless that one is full
}

// idleStack is one stack of parked workers: the longest parked at the
// bottom, and the latest in last, a slot taken and filled with one atomic
// operation and no lock, where a steady stream of calls finds its worker.
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

// loop runs tasks until the pool lets the worker go. A task that calls
// runtime.Goexit ends the worker there, which the pool never notices: a
// worker is in the pool only while it is parked.
func (w *worker) loop(j job) {
	for j.t != nil {
		pprof.SetGoroutineLabels(j.labels)
		j.t.Run()
		pprof.SetGoroutineLabels(context.Background())
		j = job{} // a parked worker holds nothing of the call it served
		if !w.park() {
			return
		}
		j = <-w.tasks
	}
}

// park puts w on an idle stack, and reports false if it is full.
func (w *worker) park() bool {
	stacks := idleStacks()
	s := &stacks[w.home&uint32(len(stacks)-1)]
	w.epoch = pool.epoch.Load()
	if !s.last.CompareAndSwap(nil, w) {
		s.mu.Lock()
		if len(s.idle) >= maxIdle/len(stacks) {
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

// armSweeper makes sure a sweep will come. Only workers call it, so the
// sweeper's timer is made outside every bubble.
func armSweeper() {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.armed.Load() {
		return
	}
	pool.armed.Store(true)
	if pool.sweeper == nil {
		pool.sweeper = time.AfterFunc(idlePeriod, sweep)
		return
	}
	pool.sweeper.Reset(idlePeriod)
}

// sweep lets go of the workers that have been parked since before the
// previous sweep, a whole period at least, and comes again while any
// worker is parked. It disarms itself before it looks, so that a worker
// parking meanwhile arms it again.
func sweep() {
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
				w.tasks <- job{}
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
			w.tasks <- job{}
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

// Idle returns the number of parked workers.
func Idle() int {
	n := 0
	stacks := idleStacks()
	for i := range stacks {
		s := &stacks[i]
		if s.last.Load() != nil {
			n++
		}
		s.mu.Lock()
		n += len(s.idle)
		s.mu.Unlock()
	}
	return n
}

package resilience

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// TestInBubble pins what inBubble relies on: inside a testing/synctest
// bubble a reading of the clock carries no monotonic reading, and outside
// one it does. If a Go release changes that, this fails, and Timeout would
// otherwise start parked workers from inside bubbles.
func TestInBubble(t *testing.T) {
	if inBubble() {
		t.Fatal("inBubble() = true outside a bubble")
	}
	synctest.Test(t, func(t *testing.T) {
		if !inBubble() {
			t.Fatal("inBubble() = false inside a synctest bubble")
		}
	})
}

type taskFunc func()

func (f taskFunc) run() { f() }

// goid returns the calling goroutine's id, to tell workers apart.
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.Atoi(string(buf[:bytes.IndexByte(buf, ' ')]))
	return id
}

// waitUntil yields until cond holds: the workers it waits for are running
// already, so no real time is waited for beyond their next step.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); runtime.Gosched() {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("gave up waiting: %s", what)
		}
	}
}

// runOn starts a task and returns the id of the goroutine that ran it.
func runOn(t *testing.T) int {
	t.Helper()
	got := make(chan int, 1)
	startTask(taskFunc(func() { got <- goid() }), 0)
	return <-got
}

func TestWorkerPool(t *testing.T) {
	t.Cleanup(func() { stopIdleWorkers() })

	t.Run("a parked worker runs the next task", func(t *testing.T) {
		stopIdleWorkers()
		first := runOn(t)
		waitUntil(t, "the worker parks", func() bool { return len(idleWorkers()) > 0 })
		if second := runOn(t); second != first {
			t.Errorf("second task ran on goroutine %d, want the parked worker %d", second, first)
		}
	})

	t.Run("idle workers exit after a whole sweep period", func(t *testing.T) {
		stopIdleWorkers()
		runOn(t)
		waitUntil(t, "the worker parks", func() bool { return len(idleWorkers()) > 0 })
		parked := idleWorkers()
		// The pool's own sweeper stays out of the way meanwhile.
		pool.mu.Lock()
		pool.sweeper.Stop()
		pool.armed.Store(true)
		pool.mu.Unlock()
		defer pool.armed.Store(false)
		sweepWorkers() // parked during this period: kept
		for _, w := range parked {
			if !slices.Contains(idleWorkers(), w) {
				t.Fatal("a worker parked for less than a period was let go")
			}
		}
		sweepWorkers() // parked for the whole period since: let go
		for _, w := range parked {
			if slices.Contains(idleWorkers(), w) {
				t.Fatal("a worker parked for a whole period is still parked")
			}
		}
	})

	t.Run("stopIdleWorkers stops every parked worker", func(t *testing.T) {
		block := make(chan struct{})
		started := make(chan struct{})
		for range 4 {
			startTask(taskFunc(func() { started <- struct{}{}; <-block }), 0)
		}
		for range 4 {
			<-started
		}
		close(block)
		waitUntil(t, "the workers park", func() bool { return len(idleWorkers()) >= 4 })
		if n := stopIdleWorkers(); n < 4 {
			t.Errorf("stopIdleWorkers() = %d, want at least 4", n)
		}
		if n := len(idleWorkers()); n != 0 {
			t.Errorf("idleWorkers() = %d after stopIdleWorkers, want 0", n)
		}
	})

	t.Run("a task that calls Goexit ends its worker only", func(t *testing.T) {
		stopIdleWorkers()
		done := make(chan struct{})
		startTask(taskFunc(func() { defer close(done); runtime.Goexit() }), 0)
		<-done
		if id := runOn(t); id == 0 {
			t.Error("no task ran after a Goexit")
		}
	})

	t.Run("inside a bubble every call gets a goroutine of its own", func(t *testing.T) {
		stopIdleWorkers()
		synctest.Test(t, func(t *testing.T) {
			p := Timeout[int](time.Second)
			if _, err := p.Execute(t.Context(), func(context.Context) (int, error) { return 1, nil }); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if n := len(idleWorkers()); n != 0 {
				t.Errorf("idleWorkers() = %d after a call in a bubble, want 0", n)
			}
		})
	})
}

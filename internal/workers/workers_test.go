package workers

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type taskFunc func()

func (f taskFunc) Run() { f() }

// goid returns the calling goroutine's id, to tell workers apart.
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.Atoi(string(buf[:bytes.IndexByte(buf, ' ')]))
	return id
}

// stopSweeper keeps the pool's own sweeper out of a test's way, so that
// the test sweeps by hand, and lets go of every parked worker at the end.
func stopSweeper(t *testing.T) {
	pool.mu.Lock()
	if pool.sweeper != nil {
		pool.sweeper.Stop()
	}
	pool.armed.Store(true) // no worker arms it while the test runs
	pool.mu.Unlock()
	t.Cleanup(func() {
		pool.armed.Store(false)
		sweep()
		sweep()
	})
}

// runOn runs a task on the pool and returns the goroutine that ran it.
func runOn() int {
	got := make(chan int, 1)
	Go(context.Background(), time.Now(), taskFunc(func() { got <- goid() }))
	return <-got
}

// parked waits until n workers are parked: a worker parks right after its
// task returns, so this waits for a step that is under way, no longer.
func parked(t *testing.T, n int) {
	t.Helper()
	for i := 0; Idle() < n; i++ {
		if i > 1e7 {
			t.Fatalf("Idle() = %d, want %d", Idle(), n)
		}
		runtime.Gosched()
	}
}

func TestPool(t *testing.T) {
	stopSweeper(t)

	first := runOn()
	parked(t, 1)
	if second := runOn(); second != first {
		t.Errorf("second task ran on goroutine %d, want the parked worker %d", second, first)
	}
	parked(t, 1)

	sweep() // parked during this period: kept
	if Idle() != 1 {
		t.Fatalf("Idle() = %d after one sweep, want 1: a worker parked for less than a period was let go", Idle())
	}
	sweep() // parked for a whole period since: let go
	if Idle() != 0 {
		t.Fatalf("Idle() = %d after two sweeps, want 0", Idle())
	}
	if third := runOn(); third == first {
		t.Errorf("a task ran on goroutine %d, which was let go", third)
	}
}

// TestGoexit: a task that calls runtime.Goexit ends its worker only; the
// next task gets another.
func TestGoexit(t *testing.T) {
	stopSweeper(t)
	done := make(chan struct{})
	Go(context.Background(), time.Now(), taskFunc(func() { defer close(done); runtime.Goexit() }))
	<-done
	if Idle() != 0 {
		t.Errorf("Idle() = %d, want 0: the worker that exited was parked", Idle())
	}
	runOn()
}

// TestBubble: inside a testing/synctest bubble a task runs on a goroutine
// of the bubble, which ends with it, never on a worker of the pool and
// never parking: the bubble's test ends (it would report a deadlock with
// a goroutine of its own left), and a caller outside is never handed
// anything made inside.
func TestBubble(t *testing.T) {
	stopSweeper(t)
	outside := runOn()
	parked(t, 1)
	synctest.Test(t, func(t *testing.T) {
		if !InBubble(time.Now()) {
			t.Fatal("InBubble(time.Now()) = false inside a bubble")
		}
		for range 3 {
			ran := make(chan int)
			Go(context.Background(), time.Now(), taskFunc(func() {
				time.Sleep(time.Second) // the bubble's fake time
				ran <- goid()
			}))
			if id := <-ran; id == outside {
				t.Fatal("a task from inside a bubble ran on a worker from outside")
			}
		}
		synctest.Wait()
		if Idle() != 1 {
			t.Errorf("Idle() = %d, want 1: the worker parked before the bubble", Idle())
		}
	})
	if InBubble(time.Now()) {
		t.Fatal("InBubble(time.Now()) = true outside a bubble")
	}
	if id := runOn(); id != outside {
		t.Errorf("a task outside ran on goroutine %d, want the parked worker %d", id, outside)
	}
}

// TestIdleWorkersExit: with goleak's default options, a leak check right
// after a burst of tasks finds nothing: the workers exit on their own.
func TestIdleWorkersExit(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	for range 8 {
		Go(context.Background(), time.Now(), taskFunc(func() { started <- struct{}{}; <-release }))
	}
	for range 8 {
		<-started
	}
	close(release)
	parked(t, 8)
	goleak.VerifyNone(t)
}

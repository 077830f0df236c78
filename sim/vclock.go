package main

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// epoch is the wall-clock instant that virtual time 0 stands for. Any fixed
// instant would do; a fixed one keeps runs reproducible.
var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// virtualClock is a clock.Clock whose Now is the event loop's virtual time.
// The breaker and the retry budget read it for cool-downs, windows and
// per-second floors. A retry policy waits on it through Timer (or Sleep or
// After): called from a task of the scheduler, the wait suspends the task
// until the loop reaches its end, then hands back a timer that has already
// fired. Nothing sleeps in real time.
//
// Waits the simulation cannot model (AfterFunc, tickers) and any
// wait from outside a task panic: reaching one would mean a component
// waits in a way the loop would not see, which must not pass unnoticed.
type virtualClock struct {
	e *engine
	s *scheduler // nil: no task may wait
}

var _ clock.Clock = virtualClock{}

// realClock makes the already-fired timers handed back after a virtual wait.
var realClock = clock.New()

func (c virtualClock) Now() time.Time                  { return epoch.Add(c.e.now) }
func (c virtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c virtualClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Sleep suspends the running task for d of virtual time.
func (c virtualClock) Sleep(d time.Duration) { c.wait("Sleep", d) }

// Timer suspends the running task for d of virtual time, then returns a
// timer that has fired: the caller's select on its channel goes through.
func (c virtualClock) Timer(d time.Duration) *clock.Timer {
	c.wait("Timer", d)
	return realClock.Timer(0)
}

// After suspends the running task for d of virtual time, then returns a
// channel holding the time.
func (c virtualClock) After(d time.Duration) <-chan time.Time {
	c.wait("After", d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

func (c virtualClock) wait(method string, d time.Duration) {
	if c.s == nil || c.s.current == nil {
		panic("sim: virtual clock: " + method + " called outside a simulated task")
	}
	c.s.suspend(yield{kind: yieldSleep, d: d})
}

func (virtualClock) AfterFunc(time.Duration, func()) *clock.Timer {
	panic(errWait("AfterFunc"))
}
func (virtualClock) Tick(time.Duration) <-chan time.Time { panic(errWait("Tick")) }
func (virtualClock) Ticker(time.Duration) *clock.Ticker  { panic(errWait("Ticker")) }

// WithDeadline suspends the running task until d in virtual time, then
// returns a context that has already reached its deadline: the library's
// retry waits are deadline contexts of its clock, and this is the one wait
// the simulation models.
func (c virtualClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	c.wait("WithDeadline", d.Sub(c.Now()))
	return context.WithDeadline(parent, time.Time{})
}
func (virtualClock) WithTimeout(context.Context, time.Duration) (context.Context, context.CancelFunc) {
	panic(errWait("WithTimeout"))
}

func errWait(method string) string {
	return "sim: virtual clock: " + method + " is not simulated; waits must be events of the loop"
}

// scheduler runs tasks (one per request) as goroutines that take turns with
// the event loop: at any moment exactly one of them, or the loop, runs. The
// loop resumes a task and blocks until the task yields back, saying what it
// waits for (virtual time to pass, the outcome of a call, or nothing: it
// ended). So the library's policies run their real code, in goroutines as
// they would in a program, and still the run is a pure function of its
// seed: nothing runs concurrently and every hand-over is a channel send,
// which orders memory as a lock would.
type scheduler struct {
	yields  chan yield
	current *task // the running task; nil while the loop runs
}

type task struct {
	resume chan error // what the task waited for: a call's outcome, or nil
}

type yieldKind uint8

const (
	yieldSleep yieldKind = iota // wait d of virtual time
	yieldCall                   // make a call; resume with its outcome
	yieldDone                   // the task ended with err
)

type yield struct {
	kind yieldKind
	d    time.Duration
	err  error
}

func newScheduler() *scheduler { return &scheduler{yields: make(chan yield)} }

// start runs body as a new task until it first yields, and returns what it
// yielded.
func (s *scheduler) start(body func() error) (*task, yield) {
	t := &task{resume: make(chan error)}
	go func() {
		<-t.resume
		err := body()
		s.yields <- yield{kind: yieldDone, err: err}
	}()
	return t, s.switchTo(t, nil)
}

// switchTo resumes t with v and returns what t yields next.
func (s *scheduler) switchTo(t *task, v error) yield {
	s.current = t
	t.resume <- v
	y := <-s.yields
	s.current = nil
	return y
}

// suspend yields y to the loop from the running task and returns what the
// loop resumes it with.
func (s *scheduler) suspend(y yield) error {
	t := s.current
	s.yields <- y
	return <-t.resume
}

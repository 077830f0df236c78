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
// The breaker and the retry budget only read the time (for cool-downs,
// windows and per-second floors); every wait in the simulation is an event
// in the loop, never a goroutine blocked on a timer. So the waiting methods
// panic: reaching one would mean a component slept, which the loop cannot
// model and must not hide.
type virtualClock struct{ e *engine }

var _ clock.Clock = virtualClock{}

func (c virtualClock) Now() time.Time                  { return epoch.Add(c.e.now) }
func (c virtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c virtualClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

func (virtualClock) After(time.Duration) <-chan time.Time { panic(errWait("After")) }
func (virtualClock) AfterFunc(time.Duration, func()) *clock.Timer {
	panic(errWait("AfterFunc"))
}
func (virtualClock) Sleep(time.Duration)                 { panic(errWait("Sleep")) }
func (virtualClock) Tick(time.Duration) <-chan time.Time { panic(errWait("Tick")) }
func (virtualClock) Ticker(time.Duration) *clock.Ticker  { panic(errWait("Ticker")) }
func (virtualClock) Timer(time.Duration) *clock.Timer    { panic(errWait("Timer")) }
func (virtualClock) WithDeadline(context.Context, time.Time) (context.Context, context.CancelFunc) {
	panic(errWait("WithDeadline"))
}
func (virtualClock) WithTimeout(context.Context, time.Duration) (context.Context, context.CancelFunc) {
	panic(errWait("WithTimeout"))
}

func errWait(method string) string {
	return "sim: virtual clock: " + method + " would wait in real time; waits must be events of the loop"
}

package resilience_test

import (
	"math"
	"runtime"
	"time"

	"github.com/benbjohnson/clock"
)

// runtimeGoexit ends the calling goroutine, as t.FailNow does.
func runtimeGoexit() { runtime.Goexit() }

func nan() float64 { return math.NaN() }

// manualClock is a clock whose time moves only when told, at once. Unlike
// clock.Mock's Add it never sleeps; it serves code that only reads the time.
type manualClock struct {
	clock.Clock // timers are not for this clock
	now         time.Time
}

func newManualClock() *manualClock { return &manualClock{Clock: clock.NewMock(), now: time.Unix(0, 0)} }

func (c *manualClock) Now() time.Time                  { return c.now }
func (c *manualClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }
func (c *manualClock) Add(d time.Duration)             { c.now = c.now.Add(d) }

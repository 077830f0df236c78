// Package rate offers the API of golang.org/x/time/rate on top of
// resilience.RateLimiter, so that that library's own tests check ours. It
// is written for this module's tests, not for use.
//
// The methods that take a time (AllowN, ReserveN, TokensAt, DelayFrom,
// CancelAt) run the limiter on a clock set to that time; the others read
// the real clock. The package also offers reserveN and the Reservation's
// ok and timeToAct, the seams x/time/rate's tests reserve through, over
// the public ReserveN and Delay, and wait, their seam to wait on fake
// timers, over WaitN.
package rate

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

// Limit is a rate in events a second.
type Limit float64

// Inf is the rate with no limit, resilience.RateUnlimited.
const Inf = Limit(resilience.RateUnlimited)

// InfDuration is the delay of a reservation that is not OK.
const InfDuration = time.Duration(math.MaxInt64)

// Every converts an interval between events to a Limit; 0 or less is Inf.
func Every(interval time.Duration) Limit {
	if interval <= 0 {
		return Inf
	}
	return 1 / Limit(interval.Seconds())
}

// Limiter is a resilience.RateLimiter with the time as an argument. The
// RateLimiter is made at the limiter's first use, at the time of that use:
// x/time/rate's bucket is full from its first use, ours from its making.
type Limiter struct {
	at    sync.Mutex // serialises the calls that set the clock
	clk   *settable
	once  sync.Once
	made  *resilience.RateLimiter
	rate  Limit
	burst int
}

// NewLimiter returns a limiter of rate r and burst b whose bucket starts
// full.
func NewLimiter(r Limit, b int) *Limiter {
	return &Limiter{clk: &settable{}, rate: r, burst: b}
}

// lim returns the RateLimiter, made at the clock's time if it is not yet.
func (lim *Limiter) lim() *resilience.RateLimiter {
	lim.once.Do(func() {
		lim.made = resilience.NewRateLimiter(float64(lim.rate), lim.burst, resilience.WithClock(lim.clk))
	})
	return lim.made
}

// settable reads the real clock, or the time one call set; its deadlines
// are real timers, or the fake timers of one call's newTimer.
type settable struct {
	set      atomic.Pointer[time.Time]
	newTimer func(d time.Duration) (<-chan time.Time, func() bool, func())
}

func (c *settable) Now() time.Time {
	if t := c.set.Load(); t != nil {
		return *t
	}
	return time.Now()
}

func (c *settable) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if c.newTimer == nil {
		return context.WithTimeout(parent, d.Sub(c.Now()))
	}
	// As x/time/rate's wait does with the timer its tests give it: make
	// the timer, move the fake time on to the next timer, then wait.
	ch, stop, advance := c.newTimer(d.Sub(c.Now()))
	advance()
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
			stop()
		}
	}()
	return ctx, cancel
}

// atTime runs f with the limiter's clock at t.
func (lim *Limiter) atTime(t time.Time, f func()) {
	lim.at.Lock()
	defer lim.at.Unlock()
	lim.clk.set.Store(&t)
	defer lim.clk.set.Store(nil)
	f()
}

// Limit returns the limiter's rate as it was given.
func (lim *Limiter) Limit() Limit { return lim.rate }

// Burst returns the limiter's burst.
func (lim *Limiter) Burst() int { return lim.burst }

// Tokens returns the tokens in the bucket now.
func (lim *Limiter) Tokens() float64 { return lim.lim().Tokens() }

// TokensAt returns the tokens in the bucket at t.
func (lim *Limiter) TokensAt(t time.Time) (n float64) {
	lim.atTime(t, func() { n = lim.lim().Tokens() })
	return n
}

// Allow reports whether a token could be taken now, and takes it.
func (lim *Limiter) Allow() bool { return lim.lim().Allow() }

// AllowN reports whether n tokens could be taken at t, and takes them.
func (lim *Limiter) AllowN(t time.Time, n int) (ok bool) {
	lim.atTime(t, func() { ok = lim.lim().AllowN(n) })
	return ok
}

// Reserve books a token now.
func (lim *Limiter) Reserve() *Reservation { return lim.ReserveN(time.Now(), 1) }

// ReserveN books n tokens at t.
func (lim *Limiter) ReserveN(t time.Time, n int) *Reservation {
	r := lim.reserveN(t, n, InfDuration)
	return &r
}

// reserveN is the seam x/time/rate's tests reserve through: ReserveN at t,
// refused when the tokens would come more than maxFutureReserve after t.
// It fills in ok and timeToAct, which those tests read.
func (lim *Limiter) reserveN(t time.Time, n int, maxFutureReserve time.Duration) Reservation {
	r := Reservation{lim: lim}
	lim.atTime(t, func() {
		r.r = lim.lim().ReserveN(n)
		if !r.r.OK() {
			return
		}
		d := r.r.Delay()
		if d > maxFutureReserve {
			r.r.Cancel()
			return
		}
		r.ok, r.timeToAct = true, t.Add(d)
	})
	return r
}

// Wait takes a token, waiting for it.
func (lim *Limiter) Wait(ctx context.Context) error { return lim.lim().Wait(ctx) }

// WaitN takes n tokens, waiting for them.
func (lim *Limiter) WaitN(ctx context.Context, n int) error { return lim.lim().WaitN(ctx, n) }

// wait is the seam x/time/rate's tests wait through: WaitN at t, on the
// fake timers of newTimer.
//
//lint:ignore U1000 called by x/time/rate's tests, which the runner adds to the package
func (lim *Limiter) wait(ctx context.Context, n int, t time.Time, newTimer func(d time.Duration) (<-chan time.Time, func() bool, func())) (err error) {
	lim.atTime(t, func() {
		lim.clk.newTimer = newTimer
		defer func() { lim.clk.newTimer = nil }()
		err = lim.lim().WaitN(ctx, n)
	})
	return err
}

// Reservation is tokens booked by ReserveN.
type Reservation struct {
	lim       *Limiter
	r         *resilience.Reservation
	ok        bool
	timeToAct time.Time
}

// OK reports whether the tokens were booked.
func (r *Reservation) OK() bool { return r.ok }

// Delay returns the wait from now until the tokens are there.
func (r *Reservation) Delay() time.Duration { return r.DelayFrom(time.Now()) }

// DelayFrom returns the wait from t until the tokens are there.
func (r *Reservation) DelayFrom(t time.Time) (d time.Duration) {
	if !r.ok {
		return InfDuration
	}
	r.lim.atTime(t, func() { d = r.r.Delay() })
	return d
}

// Cancel gives the tokens back now.
func (r *Reservation) Cancel() { r.CancelAt(time.Now()) }

// CancelAt gives the tokens back at t.
func (r *Reservation) CancelAt(t time.Time) {
	if r.ok {
		r.lim.atTime(t, r.r.Cancel)
	}
}

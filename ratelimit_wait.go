package resilience

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/gcra"

	"github.com/faf87a20/resilience/internal/sat"
)

// RateLimitError is the error of a call refused by a [RateLimiter] or a
// [KeyedRateLimiter]. It matches [ErrRateLimited] and [ErrRefused], and
// context.DeadlineExceeded too when the tokens would have come after the
// context's deadline. It is a [RetryHint].
type RateLimitError struct {
	after    time.Duration
	why      rateLimitReason
	n, burst int // for the message when n can never be had
}

type rateLimitReason uint8

const (
	rateLimitRefused  rateLimitReason = iota // no token now, and no waiting for it
	rateLimitDeadline                        // the token comes after ctx's deadline
	rateLimitTooMany                         // n is more than the burst
	rateLimitSpent                           // a rate of 0 has no tokens left
	rateLimitKeys                            // a keyed limiter holds as many keys as it may
	rateLimitFar                             // the tokens would come more than gcra.MaxAhead from now
)

// Error describes the refusal: "resilience: rate limited", followed by a
// reason when there is more to say.
func (e *RateLimitError) Error() string {
	const prefix = "resilience: rate limited"
	switch e.why {
	case rateLimitDeadline:
		return prefix + ": the tokens would come after the context's deadline"
	case rateLimitTooMany:
		return fmt.Sprintf("%s: %d tokens asked for, more than the burst of %d", prefix, e.n, e.burst)
	case rateLimitSpent:
		return prefix + ": a rate of 0 has no tokens left"
	case rateLimitKeys:
		return prefix + ": the limiter holds as many keys as it may"
	case rateLimitFar:
		return prefix + ": the tokens would come more than 36 years from now"
	}
	return prefix
}

// Is reports whether target is ErrRateLimited or ErrRefused, or
// context.DeadlineExceeded for a refusal because of the context's deadline.
func (e *RateLimitError) Is(target error) bool {
	return target == ErrRateLimited || target == ErrRefused || (e.why == rateLimitDeadline && target == context.DeadlineExceeded)
}

// RetryAfter returns the time from the refusal until the tokens are there,
// or 0 when they never will be.
func (e *RateLimitError) RetryAfter() time.Duration { return e.after }

// reason says why a call for n tokens that come in wait was refused, when
// it may wait no longer than limit.
func (g *limits) reason(wait int64, n int, limit time.Duration) rateLimitReason {
	switch {
	case int64(n) > g.MaxN:
		return rateLimitTooMany
	case g.Frozen:
		return rateLimitSpent
	case wait > int64(limit):
		return rateLimitRefused
	case wait > gcra.MaxAhead:
		return rateLimitFar
	}
	return rateLimitDeadline
}

// refusal returns the error of a call for n tokens refused because they
// come in wait, more than limit allows, or never.
func (g *limits) refusal(wait int64, n int, limit time.Duration) *RateLimitError {
	return g.refusalFor(g.reason(wait, n, limit), wait, n)
}

// refusalFor returns the error of a call for n tokens refused for why,
// with a hint of wait where waiting would help.
func (g *limits) refusalFor(why rateLimitReason, wait int64, n int) *RateLimitError {
	switch why {
	case rateLimitTooMany:
		return &RateLimitError{why: why, n: n, burst: g.Burst}
	case rateLimitSpent:
		return &RateLimitError{why: why}
	}
	return &RateLimitError{after: time.Duration(max(wait, 0)), why: why}
}

// observeRefusal reports err to the observer, if there is one, and returns
// it.
func (c *common) observeRefusal(ctx context.Context, err *RateLimitError) error {
	if c.reports() {
		c.observe(ctx, Event{Kind: EventRefused, Component: c.route.kind, Err: err, Wait: err.after})
	}
	return err
}

// Wait takes a token, waiting for it as long as it takes, as WaitN(ctx, 1)
// does.
func (l *RateLimiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN takes n tokens, waiting until they are there, however long. It
// returns nil once it has them; ctx's error if ctx ends first (the tokens
// then go back); and at once a [*RateLimitError] when the tokens would
// come after ctx's deadline, more than 2^60 ns from now, or never. It
// panics if n is negative.
func (l *RateLimiter) WaitN(ctx context.Context, n int) error {
	checkN("RateLimiter.WaitN", n)
	return l.waitN(ctx, n, sat.Max)
}

// waitN takes n tokens, waiting for them up to limit and within ctx's
// deadline.
func (l *RateLimiter) waitN(ctx context.Context, n int, limit time.Duration) error {
	if int64(n) > l.MaxN {
		l.refusedN.Add(1)
		return l.observeRefusal(ctx, l.refusal(0, n, limit))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cost := int64(n) * l.Interval
	t := l.nowNs(&l.common)
	budget := l.budget(ctx, limit)
	for {
		tat := l.loadTat()
		next, wait, ok := l.Take(tat, t, cost, budget)
		if !ok {
			l.refusedN.Add(1)
			return l.observeRefusal(ctx, l.refusal(wait, n, limit))
		}
		if next == tat || l.tat.CompareAndSwap(tat, next) {
			if wait <= 0 {
				return nil
			}
			// If ctx ends first, the tokens go back unless a later booking
			// has counted on them being gone (then tat has moved on).
			return l.sleepBooked(ctx, wait, func() { l.tat.CompareAndSwap(next, next-cost) })
		}
	}
}

// budget returns the longest a call may wait for its tokens: limit, or
// less when ctx's deadline comes sooner.
func (c *common) budget(ctx context.Context, limit time.Duration) int64 {
	if d, ok := ctx.Deadline(); ok {
		return int64(min(limit, c.until(d)))
	}
	return int64(limit)
}

// sleepBooked waits the wait of a booking. If ctx ends first it calls
// giveBack and returns ctx's error. It reports the wait to the observer.
func (c *common) sleepBooked(ctx context.Context, wait int64, giveBack func()) error {
	var start time.Time
	if c.reports() {
		start = c.now()
		c.observe(ctx, Event{Kind: EventWaitStarted, Component: c.route.kind})
	}
	var err error
	if !c.sleep(ctx, time.Duration(wait)) {
		giveBack()
		err = ctx.Err()
	}
	if c.reports() {
		c.observe(ctx, Event{Kind: EventWaitEnded, Component: c.route.kind, Err: err, Wait: c.since(start)})
	}
	return err
}

// Enter takes a token, as the limiter's [Guard]: at once, or within
// [WithRateLimitWait]'s wait, or it refuses the call with a
// [*RateLimitError] (see WaitN).
func (l *RateLimiter) Enter(ctx context.Context) (done func(err error), err error) {
	ticket, err := l.enter(ctx, true)
	if err != nil {
		return nil, err
	}
	return l.doneFunc(ctx, l.origin, ticket), nil
}

func (l *RateLimiter) enter(ctx context.Context, _ bool) (uint64, error) {
	t := l.nowNs(&l.common)
	for {
		tat := l.loadTat()
		next, wait, ok := l.Take(tat, t, l.Interval, 0)
		if !ok {
			return l.enterSlow(ctx, wait)
		}
		if l.tat.CompareAndSwap(tat, next) {
			return l.admitted(l.origin), nil
		}
	}
}

// enterSlow refuses a call whose token comes in wait, or lets it wait.
func (l *RateLimiter) enterSlow(ctx context.Context, wait int64) (uint64, error) {
	if l.wait == 0 {
		l.refusedN.Add(1)
		return 0, l.observeRefusal(ctx, l.refusal(wait, 1, 0))
	}
	if err := l.waitN(ctx, 1, l.wait); err != nil {
		return 0, err
	}
	return l.admitted(l.origin), nil
}

func (l *RateLimiter) exit(ctx context.Context, ticket uint64, err error, report bool) {
	if report {
		l.callEnded(ctx, l.origin, ticket, err)
	}
}

func (l *RateLimiter) reportsOutcomes() bool { return l.outcomes }

// admitted returns the ticket of a call a limiter admitted: the time since
// origin, when an OutcomeObserver wants the call's duration.
func (c *common) admitted(origin time.Time) uint64 {
	if !c.outcomes {
		return 0
	}
	return uint64(c.since(origin))
}

// callEnded reports the outcome of a call a limiter admitted to an
// OutcomeObserver.
func (c *common) callEnded(ctx context.Context, origin time.Time, ticket uint64, err error) {
	if c.outcomes {
		d := c.since(origin) - time.Duration(ticket)
		c.observe(ctx, Event{Kind: EventCallEnded, Component: c.route.kind, Err: err, Duration: d})
	}
}

// doneFunc returns the done function of a call a limiter admitted.
func (c *common) doneFunc(ctx context.Context, origin time.Time, ticket uint64) func(error) {
	if !c.outcomes {
		return ignoreOutcome
	}
	return func(err error) { c.callEnded(ctx, origin, ticket, err) }
}

// ignoreOutcome is the done function of a guard that needs no outcome.
var ignoreOutcome = func(error) {}

// Reserve books a token, as ReserveN(1) does.
func (l *RateLimiter) Reserve() *Reservation { return l.ReserveN(1) }

// ReserveN books n tokens for the caller, who may use them once the
// reservation's Delay has passed, or give them back with Cancel. It never
// waits; the reservation is not OK when the tokens would come more than
// 2^60 ns from now, or never. It reports nothing to the observer. It panics
// if n is negative.
func (l *RateLimiter) ReserveN(n int) *Reservation {
	checkN("RateLimiter.ReserveN", n)
	r := &Reservation{l: l}
	if int64(n) > l.MaxN {
		return r
	}
	cost := int64(n) * l.Interval
	t := l.nowNs(&l.common)
	for {
		tat := l.loadTat()
		next, wait, ok := l.Take(tat, t, cost, math.MaxInt64)
		if !ok {
			return r
		}
		if next == tat || l.tat.CompareAndSwap(tat, next) {
			r.ok, r.next, r.cost, r.act = true, next, cost, t+max(wait, 0)
			return r
		}
	}
}

// Reservation is tokens booked by [RateLimiter.ReserveN]. It is safe for
// concurrent use.
type Reservation struct {
	l               *RateLimiter
	ok              bool
	next, cost, act int64 // tat after the booking, its cost, when the tokens are there
	cancelled       atomic.Bool
}

// OK reports whether the tokens were booked. A reservation that is not OK
// holds nothing.
func (r *Reservation) OK() bool { return r.ok }

// Delay returns how long from now until the tokens are there: 0 once they
// are, and the largest Duration for a reservation that is not OK.
func (r *Reservation) Delay() time.Duration {
	if !r.ok {
		return sat.Max
	}
	return time.Duration(max(r.act-r.l.nowNs(&r.l.common), 0))
}

// Cancel gives the tokens back, unless their time has passed or tokens
// were booked after these (which counted on these being gone). It does
// nothing the second time, nor for a reservation that is not OK.
func (r *Reservation) Cancel() {
	if !r.ok || r.cost == 0 || r.cancelled.Swap(true) || r.act < r.l.nowNs(&r.l.common) {
		return
	}
	r.l.tat.CompareAndSwap(r.next, r.next-r.cost)
}

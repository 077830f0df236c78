package main

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// standinBudget is a stand-in retry budget in the manner of Finagle's
// RetryBudget: each request deposits ratio of a token, each retry withdraws
// one, and a floor of perSecond retries a second is always allowed.
type standinBudget struct {
	c         clock.Clock
	ratio     float64
	perSecond float64
	tokens    float64
	last      time.Time
}

func newStandinBudget(c clock.Clock, ratio, perSecond float64) *standinBudget {
	return &standinBudget{c: c, ratio: ratio, perSecond: perSecond, last: c.Now()}
}

func (b *standinBudget) refill() {
	now := b.c.Now()
	b.tokens = min(b.tokens+now.Sub(b.last).Seconds()*b.perSecond, 1e9)
	b.last = now
}

func (b *standinBudget) onRequest() { b.refill(); b.tokens += b.ratio }

func (b *standinBudget) allowRetry() bool {
	b.refill()
	if b.tokens < 1-1e-9 { // forgive rounding: ten deposits of 0.1 make one token
		return false
	}
	b.tokens--
	return true
}

// standinBreaker is a stand-in circuit breaker: it opens after threshold
// consecutive failures, half-opens after coolDown, admits one probe and closes
// when it succeeds.
type standinBreaker struct {
	c         clock.Clock
	threshold int
	coolDown  time.Duration
	fails     int
	open      bool
	until     time.Time
	probing   bool
}

type standinOpenError struct{ wait time.Duration }

func (e standinOpenError) Error() string             { return resilience.ErrBreakerOpen.Error() }
func (e standinOpenError) Unwrap() error             { return resilience.ErrBreakerOpen }
func (e standinOpenError) RetryAfter() time.Duration { return e.wait }

func (b *standinBreaker) Enter(context.Context) (func(error), error) {
	if b.open {
		now := b.c.Now()
		if now.Before(b.until) || b.probing {
			return nil, standinOpenError{max(0, b.until.Sub(now))}
		}
		b.probing = true
	}
	return b.done, nil
}

func (b *standinBreaker) done(err error) {
	if err == nil {
		b.fails, b.open, b.probing = 0, false, false
		return
	}
	b.fails++
	if b.probing || b.fails >= b.threshold {
		b.open, b.probing = true, false
		b.until = b.c.Now().Add(b.coolDown)
	}
}

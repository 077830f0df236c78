package resilience

import (
	"context"
	"time"
)

// State returns the breaker's state now. An open breaker whose cool-down
// is over reports, and becomes, half-open.
func (b *Breaker) State() BreakerState {
	v := b.view.Load()
	state := v.state
	if state == BreakerOpen && b.coolDownOver(v) {
		now := b.cfg.now()
		b.change(context.Background(), func() any {
			from, gen := b.m.state, b.m.gen
			b.m.advance(now)
			b.commit(from, gen)
			state = b.m.state
			return nil
		})
	}
	b.deliver() // changes a panicking hook left behind
	return state
}

// Trip opens the breaker now, for its cool-down, whatever its state. On an
// open breaker it starts the cool-down again; that is no change of state.
func (b *Breaker) Trip() {
	now := b.cfg.now()
	b.change(context.Background(), func() any { return b.trip(now, false) })
}

// Isolate opens the breaker until Reset: no cool-down ends it.
func (b *Breaker) Isolate() {
	b.change(context.Background(), func() any { return b.trip(time.Time{}, true) })
}

// Reset closes the breaker and forgets past failures, whatever its state.
func (b *Breaker) Reset() {
	b.change(context.Background(), func() any {
		from := b.m.state
		b.m.close()
		b.publish(from)
		return nil
	})
}

// trip opens the breaker at now: for its next cool-down, or until Reset.
// It returns what the cool-down backoff panicked with, if it did. b.mu is
// held.
func (b *Breaker) trip(now time.Time, isolate bool) (panicked any) {
	from, gen := b.m.state, b.m.gen
	var d time.Duration
	if !isolate {
		d, panicked = b.nextCoolDown()
	}
	b.m.open(now, d, isolate)
	b.commit(from, gen)
	return panicked
}

// nextCoolDown returns the cool-down of the next trip. A panic of the
// backoff is returned, so that the breaker opens (for the last cool-down)
// before it goes on. b.mu is held.
func (b *Breaker) nextCoolDown() (d time.Duration, panicked any) {
	d = b.cfg.coolDown
	if b.cfg.growth == nil {
		return d, nil
	}
	n, prev := b.m.trips+1, b.m.coolDown
	if n > 1 {
		d = prev
	}
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	if g, ok := b.cfg.growth.Delay(n, prev); ok {
		d = max(g, 0)
	}
	return d, nil
}

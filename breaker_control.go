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

// BreakerMetrics is a snapshot of a [Breaker]'s counts.
type BreakerMetrics struct {
	State               BreakerState
	Isolated            bool    // open until Reset
	ConsecutiveFailures int     // in the closed state, or when it last opened
	WindowCalls         int     // outcomes in the failure-rate window, if any
	WindowFailures      int     // failures among them
	FailureRate         float64 // WindowFailures / WindowCalls, 0 without calls
	Probes              int     // probes in flight, half-open
	Trips               int     // times the breaker opened since it was made
}

// Metrics returns a snapshot of the breaker's counts.
func (b *Breaker) Metrics() BreakerMetrics {
	b.State() // an open breaker whose cool-down is over becomes half-open
	now := b.cfg.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	m := BreakerMetrics{
		State:               b.m.state,
		Isolated:            b.m.isolated,
		ConsecutiveFailures: int(b.closed.failures.Load()),
		Probes:              b.m.probes,
		Trips:               b.m.allTrips,
	}
	switch {
	case b.closed.ring != nil:
		m.WindowCalls, m.WindowFailures = b.closed.ring.Counts()
	case b.times != nil:
		m.WindowCalls, m.WindowFailures = b.times.Counts(now.Sub(b.base))
	}
	if m.WindowCalls > 0 {
		m.FailureRate = float64(m.WindowFailures) / float64(m.WindowCalls)
	}
	return m
}

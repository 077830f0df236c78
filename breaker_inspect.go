package resilience

import (
	"fmt"
	"time"
)

// BreakerSnapshot is what a [Breaker] is at one moment: its state and
// counts, as [Breaker.Snapshot] returns them and as a [Snapshot] of a
// registered breaker holds them.
type BreakerSnapshot struct {
	State               BreakerState `json:"state"`               // "closed", "open", "half-open" in JSON
	Isolated            bool         `json:"isolated"`            // open until Reset
	ConsecutiveFailures int          `json:"consecutiveFailures"` // in the closed state, or when it last opened
	WindowCalls         int          `json:"windowCalls"`         // outcomes in the failure-rate window, if any
	WindowFailures      int          `json:"windowFailures"`      // failures among them
	FailureRate         float64      `json:"failureRate"`         // WindowFailures / WindowCalls, 0 without calls
	Probes              int          `json:"probes"`              // probes in flight, half-open
	Trips               int          `json:"trips"`               // times the breaker opened since it was made
	// HalfOpenIn is the time until the cool-down of an open breaker ends;
	// 0 when it is not open, or isolated.
	HalfOpenIn time.Duration `json:"halfOpenIn"`
}

// Snapshot returns the breaker's state and counts now. An open breaker
// whose cool-down is over becomes half-open first, as with State. It is
// safe for concurrent use.
func (b *Breaker) Snapshot() BreakerSnapshot {
	b.State() // an open breaker whose cool-down is over becomes half-open
	now := b.cfg.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	m := BreakerSnapshot{
		State:               b.m.state,
		Isolated:            b.m.isolated,
		ConsecutiveFailures: int(b.closed.failures.Load()),
		Probes:              b.m.probes,
		Trips:               b.m.allTrips,
	}
	if b.m.state == BreakerOpen && !b.m.isolated {
		m.HalfOpenIn = max(b.m.until.Sub(now), 0)
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

// Inspect fills s with the breaker's state, as [Inspector] says: "closed",
// "open", "half-open" or "isolated"; open and isolated are critical,
// half-open a warning. A closed breaker that refused calls lately stays
// "closed". It returns an error matching [ErrZeroGuard] for a zero Breaker.
func (b *Breaker) Inspect(s *Snapshot) error {
	s.Kind = KindBreaker
	if b.view.Load() == nil {
		return zeroGuard(KindBreaker, b)
	}
	m := b.Snapshot()
	s.State, s.Breaker = m.State.String(), &m
	switch {
	case m.Isolated:
		s.State, s.Health = "isolated", HealthCritical
	case m.State == BreakerOpen:
		s.Health = HealthCritical
	case m.State == BreakerHalfOpen:
		s.Health = HealthWarning
	}
	return nil
}

// MarshalText returns the state's String: "closed", "open", "half-open".
func (s BreakerState) MarshalText() ([]byte, error) {
	if s > BreakerHalfOpen {
		return nil, fmt.Errorf("resilience: BreakerState.MarshalText: unknown state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText sets s from its String: "closed", "open" or "half-open".
// It returns an error for any other text.
func (s *BreakerState) UnmarshalText(text []byte) error {
	for _, st := range [...]BreakerState{BreakerClosed, BreakerOpen, BreakerHalfOpen} {
		if string(text) == st.String() {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("resilience: BreakerState.UnmarshalText: unknown state %q", text)
}

// eventRoute returns where the breaker's events go (see routed).
func (b *Breaker) eventRoute() *route { return b.cfg.route }

package resilience

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
	Refused             int64   // calls refused since it was made
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
		Refused:             b.refused.Load(),
	}
	switch {
	case b.closed.ring != nil:
		m.WindowCalls, m.WindowFailures = b.closed.ring.counts()
	case b.times != nil:
		m.WindowCalls, m.WindowFailures = b.times.counts(now.Sub(b.base))
	}
	if m.WindowCalls > 0 {
		m.FailureRate = float64(m.WindowFailures) / float64(m.WindowCalls)
	}
	return m
}

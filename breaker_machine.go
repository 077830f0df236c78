package resilience

import (
	"strconv"
	"time"
)

// BreakerState is the state of a [Breaker].
type BreakerState uint8

const (
	// BreakerClosed lets every call through and counts failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen refuses every call until its cool-down ends.
	BreakerOpen
	// BreakerHalfOpen lets a bounded number of probe calls through.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}

// machine is a breaker's state machine, written as plain transitions in
// the manner of x/time/rate's advance(t): every method takes the time it
// happens at and reads no clock, takes no lock, touches no atomic and
// calls no user code. The Breaker holds its lock around them and
// publishes what they decide; tests feed them times directly.
//
// Every change of state counts the generation up, so that outcomes of
// calls admitted before it can be told apart and ignored.
type machine struct {
	state     BreakerState
	gen       uint64
	isolated  bool          // open until reset, whatever the time
	until     time.Time     // end of the cool-down, open
	probes    int           // probes in flight, half-open
	successes int           // probe successes, half-open
	trips     int           // trips since the breaker last closed
	allTrips  int           // trips since it was made
	coolDown  time.Duration // the last cool-down

	lastFailure    time.Time // closed, with a failure expiry
	hasLastFailure bool
}

// coolDownOver reports whether an open breaker's cool-down has ended at
// now. A clock that goes back delays it.
func (m *machine) coolDownOver(now time.Time) bool {
	return m.state == BreakerOpen && !m.isolated && !now.Before(m.until)
}

// advance moves an open breaker whose cool-down is over to half-open, and
// reports whether it did.
func (m *machine) advance(now time.Time) bool {
	if !m.coolDownOver(now) {
		return false
	}
	m.gen++
	m.state, m.probes, m.successes = BreakerHalfOpen, 0, 0
	return true
}

// admit decides on a call at now: admitted (as a probe when half-open, if
// fewer than maxProbes are in flight) or refused.
func (m *machine) admit(now time.Time, maxProbes int) (admitted, probe bool) {
	m.advance(now)
	switch m.state {
	case BreakerClosed:
		return true, false
	case BreakerHalfOpen:
		if m.probes < maxProbes {
			m.probes++
			return true, true
		}
	}
	return false, false
}

// open trips the breaker at now for a cool-down of d, or until reset when
// isolate is set.
func (m *machine) open(now time.Time, d time.Duration, isolate bool) {
	m.gen++
	m.state, m.isolated = BreakerOpen, isolate
	m.trips++
	m.allTrips++
	m.probes, m.successes = 0, 0 // probes in flight belong to an earlier generation now
	m.until = time.Time{}
	if !isolate {
		m.coolDown = d
		m.until = now.Add(d) // time.Time does not overflow for any Duration
	}
}

// close closes the breaker and forgets its past.
func (m *machine) close() {
	m.gen++
	m.state, m.isolated = BreakerClosed, false
	m.trips, m.coolDown = 0, 0
	m.probes, m.successes = 0, 0
	m.lastFailure, m.hasLastFailure = time.Time{}, false
}

// current reports whether a ticket of generation gen (as a ticket holds
// it) belongs to the present state.
func (m *machine) current(gen uint64) bool { return gen == m.gen&genMask }

// probeEnded records the outcome of a probe of generation gen, and
// reports whether it reopens the breaker (its caller then calls open with
// the cool-down). failed and counts are as judged by the breaker.
func (m *machine) probeEnded(gen uint64, failed, counts bool, successesToClose int) (reopen bool) {
	if !m.current(gen) || m.state != BreakerHalfOpen {
		return false
	}
	m.probes--
	switch {
	case !counts:
	case failed:
		return true
	default:
		m.successes++
		if m.successes >= successesToClose {
			m.close()
		}
	}
	return false
}

// failureExpired records a failure at now for the rule of failures with no
// error-free period of expiry between them, and reports whether the
// previous failure is too old to count with this one. A clock that goes
// back expires nothing.
func (m *machine) failureExpired(now time.Time, expiry time.Duration) bool {
	expired := m.hasLastFailure && now.Sub(m.lastFailure) > expiry
	m.lastFailure, m.hasLastFailure = now, true
	return expired
}

// rateTrips reports whether failures among calls outcomes reach rate,
// once minCalls are counted.
func rateTrips(rate float64, minCalls, calls, failures int) bool {
	return calls >= minCalls && float64(failures) >= rate*float64(calls)
}

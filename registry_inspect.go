package resilience

import (
	"fmt"
	"sync/atomic"
)

// Inspector is a guard a [Registry] can hold: one that says what it is
// now. Every guard kind of the package implements it, each in its own
// file, and so may a guard of another package: the registry, the status
// page of resiliencehttp and the gauges of resilienceotel then show it
// with no change of theirs (the gauges know the sections of this
// package's kinds; another kind shows its health and whether it sheds).
type Inspector interface {
	// Inspect fills s with the guard's state, reading nothing the calls
	// it guards depend on, and without blocking them for long. s comes
	// with what the registry knows set: Name, Events, LastRefused and
	// Shedding. Inspect sets Kind (one of the Kind constants, or a kind of
	// its package's own), State, Health, and the section of its kind, if
	// the kind has one. A guard whose state would say "ok" but that
	// Shedding reports refused calls lately says "shedding", health
	// warning, as the guards of the package do; a guard whose refusals
	// refuse no call (a Hedge's) clears Shedding.
	//
	// Inspect returns an error matching [ErrZeroGuard], naming the kind,
	// if the guard is a zero value that no constructor made, and sets
	// nothing but Kind then. It is called by [Registry.Register] once, and
	// by every snapshot; it must be safe for concurrent use.
	Inspect(s *Snapshot) error
}

// zeroGuard is the error of Inspect for a zero value of the kind, whose
// type is g's.
func zeroGuard(kind string, g any) error {
	return fmt.Errorf("a zero %s (%T), not made by its constructor: %w", kind, g, ErrZeroGuard)
}

// refusalCount counts a guard's refusals, so that a Registry sees a guard
// shed calls even when the guard reports no events to it: a guard that
// embeds it is a refusalCounter.
type refusalCount struct{ refusedN atomic.Int64 }

func (c *refusalCount) refusals() int64 { return c.refusedN.Load() }

// refusalCounter is a guard that counts its refusals.
type refusalCounter interface{ refusals() int64 }

// inspectGuard fills s from g. A guard whose inspection fails or panics,
// which no guard of the package does once registered, is shown as such,
// "unreadable" and critical, so that one guard never takes the snapshots
// of the others with it.
func inspectGuard(g Inspector, s *Snapshot) {
	unreadable := func(why string) {
		*s = Snapshot{Name: s.Name, Kind: s.Kind, State: "unreadable", Health: HealthCritical, Err: why,
			LastRefused: s.LastRefused, Shedding: s.Shedding, Events: s.Events}
	}
	defer func() {
		if p := recover(); p != nil {
			unreadable(fmt.Sprintf("resilience: reading the guard panicked: %v", p))
		}
	}()
	if err := g.Inspect(s); err != nil {
		unreadable("resilience: " + errorText(err))
	}
}

// shed shows a guard that refused a call lately, and would say "ok"
// otherwise, as "shedding". A guard that sheds by priority refuses calls
// with slots still free: its counts alone would show it well.
func (s *Snapshot) shed() {
	if s.Shedding && s.Health == HealthOK {
		s.State, s.Health = "shedding", HealthWarning
	}
}

// slotsState says how a guard that limits calls at once fares.
func slotsState(s *Snapshot, inFlight, limit, waiting int) {
	switch {
	case waiting > 0:
		s.State, s.Health = "queueing", HealthWarning
	case inFlight >= limit:
		s.State, s.Health = "full", HealthWarning
	default:
		s.State = "ok"
	}
	s.shed()
}

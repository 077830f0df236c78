package resilience

import (
	"context"
	"strconv"
)

// MultiObserver returns an observer that hands each event to every one of
// observers in order. It asks for [EventCallEnded] when one of them does,
// and hands it only to those. A panic in one stops the event there. It
// panics if an observer is nil.
func MultiObserver(observers ...Observer) Observer {
	m := &multiObserver{all: make([]multiMember, len(observers))}
	for i, o := range observers {
		if isNil(o) {
			panic("resilience: MultiObserver: observer " + strconv.Itoa(i) + " is " + nilName(o))
		}
		m.all[i].o = o
		if oo, ok := o.(OutcomeObserver); ok && oo.ObserveOutcomes() {
			m.all[i].outcomes, m.outcomes = true, true
		}
	}
	return m
}

type multiMember struct {
	o        Observer
	outcomes bool // it asked for EventCallEnded
}

type multiObserver struct {
	all      []multiMember
	outcomes bool
}

func (m *multiObserver) ObserveOutcomes() bool { return m.outcomes }

func (m *multiObserver) Observe(ctx context.Context, e Event) {
	for _, o := range m.all {
		if e.Kind != EventCallEnded || o.outcomes {
			o.o.Observe(ctx, e)
		}
	}
}

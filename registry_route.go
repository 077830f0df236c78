package resilience

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrNameMismatch is the error of [Registry.Register] when the guard
// already has another name: the one given to [WithName] when it was built,
// or the one it is registered under elsewhere. A guard has one name, which
// its events, its snapshots and its metrics all carry.
var ErrNameMismatch = errors.New("resilience: guard registered under another name than its own")

// route is where the events of a guard a [Registry] can hold go: to the
// observer it was built with ([WithObserver]) under the name it was built
// with ([WithName]), and, once it is registered, to the registries that
// hold it too, under the name it is registered under. Every guard of such
// a kind has one from its constructor on; the policies and batchers that
// no registry holds have none and report to their observer alone.
//
// A call reads the route with one atomic load (common.reports), which
// finds nil when the events go nowhere; changes are rare (Register,
// Unregister) and serialized by mu.
type route struct {
	kind string                    // the guard's Kind, for the events shared code reports
	sink atomic.Pointer[eventSink] // nil: the events go nowhere

	mu      sync.Mutex
	own     eventSink // the observer and name the constructor was given
	named   string    // the guard's name now: own.name, or the one it is registered under
	holders int       // the registrations of the guard
}

// eventSink is one state of a route: whom the events go to, and the name
// they carry. It does not change once stored: a change stores another.
type eventSink struct {
	observer Observer
	name     string
	entries  []*registryEntry // of the registries that hold the guard
}

// newRoute returns the route of a guard of the kind built with c.
func newRoute(kind string, c *common) *route {
	r := &route{kind: kind, own: eventSink{observer: c.observer, name: c.name}, named: c.name}
	if c.observer != nil {
		r.sink.Store(&r.own)
	}
	return r
}

// routed is a guard with a route: every kind of the package a [Registry]
// can hold.
type routed interface{ eventRoute() *route }

// eventRoute returns the route of the component, nil if it has none (a zero
// value).
func (c *common) eventRoute() *route { return c.route }

// reports reports whether the component's events go anywhere now: the
// check before an event is built, so that a component that reports to no
// one builds none. For a guard with a route it costs one atomic load.
func (c *common) reports() bool {
	if c.route != nil {
		return c.route.sink.Load() != nil
	}
	return c.observer != nil
}

// observe hands e, labelled with the component's name, to those its
// events go to. Callers check c.reports() first.
func (c *common) observe(ctx context.Context, e Event) {
	if c.route != nil {
		if s := c.route.sink.Load(); s != nil {
			s.observe(ctx, e)
		}
		return
	}
	e.Name = c.name
	c.observer.Observe(ctx, e)
}

// observe hands e to the registries first, so that they keep it even when
// the observer panics, and then to the observer. A registry hears no
// EventCallEnded, as through a [MultiObserver]: it did not ask for them.
func (s *eventSink) observe(ctx context.Context, e Event) {
	e.Name = s.name
	if e.Kind != EventCallEnded {
		for _, en := range s.entries {
			en.hear(e)
		}
	}
	if s.observer != nil {
		s.observer.Observe(ctx, e)
	}
}

// attach sends the guard's events to en from now on, under en's name, and
// names the guard so if it has no name. A registry the guard's own
// observer reaches already ([WithObserver](reg), or reg among a
// [MultiObserver]'s) is not sent them twice. It returns an error matching
// ErrNameMismatch if the guard has another name.
func (r *route) attach(en *registryEntry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.named != "" && r.named != en.name {
		return fmt.Errorf("resilience: Registry.Register: guard %s is named %s: %w",
			strconv.Quote(en.name), strconv.Quote(r.named), ErrNameMismatch)
	}
	r.named = en.name
	r.holders++
	var entries []*registryEntry
	if s := r.sink.Load(); s != nil {
		entries = s.entries
	}
	if !reaches(r.own.observer, en.reg) {
		entries = append(slices.Clip(entries), en)
	}
	r.sink.Store(&eventSink{observer: r.own.observer, name: en.name, entries: entries})
	return nil
}

// detach stops sending the guard's events to en, which attach was given.
// A guard no registry holds any longer has the name and the observer of
// its constructor again.
func (r *route) detach(en *registryEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holders--
	s := r.sink.Load()
	entries := slices.DeleteFunc(slices.Clone(s.entries), func(x *registryEntry) bool { return x == en })
	switch {
	case r.holders > 0:
		r.sink.Store(&eventSink{observer: r.own.observer, name: s.name, entries: entries})
	case r.own.observer != nil:
		r.named = r.own.name
		r.sink.Store(&r.own)
	default:
		r.named = r.own.name
		r.sink.Store(nil)
	}
}

// reaches reports whether events handed to o reach reg: o is reg, or a
// MultiObserver that reaches it. An observer of the user's that wraps reg
// cannot be seen into: reg then hears the guard's events twice.
func reaches(o Observer, reg *Registry) bool {
	switch o := o.(type) {
	case *Registry:
		return o == reg
	case *multiObserver:
		for _, m := range o.all {
			if reaches(m.o, reg) {
				return true
			}
		}
	}
	return false
}

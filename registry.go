package resilience

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrAlreadyRegistered is the error of [Registry.Register] when the name is
// taken: unregister the guard that holds it first.
var ErrAlreadyRegistered = errors.New("resilience: name already registered")

// ErrZeroGuard is the error of [Registry.Register] when the guard is a zero
// value (&resilience.Breaker{}, say) rather than one its constructor made:
// such a guard cannot be read, and most kinds cannot be used either.
var ErrZeroGuard = errors.New("resilience: zero-value guard")

// Registry holds guards and policies under names, so that a status page
// (resiliencehttp.StatusHandler) or a metrics exporter can show each one as
// it is now: a [Snapshot] of its state, counts and recent events. Reading a
// snapshot costs the guards' calls nothing. It also keeps the recent
// events of each guard it holds, which a guard of this package sends it
// once registered (see [Registry.Register]). It is safe for concurrent
// use; the zero value is not usable.
type Registry struct {
	entries sync.Map      // name → *registryEntry
	events  int           // records kept per name
	shed    time.Duration // how long a refusal shows (WithRegistryShedding)
	common
}

// registryEntry is one registered guard and the ring of its events.
type registryEntry struct {
	name  string
	guard Inspector
	reg   *Registry
	route *route // the guard's, if it has one: it sends the entry its events

	mu      sync.Mutex
	ring    []eventRecord // len == cap once full; next is the oldest
	next    int
	seq     uint64    // counts the changes of the ring's records
	refused time.Time // when the last EventRefused of the name came

	// For a guard that counts its refusals (refusalCounter): its count at
	// the last snapshot, that snapshot's time, and the first snapshot's
	// that found the count moved with no EventRefused heard since.
	counted         int64
	looked, noticed time.Time
}

// eventRecord is one event of a ring, or a run of like events folded into
// one: count of them, the first at first, the last (kept in e) at last.
// seq changes with every change of the record; out is the record in words
// as it was at seq outOf, kept so that a snapshot formats each record once.
type eventRecord struct {
	e           Event
	first, last time.Time
	count       int
	seq, outOf  uint64
	out         EventRecord
}

// defaultRegistryEvents is how many events a registry keeps per name by
// default, and defaultRegistryShedding how long a guard shows a refusal.
// A minute is longer than the interval at which metrics are usually
// collected (OpenTelemetry's periodic reader: 60 s; Prometheus: 15–60 s),
// so every collection sees a guard that sheds between two of them.
const (
	defaultRegistryEvents   = 32
	defaultRegistryShedding = time.Minute
)

// NewRegistry returns an empty registry. It keeps the 32 most recent
// events of each name ([WithRegistryEvents]), shows a guard that refused a
// call in the last minute as shedding ([WithRegistryShedding]), and
// stamps events with the real clock unless given [WithClock]. It panics
// if an option is nil or invalid, or is [WithObserver] or [WithName],
// which do not apply.
func NewRegistry(opts ...RegistryOption) *Registry {
	cfg := registryConfig{events: defaultRegistryEvents, shed: defaultRegistryShedding}
	for _, o := range opts {
		checkOption("NewRegistry", o)
		o.applyRegistry(&cfg)
	}
	if cfg.observer != nil || cfg.name != "" {
		panic("resilience: NewRegistry: WithObserver and WithName do not apply to a registry")
	}
	return &Registry{events: cfg.events, shed: cfg.shed, common: cfg.common}
}

// RegistryOption configures [NewRegistry]: [WithRegistryEvents],
// [WithRegistryShedding] and [WithClock].
type RegistryOption interface {
	applyRegistry(*registryConfig)
}

type registryConfig struct {
	events int
	shed   time.Duration
	common
}

type registryOptionFunc func(*registryConfig)

func (f registryOptionFunc) applyRegistry(c *registryConfig) { f(c) }

func (o Option) applyRegistry(c *registryConfig) { o.set(&c.common) }

// WithRegistryEvents sets how many recent events a [Registry] keeps for
// each name: 32 by default; 0 keeps none. Like events in a row (refusals
// of an open breaker, say) are kept as one, with their count. It panics if
// n is negative or more than 10000.
func WithRegistryEvents(n int) RegistryOption {
	if n < 0 || n > 10000 {
		panic(fmt.Sprintf("resilience: WithRegistryEvents: n must be in [0, 10000], got %d", n))
	}
	return registryOptionFunc(func(c *registryConfig) { c.events = n })
}

// WithRegistryShedding sets how long after a guard's last refusal of a
// call its [Snapshot] says so: Shedding is set, and a guard that looks
// well otherwise has state "shedding", health warning. It is a minute by
// default; 0 never says so. The registry hears of refusals as it hears of
// events (see [Registry.Observe]), with or without a ring to keep them. It
// panics if d is negative.
func WithRegistryShedding(d time.Duration) RegistryOption {
	if d < 0 {
		panic(fmt.Sprintf("resilience: WithRegistryShedding: d must not be negative, got %v", d))
	}
	return registryOptionFunc(func(c *registryConfig) { c.shed = d })
}

// defaultRegistry is made without a call, so that importing the package
// allocates nothing.
var defaultRegistry = Registry{events: defaultRegistryEvents, shed: defaultRegistryShedding}

// DefaultRegistry returns the registry of the process, for programs that
// need one only, as net/http's DefaultServeMux serves those that need one
// mux. It is made with NewRegistry's defaults.
func DefaultRegistry() *Registry { return &defaultRegistry }

// Register adds g under name, which becomes the guard's name: its events,
// its snapshots and its metrics carry it. g is a *[Breaker], *[Bulkhead],
// *[RateLimiter], *[KeyedRateLimiter], *[RetryBudget], *[AdaptiveLimiter],
// *[AdaptiveThrottler], a policy made by [Hedge] (asserted to an
// [Inspector]), or a guard of another package that implements Inspector.
//
// A guard of this package needs nothing more: built without [WithName], it
// takes name; built without [WithObserver](r), it reports its events to r
// all the same, and to its own observer, if it has one, under name. A
// guard built with WithName(name) and WithObserver(r), alone or in a
// [MultiObserver], keeps working as it did: r hears each of its events
// once (an observer of your own that wraps r would hand them to r a second
// time). A guard of another package reports its events through
// [Registry.Observe], under its own name.
//
// It returns an error matching [ErrAlreadyRegistered] if name is taken,
// one matching [ErrNameMismatch] (naming both names) if g has another
// name, given to WithName or to Register elsewhere, and one matching
// [ErrZeroGuard] (naming the kind) if g is a zero value that no
// constructor made; g is not registered then. It is safe to call while g
// serves calls. It panics if name is empty or g is nil.
func (r *Registry) Register(name string, g Inspector) error {
	if name == "" {
		panic("resilience: Registry.Register: name is empty")
	}
	if isNil(g) {
		panic("resilience: Registry.Register: guard " + strconv.Quote(name) + " is " + nilName(g))
	}
	var s Snapshot
	if err := g.Inspect(&s); err != nil {
		return fmt.Errorf("resilience: Registry.Register: guard %s is %w", strconv.Quote(name), err)
	}
	e := &registryEntry{name: name, guard: g, reg: r}
	if rg, ok := g.(routed); ok {
		e.route = rg.eventRoute()
	}
	if e.route != nil {
		if err := e.route.attach(e); err != nil {
			return err
		}
	}
	if _, taken := r.entries.LoadOrStore(name, e); taken {
		if e.route != nil {
			e.route.detach(e)
		}
		return fmt.Errorf("resilience: Registry.Register: %s: %w", strconv.Quote(name), ErrAlreadyRegistered)
	}
	return nil
}

// Unregister removes the guard registered under name, and its events, and
// reports whether there was one. A guard made per tenant or per host is
// unregistered when it is dropped, so that the registry does not keep it.
// A guard of this package no registry holds any longer reports its events
// as its constructor was told to, under the name it was built with.
func (r *Registry) Unregister(name string) bool {
	v, ok := r.entries.LoadAndDelete(name)
	if ok {
		if en := v.(*registryEntry); en.route != nil {
			en.route.detach(en)
		}
	}
	return ok
}

// Lookup returns the guard registered under name, as it was given to
// Register, and whether there is one: a status page's actions use it to
// reach a breaker.
func (r *Registry) Lookup(name string) (guard Inspector, ok bool) {
	e, ok := r.entries.Load(name)
	if !ok {
		return nil, false
	}
	return e.(*registryEntry).guard, true
}

// Observe records e among the recent events of the guard registered under
// e.Name; it drops the events of names not registered. A guard of this
// package needs no call of it: once registered, it sends its events to the
// registry itself (see [Registry.Register]). A guard of another package
// is given the registry as its observer. The events show on a status
// page, and tell the snapshots whether the guard sheds (an [EventRefused]
// is how a registry learns of a refusal). It takes a lock of the name's
// own and allocates nothing; like events in a row are counted in one
// record.
func (r *Registry) Observe(_ context.Context, e Event) {
	if v, ok := r.entries.Load(e.Name); ok {
		v.(*registryEntry).hear(e)
	}
}

// hear records e, an event of the entry's guard, unless the registry keeps
// no such events.
func (en *registryEntry) hear(e Event) {
	r := en.reg
	if r.events == 0 && (r.shed == 0 || e.Kind != EventRefused) {
		return
	}
	en.record(e, r.now(), r.events)
}

// folds reports whether e is counted in the record last, as like events
// in a row are. A breaker's changes of state are each kept.
func folds(last *eventRecord, e Event) bool {
	return last.e.Kind == e.Kind && last.e.Component == e.Component && e.Kind != EventStateChange
}

// record adds e, which happened at now, to the ring of at most size
// records.
func (en *registryEntry) record(e Event, now time.Time, size int) {
	en.mu.Lock()
	defer en.mu.Unlock()
	if e.Kind == EventRefused {
		en.refused = now
	}
	if size == 0 {
		return
	}
	if n := len(en.ring); n > 0 {
		last := &en.ring[(en.next+n-1)%n] // the newest, the ring full or not
		if folds(last, e) {
			en.seq++
			last.e, last.last, last.seq = e, now, en.seq
			last.count++
			return
		}
	}
	en.seq++
	rec := eventRecord{e: e, first: now, last: now, count: 1, seq: en.seq}
	if len(en.ring) < size {
		en.ring = append(en.ring, rec)
		return
	}
	en.ring[en.next] = rec
	en.next = (en.next + 1) % size
}

// recent returns the records of the ring in words, the newest first, and
// when the last refusal came. Each record is put in words once, outside
// the lock (an error's Error method is the user's code), and kept for the
// next snapshot.
func (en *registryEntry) recent() (_ []EventRecord, refused time.Time) {
	type stale struct {
		at  int // in out
		rec eventRecord
	}
	var todo []stale
	en.mu.Lock()
	n, refused := len(en.ring), en.refused
	if n == 0 {
		en.mu.Unlock()
		return nil, refused
	}
	out := make([]EventRecord, n)
	for i := range out { // the newest first
		if r := &en.ring[(en.next+n-1-i)%n]; r.outOf == r.seq {
			out[i] = r.out
		} else {
			todo = append(todo, stale{i, *r})
		}
	}
	en.mu.Unlock()
	if len(todo) == 0 {
		return out, refused
	}
	for _, s := range todo {
		out[s.at] = s.rec.export()
	}
	en.mu.Lock()
	for _, s := range todo { // kept, unless the ring moved on meanwhile
		if r := &en.ring[(en.next+n-1-s.at)%n]; len(en.ring) == n && r.seq == s.rec.seq {
			r.out, r.outOf = out[s.at], r.seq
		}
	}
	en.mu.Unlock()
	return out, refused
}

// Snapshot returns a snapshot of the guard registered under name, and
// whether there is one.
func (r *Registry) Snapshot(name string) (Snapshot, bool) {
	v, ok := r.entries.Load(name)
	if !ok {
		return Snapshot{}, false
	}
	return v.(*registryEntry).snapshot(r.now(), r.shed), true
}

// Snapshots returns a snapshot of every registered guard, sorted by name.
// Each guard is read in turn, without a lock of the registry held, so a
// guard registered or unregistered meanwhile may or may not be in it. It
// allocates the slice, each snapshot's section and its events; its cost
// is in docs/performance.md (BenchmarkRegistrySnapshots: about 0.3 ms and
// 450 kB for 100 breakers with 32 events each).
func (r *Registry) Snapshots() []Snapshot {
	var entries []*registryEntry
	r.entries.Range(func(_, v any) bool {
		entries = append(entries, v.(*registryEntry))
		return true
	})
	slices.SortFunc(entries, func(a, b *registryEntry) int { return strings.Compare(a.name, b.name) })
	out := make([]Snapshot, len(entries))
	now := r.now()
	for i, en := range entries {
		out[i] = en.snapshot(now, r.shed)
	}
	return out
}

// notice returns when the guard last refused a call, as the registry
// knows it: heard, the time of its last EventRefused, or, when its count
// of refusals n moved since the last snapshot with no event heard since
// (a guard that reports no events to this registry), this snapshot's time
// now, the first the registry could know it by.
func (en *registryEntry) notice(n int64, now, heard time.Time) time.Time {
	en.mu.Lock()
	defer en.mu.Unlock()
	if n != en.counted {
		en.counted = n
		if !heard.After(en.looked) {
			en.noticed = now
		}
	}
	en.looked = now
	if en.noticed.After(heard) {
		return en.noticed
	}
	return heard
}

// snapshot reads the entry's guard and events at now; a refusal less than
// shed before now shows.
func (en *registryEntry) snapshot(now time.Time, shed time.Duration) Snapshot {
	s := Snapshot{Name: en.name, Health: HealthOK}
	s.Events, s.LastRefused = en.recent()
	if c, ok := en.guard.(refusalCounter); ok {
		s.LastRefused = en.notice(c.refusals(), now, s.LastRefused)
	}
	s.Shedding = !s.LastRefused.IsZero() && now.Sub(s.LastRefused) < shed
	inspectGuard(en.guard, &s)
	return s
}

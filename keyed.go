package resilience

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// ErrKeysFull is the refusal of a [Keyed] guard asked for a key it has no
// guard for while it holds as many as [WithKeyedMaxKeys] allows, none of
// which it may let go (see [Keyed]), and no [WithKeyedOverflow] guard. It
// matches [ErrRefused].
var ErrKeysFull error = &refusalSentinel{"resilience: keyed guard full: every key it holds is busy (WithKeyedMaxKeys)"}

// Keyed is a [Guard] that gives each key its own guard: a breaker per host
// or shard, a bulkhead or an adaptive limiter per tenant. The key of a call
// is read from its context by the function given to [NewKeyed]; a key's
// guard is made by newGuard on the key's first call.
//
// Memory is bounded: Keyed holds at most [WithKeyedMaxKeys] guards, and
// lets go of a key's guard once it has been idle for [WithKeyedIdle] and
// rests. It never lets go of a guard with a call in flight, nor of one
// whose state would be lost: a breaker that is not closed, a rate limiter
// whose bucket is not full, a bulkhead or limiter with a call waiting. A
// guard let go of is made anew by the key's next call. When the table is
// full and no guard may go, a new key's call goes to the
// [WithKeyedOverflow] guard, shared by every such key, or is refused with
// [ErrKeysFull].
//
// key must give the same key each time it is given the same context: a
// call's outcome goes to the guard its key names. A Keyed of the package's
// own guards allocates nothing per call through [Guarded]. A Keyed is safe
// for concurrent use; the zero value is not usable.
type Keyed[K comparable, G Guard] struct {
	common
	refusalCount
	key      func(ctx context.Context) K
	newGuard func(key K) G
	overflow Guard      // the guard of a new key when the table is full; nil: refuse
	overGate ticketGate // overflow, if it is one of the package's guards
	gated    bool       // every guard is one of the package's: calls need no closure
	maxKeys  int64
	period   time.Duration // a sweep period: the idle time
	base     time.Time     // the clock's reading at construction

	seed      maphash.Seed
	keys      atomic.Int64  // guards held
	forced    atomic.Uint64 // the freed calls at the last sweep of a full table, plus one
	epoch     atomic.Uint64 // sweep periods so far
	nextSweep atomic.Int64  // when the next period starts, in ns since base
	// Calls in flight on the overflow guard, by key hash: no guard is made
	// for a key while a call with a key of its slot is on the overflow, so
	// that the end of every call finds the guard it began with.
	over   [keyedShards]atomic.Int64
	shards [keyedShards]keyedTable[K, G]
}

// keyedTable is a part of a Keyed's table, on cache lines of its own.
type keyedTable[K comparable, G Guard] struct {
	mu     sync.RWMutex
	guards map[K]*keyedEntry[G] // guarded by mu
	// freed counts the calls that left a guard of this part with none in
	// flight while the table was full.
	freed atomic.Uint64
	_     [32]byte
}

// keyedEntry is one key's guard.
type keyedEntry[G Guard] struct {
	g        G
	gate     ticketGate   // g as a ticket gate, if it is one
	inflight atomic.Int64 // calls admitted or being asked about
	last     atomic.Uint64
	refused  atomic.Int64 // calls g refused
}

// NewKeyed returns a guard that gives each key of a call, which key reads
// from the call's context, a guard of its own made by newGuard. It panics
// if key or newGuard is nil or an option is invalid; a call panics if
// newGuard returns nil.
func NewKeyed[K comparable, G Guard](key func(ctx context.Context) K, newGuard func(key K) G, opts ...KeyedOption) *Keyed[K, G] {
	const fn = "NewKeyed"
	if key == nil {
		panic("resilience: NewKeyed: key function is nil")
	}
	if newGuard == nil {
		panic("resilience: NewKeyed: guard constructor is nil")
	}
	cfg := keyedConfig{maxKeys: defaultKeyedMaxKeys, idle: defaultKeyedIdle}
	for _, o := range opts {
		checkOption(fn, o)
		o.applyKeyed(&cfg)
	}
	k := &Keyed[K, G]{
		common:   cfg.common,
		key:      key,
		newGuard: newGuard,
		overflow: cfg.overflow,
		maxKeys:  int64(cfg.maxKeys),
		period:   cfg.idle,
		seed:     maphash.MakeSeed(),
	}
	k.route = newRoute(KindKeyed, &k.common)
	k.base = k.now()
	k.nextSweep.Store(int64(k.period))
	var zero G
	_, k.gated = any(zero).(ticketGate)
	if k.overflow != nil {
		k.overGate, _ = k.overflow.(ticketGate)
		k.gated = k.gated && k.overGate != nil
	}
	for i := range k.shards {
		k.shards[i].guards = map[K]*keyedEntry[G]{}
	}
	return k
}

const (
	defaultKeyedMaxKeys = 10_000
	defaultKeyedIdle    = 5 * time.Minute
)

// KeyedOption configures [NewKeyed]: [WithKeyedMaxKeys], [WithKeyedIdle],
// [WithKeyedOverflow], or an [Option].
type KeyedOption interface {
	applyKeyed(*keyedConfig)
}

type keyedConfig struct {
	common
	maxKeys  int
	idle     time.Duration
	overflow Guard
}

type keyedOptionFunc func(*keyedConfig)

func (f keyedOptionFunc) applyKeyed(c *keyedConfig) { f(c) }

func (o Option) applyKeyed(c *keyedConfig) { o.set(&c.common) }

// WithKeyedMaxKeys bounds the number of guards a [Keyed] holds at once:
// 10,000 by default. It panics if n < 1.
func WithKeyedMaxKeys(n int) KeyedOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithKeyedMaxKeys: n must be at least 1, got %d", n))
	}
	return keyedOptionFunc(func(c *keyedConfig) { c.maxKeys = n })
}

// WithKeyedIdle sets how long a key's guard is kept, at least, after its
// last call ended, if it rests (see [Keyed]); it goes within twice that:
// 5 minutes by default. It panics if d is not positive.
func WithKeyedIdle(d time.Duration) KeyedOption {
	if d <= 0 {
		panic(fmt.Sprintf("resilience: WithKeyedIdle: idle time must be positive, got %v", d))
	}
	return keyedOptionFunc(func(c *keyedConfig) { c.idle = d })
}

// WithKeyedOverflow sets the guard that the calls of a new key share while
// a [Keyed] is full and may let go of none of its guards; by default such
// a call is refused with [ErrKeysFull]. It panics if g is nil.
func WithKeyedOverflow(g Guard) KeyedOption {
	if isNil(g) {
		panic("resilience: WithKeyedOverflow: guard is " + nilName(g))
	}
	return keyedOptionFunc(func(c *keyedConfig) { c.overflow = g })
}

// Len returns the number of keys whose guards the Keyed holds now.
func (k *Keyed[K, G]) Len() int { return int(k.keys.Load()) }

// Lookup returns key's guard, if the Keyed holds one now. It makes none.
func (k *Keyed[K, G]) Lookup(key K) (g G, ok bool) {
	s := &k.shards[k.hash(key)%keyedShards]
	s.mu.RLock()
	e := s.guards[key]
	s.mu.RUnlock()
	if e == nil {
		return g, false
	}
	return e.g, true
}

// Enter asks the guard of the call's key, as the [Guard] interface says.
func (k *Keyed[K, G]) Enter(ctx context.Context) (done func(err error), err error) {
	return k.EnterKey(ctx, k.key(ctx))
}

// EnterKey is Enter for a call whose key the caller has at hand, such as a
// transport with the request's host: it asks key's guard, and the key
// function is not called.
func (k *Keyed[K, G]) EnterKey(ctx context.Context, key K) (done func(err error), err error) {
	e, err := k.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	g := k.overflow
	if e != nil {
		g = e.g
	}
	inner, err := g.Enter(ctx)
	if err != nil {
		k.refusedBy(key, e, err)
		return nil, err
	}
	return func(err error) {
		defer k.release(key, e) // also when the guard's classifier panics
		inner(err)
	}, nil
}

// gatedOK reports whether Guarded may call k through enter and exit: when
// every guard k hands a call to is one of the package's.
func (k *Keyed[K, G]) gatedOK() bool { return k.gated }

func (k *Keyed[K, G]) enter(ctx context.Context, report bool) (uint64, error) {
	key := k.key(ctx)
	e, err := k.acquire(ctx, key)
	if err != nil {
		return 0, err
	}
	gate := k.overGate
	if e != nil {
		gate = e.gate
	}
	t, err := gate.enter(ctx, report)
	if err != nil {
		k.refusedBy(key, e, err)
	}
	return t, err
}

// exit finds the guard the call began with: its key's guard, which is not
// let go of while the call is in flight, or, if there is none, the
// overflow guard, since no guard is made for its key meanwhile. The call
// ends on it also when the guard's exit panics (a classifier's panic goes
// on through the call).
func (k *Keyed[K, G]) exit(ctx context.Context, ticket uint64, err error, report bool) {
	key := k.key(ctx)
	s := &k.shards[k.hash(key)%keyedShards]
	s.mu.RLock()
	e := s.guards[key]
	s.mu.RUnlock()
	gate := k.overGate
	if e != nil {
		gate = e.gate
	}
	defer k.release(key, e)
	gate.exit(ctx, ticket, err, report)
}

func (k *Keyed[K, G]) reportsOutcomes() bool { return false }

func (k *Keyed[K, G]) hash(key K) uint64 { return maphash.Comparable(k.seed, key) }

// acquire returns key's guard, made if need be, with the call counted in
// flight on it; nil for the overflow guard.
func (k *Keyed[K, G]) acquire(ctx context.Context, key K) (*keyedEntry[G], error) {
	h := k.hash(key)
	s := &k.shards[h%keyedShards]
	s.mu.RLock()
	if e := s.guards[key]; e != nil {
		e.inflight.Add(1) // under the lock: no sweep lets e go meanwhile
		s.mu.RUnlock()
		return e, nil
	}
	s.mu.RUnlock()
	return k.insert(ctx, key, h, s)
}

// insert makes key's guard, unless the table is full and may let go of
// none: then the call goes to the overflow guard or is refused.
func (k *Keyed[K, G]) insert(ctx context.Context, key K, h uint64, s *keyedTable[K, G]) (*keyedEntry[G], error) {
	epoch := k.tick()
	slot := &k.over[h%keyedShards]
	full := k.keys.Load() >= k.maxKeys
	if full {
		k.sweepFull(epoch)
		full = k.keys.Load() >= k.maxKeys
	} else if k.forced.Load() != 0 {
		k.forced.Store(0) // the next time the table is full, sweepFull looks
	}
	var fresh *keyedEntry[G]
	if !full && slot.Load() == 0 {
		g := k.newGuard(key)
		if isNil(g) {
			panic(fmt.Sprintf("resilience: NewKeyed: the guard constructor returned nil for key %v", key))
		}
		fresh = &keyedEntry[G]{g: g}
		fresh.gate, _ = any(g).(ticketGate)
	}
	s.mu.Lock()
	if e := s.guards[key]; e != nil {
		e.inflight.Add(1)
		s.mu.Unlock()
		return e, nil
	}
	if fresh != nil && slot.Load() == 0 && k.count() {
		fresh.inflight.Store(1)
		fresh.last.Store(epoch)
		s.guards[key] = fresh
		s.mu.Unlock()
		return fresh, nil
	}
	if k.overflow == nil {
		s.mu.Unlock()
		k.refusedN.Add(1)
		if k.reports() {
			k.observe(ctx, Event{Kind: EventRefused, Component: KindKeyed, Err: ErrKeysFull})
		}
		return nil, ErrKeysFull
	}
	slot.Add(1) // under the lock: the key's guard cannot be made meanwhile
	s.mu.Unlock()
	return nil, nil
}

// count counts one more guard, unless the table holds as many as it may.
func (k *Keyed[K, G]) count() bool {
	for {
		n := k.keys.Load()
		if n >= k.maxKeys {
			return false
		}
		if k.keys.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// refusedBy ends a call that key's guard e, or the overflow guard,
// refused with err, and counts the refusal for the registry.
func (k *Keyed[K, G]) refusedBy(key K, e *keyedEntry[G], err error) {
	if errors.Is(err, ErrRefused) {
		k.refusedN.Add(1)
		if e != nil {
			e.refused.Add(1)
		}
	}
	k.release(key, e)
}

// release ends a call on key's guard e, or on the overflow guard. A call
// that leaves a guard with none in flight in a full table is counted, for
// sweepFull.
func (k *Keyed[K, G]) release(key K, e *keyedEntry[G]) {
	if e == nil {
		k.over[k.hash(key)%keyedShards].Add(-1)
		return
	}
	e.last.Store(k.epoch.Load())
	if e.inflight.Add(-1) == 0 && k.keys.Load() >= k.maxKeys {
		k.shards[k.hash(key)%keyedShards].freed.Add(1)
	}
}

// tick starts a new sweep period if the last one is over, and sweeps
// every part of the table then, letting go of the guards idle for a whole
// period. It returns the current period.
func (k *Keyed[K, G]) tick() uint64 {
	now := int64(k.since(k.base))
	next := k.nextSweep.Load()
	if now < next || !k.nextSweep.CompareAndSwap(next, now+int64(k.period)) {
		return k.epoch.Load()
	}
	epoch := k.epoch.Add(1)
	for i := range k.shards {
		k.sweep(&k.shards[i], epoch, false)
	}
	return epoch
}

// sweepFull lets go, in a full table, of the guards that rest with no
// call in flight, however recently used. It looks only if a call has left
// a guard with none in flight since it last looked, so that a table full
// of busy guards costs a new key no look at all.
func (k *Keyed[K, G]) sweepFull(epoch uint64) {
	freed := uint64(1)
	for i := range k.shards {
		freed += k.shards[i].freed.Load()
	}
	if last := k.forced.Load(); last == freed || !k.forced.CompareAndSwap(last, freed) {
		return
	}
	for i := range k.shards {
		k.sweep(&k.shards[i], epoch, true)
	}
}

// sweep lets go of the guards of s that rest, have no call in flight and,
// unless force, were last used two periods ago or more.
func (k *Keyed[K, G]) sweep(s *keyedTable[K, G], epoch uint64, force bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, e := range s.guards {
		if e.inflight.Load() != 0 || !force && e.last.Load()+2 > epoch || !rests(e.g) {
			continue
		}
		delete(s.guards, key)
		k.keys.Add(-1)
	}
}

// rester is a guard of the package that can tell whether letting it go
// would lose state a later call needs.
type rester interface{ rests() bool }

// rests reports whether g may be let go of: a guard that cannot tell
// always may, once no call is in flight on it.
func rests(g any) bool {
	r, ok := g.(rester)
	return !ok || r.rests()
}

// A breaker rests while closed: letting go of an open or half-open one
// would let calls through to a service it keeps them from.
func (b *Breaker) rests() bool { return b.view.Load().state == BreakerClosed }

// A bulkhead rests with no call in it and none waiting.
func (b *Bulkhead) rests() bool { return b.state.Load() == 0 }

// A rate limiter rests with a full bucket: one made anew would give a key
// that has spent its burst a new one.
func (l *RateLimiter) rests() bool { return l.Tokens() >= float64(l.Params.Burst) }

// An adaptive limiter rests with no call in flight and none waiting; the
// limit it learned is learned again.
func (l *AdaptiveLimiter) rests() bool { return l.state.Load() == 0 }

// A throttle rests while it refuses nothing.
func (t *AdaptiveThrottler) rests() bool { return t.Ratio() == 0 }

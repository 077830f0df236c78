package resilience

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// KeyedRateLimiter is a [RateLimiter] for each key (a user, a tenant),
// all with the same rate and burst, each bucket full on its key's first
// call. A key whose bucket has refilled is forgotten, which changes
// nothing; when [WithRateLimitMaxKeys] keys still refill, a call for a new
// key is refused. [KeyedRateLimiter.Guard] makes it a [Guard]. A
// KeyedRateLimiter is safe for concurrent use; the zero value is not usable.
type KeyedRateLimiter[K comparable] struct {
	limits
	refusalCount
	wait time.Duration
	common
	seed    maphash.Seed
	maxKeys int64
	keys    atomic.Int64
	shards  [keyedShards]keyedShard[K]
}

const keyedShards = 64

// keyedShard is a part of the table, on cache lines of its own.
type keyedShard[K comparable] struct {
	mu      sync.Mutex
	buckets map[K]*keyedBucket // guarded by mu
	floor   int64              // the tat of a new key: the time of the last sweep; guarded by mu
	sweepAt int64              // when the next sweep is due; guarded by mu
	// minTat is at most the tat of every bucket: no bucket can be dropped
	// before then. It is read without the lock by a table that is full.
	minTat atomic.Int64
	top    *keyedTop[K] // the most refused keys, made at the first refusal; guarded by mu
	_      [16]byte
}

// keyedBucket is the state of one key's bucket, guarded by its shard's mu:
// its tat, and how many calls it refused (counted on refusals only).
type keyedBucket struct{ tat, refused int64 }

// NewKeyedRateLimiter returns a limiter that gives each key rate tokens a
// second and a burst of burst. It panics as [NewRateLimiter] does.
func NewKeyedRateLimiter[K comparable](rate float64, burst int, opts ...KeyedRateLimitOption) *KeyedRateLimiter[K] {
	cfg := keyedRateLimitConfig{maxKeys: defaultMaxKeys}
	for _, o := range opts {
		checkOption("NewKeyedRateLimiter", o)
		o.applyKeyedRateLimit(&cfg)
	}
	cfg.route = newRoute(KindKeyedRateLimiter, &cfg.common)
	l := &KeyedRateLimiter[K]{
		limits:  newLimits("NewKeyedRateLimiter", rate, burst, &cfg.common),
		wait:    cfg.wait,
		common:  cfg.common,
		seed:    maphash.MakeSeed(),
		maxKeys: cfg.maxKeys,
	}
	for i := range l.shards {
		l.shards[i].buckets = map[K]*keyedBucket{}
		l.shards[i].floor = math.MinInt64 / 2 // before any time the limiter counts
		l.shards[i].minTat.Store(math.MaxInt64)
	}
	return l
}

const defaultMaxKeys = 1 << 20

// KeyedRateLimitOption configures [NewKeyedRateLimiter]: every
// [RateLimitOption], and [WithRateLimitMaxKeys].
type KeyedRateLimitOption interface {
	applyKeyedRateLimit(*keyedRateLimitConfig)
}

type keyedRateLimitConfig struct {
	rateLimitConfig
	maxKeys int64
}

type keyedRateLimitOptionFunc func(*keyedRateLimitConfig)

func (f keyedRateLimitOptionFunc) applyKeyedRateLimit(c *keyedRateLimitConfig) { f(c) }

func (f rateLimitOptionFunc) applyKeyedRateLimit(c *keyedRateLimitConfig) { f(&c.rateLimitConfig) }

func (o Option) applyKeyedRateLimit(c *keyedRateLimitConfig) { o.set(&c.common) }

// WithRateLimitMaxKeys bounds the number of keys a [KeyedRateLimiter]
// holds at once; size it above the number of keys active within one refill
// time (burst/rate). The default is 1,048,576. It panics if n < 1.
func WithRateLimitMaxKeys(n int) KeyedRateLimitOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithRateLimitMaxKeys: n must be at least 1, got %d", n))
	}
	return keyedRateLimitOptionFunc(func(c *keyedRateLimitConfig) { c.maxKeys = int64(n) })
}

// Rate returns the rate of each key's bucket, as [RateLimiter.Rate] does.
func (l *KeyedRateLimiter[K]) Rate() float64 { return l.Params.Rate() }

// Burst returns the most tokens each key's bucket holds.
func (l *KeyedRateLimiter[K]) Burst() int { return l.Params.Burst }

// Len returns the number of keys the limiter holds now, never more than
// [WithRateLimitMaxKeys] allows.
func (l *KeyedRateLimiter[K]) Len() int { return int(l.keys.Load()) }

// Tokens returns the number of tokens in key's bucket now, as
// [RateLimiter.Tokens] does.
func (l *KeyedRateLimiter[K]) Tokens(key K) float64 {
	t := l.nowNs(&l.common)
	s := l.shard(key)
	s.mu.Lock()
	tat := s.floor
	if b := s.buckets[key]; b != nil {
		tat = b.tat
	}
	s.mu.Unlock()
	return l.Params.Tokens(tat, t)
}

// Allow takes a token from key's bucket if one is there, and reports
// whether it did, as [RateLimiter.Allow] does.
func (l *KeyedRateLimiter[K]) Allow(key K) bool { return l.AllowN(key, 1) }

// AllowN is [RateLimiter.AllowN] for key's bucket; it is false, too, for a
// new key when the table is full. It panics if n is negative.
func (l *KeyedRateLimiter[K]) AllowN(key K, n int) bool {
	checkN("KeyedRateLimiter.AllowN", n)
	if l.Interval == 0 {
		return true
	}
	if int64(n) > l.MaxN {
		l.refusedEvent(rateLimitTooMany, 0)
		return false
	}
	if _, wait, why, ok := l.book(key, l.nowNs(&l.common), n, 0); !ok {
		if why == rateLimitRefused {
			why = l.reason(wait, n, 0)
		}
		l.refusedEvent(why, wait)
		return false
	}
	return true
}

// refusedEvent reports a refusal of Allow, with no context and an error
// that costs no allocation.
func (l *KeyedRateLimiter[K]) refusedEvent(why rateLimitReason, wait int64) {
	l.refusedN.Add(1)
	if l.reports() {
		if why == rateLimitTooMany || why == rateLimitSpent {
			wait = 0
		}
		l.observe(context.Background(), Event{Kind: EventRefused, Component: KindKeyedRateLimiter, Err: ErrRateLimited, Wait: time.Duration(max(wait, 0))})
	}
}

// shard returns the part of the table that holds key.
func (l *KeyedRateLimiter[K]) shard(key K) *keyedShard[K] {
	return &l.shards[maphash.Comparable(l.seed, key)%keyedShards]
}

// book takes n tokens from key's bucket at t if they are there within
// maxWait, and returns the bucket's new tat and the wait. When it takes
// nothing, ok is false, and wait is the time until the tokens are there;
// or why is rateLimitKeys, and wait the time until a key can be dropped
// from the full table.
func (l *KeyedRateLimiter[K]) book(key K, t int64, n int, maxWait int64) (next, wait int64, why rateLimitReason, ok bool) {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	tat := s.floor
	if b != nil {
		tat = b.tat
	}
	next, wait, ok = l.Take(tat, t, int64(n)*l.Interval, maxWait)
	if !ok {
		if b != nil {
			s.refused(key, b)
		}
		return 0, wait, rateLimitRefused, false // the caller tells why
	}
	if next == tat || n == 0 {
		return next, wait, 0, true // nothing taken: no bucket to keep
	}
	if b == nil {
		if b, wait = l.add(s, key, t); b == nil {
			return 0, wait, rateLimitKeys, false
		}
	}
	b.tat = next
	if next < s.minTat.Load() {
		s.minTat.Store(next)
	}
	return next, wait, 0, true
}

// giveBack returns a booking that moved key's tat to next, if nothing was
// booked after it.
func (l *KeyedRateLimiter[K]) giveBack(key K, next, cost int64) {
	s := l.shard(key)
	s.mu.Lock()
	if b := s.buckets[key]; b != nil && b.tat == next {
		b.tat = next - cost
	}
	s.mu.Unlock()
}

// add makes a bucket for key in s, whose lock is held, making room for it
// if the table is full. When there is none it returns nil and how long
// until a key can be dropped (0: no hint).
func (l *KeyedRateLimiter[K]) add(s *keyedShard[K], key K, t int64) (*keyedBucket, int64) {
	if t >= s.sweepAt {
		l.sweep(s, t)
	}
	if !l.reserveKey() {
		if hint := l.makeRoom(s, t); hint >= 0 {
			return nil, hint
		}
	}
	b := &keyedBucket{}
	s.buckets[key] = b
	return b, 0
}

// reserveKey counts one more key if the table may hold it, and reports
// whether it did. A key is counted before it goes into its part of the
// table, under that part's lock alone: new keys coming together to
// different parts cannot all see the last free place and take it.
func (l *KeyedRateLimiter[K]) reserveKey() bool {
	for {
		n := l.keys.Load()
		if n >= l.maxKeys {
			return false
		}
		if l.keys.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// makeRoom drops the keys of full buckets from every part of the table it
// can lock at once, s's lock being held. It returns -1 if it found room and
// counted a key in it (see reserveKey), or else how long until a key can be
// dropped (0: no hint).
func (l *KeyedRateLimiter[K]) makeRoom(s *keyedShard[K], t int64) int64 {
	if s.minTat.Load() <= t {
		l.sweep(s, t)
	}
	earliest := int64(math.MaxInt64)
	for i := range l.shards {
		if l.reserveKey() {
			return -1
		}
		o := &l.shards[i]
		if m := o.minTat.Load(); m > t {
			earliest = min(earliest, m)
			continue
		}
		if o != s && o.mu.TryLock() { // never wait for a lock while holding one
			l.sweep(o, t)
			o.mu.Unlock()
		}
	}
	if l.reserveKey() {
		return -1
	}
	if earliest == math.MaxInt64 {
		return 0
	}
	return earliest - t
}

// sweep drops the keys of s whose buckets are full at t, s's lock being
// held, and schedules its next sweep a refill time later. A new key starts
// from floor, t, rather than from the beginning of time: for a clock that
// only goes forward the two are the same full bucket, and for one that
// goes back, forgetting a key must not hand it tokens it had not earned.
func (l *KeyedRateLimiter[K]) sweep(s *keyedShard[K], t int64) {
	minTat := int64(math.MaxInt64)
	dropped := 0
	for k, b := range s.buckets {
		if b.tat <= t {
			delete(s.buckets, k)
			dropped++
		} else {
			minTat = min(minTat, b.tat)
		}
	}
	l.keys.Add(int64(-dropped))
	s.forget(t)
	s.floor = max(s.floor, t)
	s.sweepAt = t + max(l.Tau, int64(time.Millisecond))
	s.minTat.Store(minTat)
}

// Wait takes a token from key's bucket, waiting for it as long as it
// takes, as [RateLimiter.Wait] does.
func (l *KeyedRateLimiter[K]) Wait(ctx context.Context, key K) error { return l.WaitN(ctx, key, 1) }

// WaitN is [RateLimiter.WaitN] for key's bucket; it is refused at once,
// too, for a new key when the table is full. It panics if n is negative.
func (l *KeyedRateLimiter[K]) WaitN(ctx context.Context, key K, n int) error {
	checkN("KeyedRateLimiter.WaitN", n)
	return l.waitN(ctx, key, n, sat.Max)
}

// waitN takes n tokens from key's bucket, waiting for them up to limit and
// within ctx's deadline.
func (l *KeyedRateLimiter[K]) waitN(ctx context.Context, key K, n int, limit time.Duration) error {
	if int64(n) > l.MaxN {
		l.refusedN.Add(1)
		return l.observeRefusal(ctx, l.refusal(0, n, limit))
	}
	if err := ctx.Err(); err != nil || l.Interval == 0 {
		return err
	}
	next, wait, why, ok := l.book(key, l.nowNs(&l.common), n, l.budget(ctx, limit))
	if !ok {
		if why == rateLimitRefused {
			why = l.reason(wait, n, limit)
		}
		l.refusedN.Add(1)
		return l.observeRefusal(ctx, l.refusalFor(why, wait, n))
	}
	if wait <= 0 {
		return nil
	}
	cost := int64(n) * l.Interval
	return l.sleepBooked(ctx, wait, func() { l.giveBack(key, next, cost) })
}

// Guard returns the limiter as a [Guard] that behaves as
// [RateLimiter.Enter] for the bucket of the key key finds in a call's
// context. It panics if key is nil.
func (l *KeyedRateLimiter[K]) Guard(key func(ctx context.Context) K) Guard {
	if key == nil {
		panic("resilience: KeyedRateLimiter.Guard: key function is nil")
	}
	return &keyedGuard[K]{l: l, key: key}
}

type keyedGuard[K comparable] struct {
	l   *KeyedRateLimiter[K]
	key func(ctx context.Context) K
}

// Enter takes a token from the bucket of the call's key.
func (g *keyedGuard[K]) Enter(ctx context.Context) (done func(err error), err error) {
	ticket, err := g.enter(ctx, true)
	if err != nil {
		return nil, err
	}
	return g.l.doneFunc(ctx, g.l.origin, ticket), nil
}

func (g *keyedGuard[K]) enter(ctx context.Context, _ bool) (uint64, error) {
	l := g.l
	if l.Interval == 0 {
		return l.admitted(l.origin), nil
	}
	key := g.key(ctx)
	if _, wait, why, ok := l.book(key, l.nowNs(&l.common), 1, 0); !ok {
		if why == rateLimitRefused {
			why = l.reason(wait, 1, 0)
		}
		if l.wait == 0 || why != rateLimitRefused {
			l.refusedN.Add(1)
			return 0, l.observeRefusal(ctx, l.refusalFor(why, wait, 1))
		}
		if err := l.waitN(ctx, key, 1, l.wait); err != nil {
			return 0, err
		}
	}
	return l.admitted(l.origin), nil
}

func (g *keyedGuard[K]) exit(ctx context.Context, ticket uint64, err error, report bool) {
	if report {
		g.l.callEnded(ctx, g.l.origin, ticket, err)
	}
}

func (g *keyedGuard[K]) reportsOutcomes() bool { return g.l.outcomes }

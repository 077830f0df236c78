package resilience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ChaosFault returns a policy that fails a call with err instead of
// calling fn, when the call is injected into (see [ChaosOption]); other
// calls go through untouched. The caller gets the zero T and err itself,
// so errors.Is and errors.As see it as they would see the service's own
// error. An injection allocates nothing.
//
// ChaosFault is safe for concurrent use. It panics if err is nil or an
// option is invalid; its Execute panics if fn is nil.
func ChaosFault[T any](err error, opts ...ChaosOption) Policy[T] {
	if err == nil {
		panic("resilience: ChaosFault: error is nil")
	}
	p := &chaosFault[T]{err: err}
	p.configure("ChaosFault", "chaos-fault", opts)
	return p
}

// ChaosLatency returns a policy that waits d before it calls fn, when the
// call is injected into (see [ChaosOption]); other calls go through at
// once. The wait is on the clock of [WithClock], if given, and ends when
// the call's context ends: the caller then gets the zero T and the
// context's error, and fn is not called. A d of 0 waits not at all, but
// each injection is still reported.
//
// ChaosLatency is safe for concurrent use. It panics if d is negative or
// an option is invalid; its Execute panics if fn is nil.
func ChaosLatency[T any](d time.Duration, opts ...ChaosOption) Policy[T] {
	if d < 0 {
		panic(fmt.Sprintf("resilience: ChaosLatency: latency must not be negative, got %v", d))
	}
	p := &chaosLatency[T]{d: d}
	p.configure("ChaosLatency", "chaos-latency", opts)
	return p
}

// ChaosOutcome returns a policy that answers a call with v and a nil error
// instead of calling fn, when the call is injected into (see
// [ChaosOption]); other calls go through untouched. T is inferred from v:
// a stale cache entry, an empty page, a response with a status the caller
// must handle. Every injected call gets the same v: give a value that is
// safe to share.
//
// ChaosOutcome is safe for concurrent use. It panics if an option is
// invalid; its Execute panics if fn is nil.
func ChaosOutcome[T any](v T, opts ...ChaosOption) Policy[T] {
	p := &chaosOutcome[T]{v: v}
	p.configure("ChaosOutcome", "chaos-outcome", opts)
	return p
}

// ChaosBehavior returns a policy that calls f with the call's context
// before it calls fn, when the call is injected into (see
// [ChaosOption]); other calls go through untouched. f is the side effect
// to inject: drop a cache, close a connection, use up memory or CPU. fn is
// called once f returns; a panic or runtime.Goexit in f happens to the
// caller, as one in fn would.
//
// ChaosBehavior is safe for concurrent use; f is called concurrently when
// the calls are. It panics if f is nil or an option is invalid; its
// Execute panics if fn is nil.
func ChaosBehavior[T any](f func(ctx context.Context), opts ...ChaosOption) Policy[T] {
	if f == nil {
		panic("resilience: ChaosBehavior: behavior is nil")
	}
	p := &chaosBehavior[T]{f: f}
	p.configure("ChaosBehavior", "chaos-behavior", opts)
	return p
}

// ChaosOption configures [ChaosFault], [ChaosLatency], [ChaosOutcome] and
// [ChaosBehavior]. [Option] ([WithClock], [WithObserver], [WithName]) is
// one too.
//
// Which calls are injected into is decided per call, in this order: the
// predicate of [WithChaosEnabled] (by default every call is enabled), then
// [WithChaosEvery] (every nth enabled call) or the rate of [WithChaosRate]
// (by default 1: every enabled call), drawn from [WithChaosRand]'s source
// or from math/rand/v2. With [WithObserver] a chaos policy reports an
// [EventChaos] for every injection, before it takes effect, in the
// caller's goroutine. Put chaos innermost, just around fn, so that every
// policy of the chain sees what it injects; docs/chaos.md shows why.
type ChaosOption interface {
	applyChaos(*chaosConfig)
}

type chaosConfig struct {
	common
	rate    float64
	every   uint64
	rnd     Rand
	enabled func(context.Context) bool

	// The options that chose the trigger, as the user wrote them, for a
	// panic that names two that conflict.
	rateOpt, everyOpt, randOpt string
}

type chaosOptionFunc func(*chaosConfig)

func (f chaosOptionFunc) applyChaos(c *chaosConfig) { f(c) }

func (o Option) applyChaos(c *chaosConfig) { o.set(&c.common) }

// WithChaosRate sets the share of enabled calls a chaos policy injects
// into, drawn at random for each call: 0.2 is one call in five on average,
// 0 none, 1 every one. At 0 the policy calls fn directly from Execute and
// is no layer at all in a [Compose]. The default is 1. It panics unless
// 0 <= rate <= 1.
func WithChaosRate(rate float64) ChaosOption {
	if !(rate >= 0 && rate <= 1) { // also false for NaN
		panic(fmt.Sprintf("resilience: WithChaosRate: rate must be in [0, 1], got %v", rate))
	}
	name := fmt.Sprintf("WithChaosRate(%v)", rate)
	return chaosOptionFunc(func(c *chaosConfig) { c.rate, c.rateOpt = rate, name })
}

// WithChaosEvery makes a chaos policy inject into every nth enabled call
// (the nth, the 2nth, and so on), counted from the policy's first call, in
// the order the calls reach it: a deterministic trigger for tests. It
// takes the place of the random draw; giving [WithChaosRate] or
// [WithChaosRand] with it makes the constructor panic. It panics if n < 1.
func WithChaosEvery(n int) ChaosOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithChaosEvery: n must be at least 1, got %d", n))
	}
	name := fmt.Sprintf("WithChaosEvery(%d)", n)
	return chaosOptionFunc(func(c *chaosConfig) { c.every, c.everyOpt = uint64(n), name })
}

// WithChaosRand makes a chaos policy draw from r whether to inject into a
// call, so that a test sees the same injections on every run: pass a
// *rand.Rand of math/rand/v2 with a fixed seed. The policy draws from r
// one call at a time, under a lock of its own, so r need not be safe for
// concurrent use; concurrent calls take the draws in the order they reach
// the policy. No draw is made for a call that is not enabled, nor at a
// rate of 0 or 1. By default draws come from math/rand/v2's top-level
// functions. It panics if r is nil (a nil interface, or a nil pointer,
// function or channel in one).
func WithChaosRand(r Rand) ChaosOption {
	if isNil(r) {
		panic("resilience: WithChaosRand: rand is " + nilName(r))
	}
	return chaosOptionFunc(func(c *chaosConfig) { c.rnd, c.randOpt = r, "WithChaosRand" })
}

// WithChaosEnabled makes a chaos policy inject only into calls whose
// context f approves: calls of one tenant, of a test, of a canary, while a
// flag is on. f is called once for each call, before anything else is
// decided, and concurrently when the calls are. By default every call is
// enabled. It panics if f is nil.
func WithChaosEnabled(f func(ctx context.Context) bool) ChaosOption {
	if f == nil {
		panic("resilience: WithChaosEnabled: predicate is nil")
	}
	return chaosOptionFunc(func(c *chaosConfig) { c.enabled = f })
}

// chaosTrigger decides which calls a chaos policy injects into.
type chaosTrigger struct {
	common
	component string
	enabled   func(context.Context) bool // nil: every call
	never     bool                       // rate 0: the policy is no layer at all
	always    bool                       // rate 1 and no WithChaosEvery: no draw
	threshold uint64                     // a call is injected into when its draw is below
	every     uint64                     // WithChaosEvery's n, or 0
	count     atomic.Uint64              // the enabled calls so far, for every

	mu  sync.Mutex // one draw at a time from rnd
	rnd Rand       // nil: math/rand/v2
}

// configure reads the options given to the constructor fn.
func (t *chaosTrigger) configure(fn, component string, opts []ChaosOption) {
	cfg := chaosConfig{rate: 1}
	for _, o := range opts {
		checkOption(fn, o)
		o.applyChaos(&cfg)
	}
	if cfg.everyOpt != "" {
		for _, other := range []string{cfg.rateOpt, cfg.randOpt} {
			if other != "" {
				panic(fmt.Sprintf("resilience: %s: %s and %s both decide which calls to inject into; give one", fn, cfg.everyOpt, other))
			}
		}
	}
	t.common, t.component, t.enabled, t.rnd = cfg.common, component, cfg.enabled, cfg.rnd
	t.every = cfg.every
	switch {
	case t.every > 0:
	case cfg.rate == 0:
		t.never = true
	case cfg.rate == 1:
		t.always = true
	default:
		// A draw u of 64 bits is below rate·2^64 with probability rate;
		// the product is exact to within one part in 2^53, and below 2^64
		// for any rate below 1.
		t.threshold = uint64(cfg.rate * (1 << 64))
	}
}

// fire reports whether the call of ctx is injected into.
func (t *chaosTrigger) fire(ctx context.Context) bool {
	if t.enabled != nil && !t.enabled(ctx) {
		return false
	}
	return t.always || t.pick()
}

// pick decides for an enabled call when the rate is neither 0 nor 1.
func (t *chaosTrigger) pick() bool {
	if t.every > 0 {
		return t.count.Add(1)%t.every == 0
	}
	if t.rnd == nil {
		return rand.Uint64() < t.threshold
	}
	t.mu.Lock()
	u := t.rnd.Uint64()
	t.mu.Unlock()
	return u < t.threshold
}

// report tells the observer, if any, of an injection.
func (t *chaosTrigger) report(ctx context.Context, e Event) {
	if t.observer != nil {
		e.Kind, e.Component = EventChaos, t.component
		t.observe(ctx, e)
	}
}

type chaosFault[T any] struct {
	chaosTrigger
	err error
}

func (p *chaosFault[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: ChaosFault: fn is nil")
	}
	if p.never || !p.fire(ctx) {
		return fn(ctx)
	}
	return p.inject(ctx)
}

func (p *chaosFault[T]) link(next chain[T]) chain[T] {
	if p.never {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) {
		if !p.fire(ctx) {
			return next(ctx, fn)
		}
		return p.inject(ctx)
	}
}

func (p *chaosFault[T]) inject(ctx context.Context) (T, error) {
	p.report(ctx, Event{Err: p.err})
	var zero T
	return zero, p.err
}

type chaosLatency[T any] struct {
	chaosTrigger
	d time.Duration
}

func (p *chaosLatency[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: ChaosLatency: fn is nil")
	}
	if p.never || !p.fire(ctx) {
		return fn(ctx)
	}
	if err := p.wait(ctx); err != nil {
		var zero T
		return zero, err
	}
	return fn(ctx)
}

func (p *chaosLatency[T]) link(next chain[T]) chain[T] {
	if p.never {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) {
		if p.fire(ctx) {
			if err := p.wait(ctx); err != nil {
				var zero T
				return zero, err
			}
		}
		return next(ctx, fn)
	}
}

// wait waits the latency, and returns the context's error if it ended
// first.
func (p *chaosLatency[T]) wait(ctx context.Context) error {
	p.report(ctx, Event{Wait: p.d})
	if p.d == 0 {
		return nil
	}
	if !p.sleep(ctx, p.d) {
		return ctx.Err()
	}
	return nil
}

type chaosOutcome[T any] struct {
	chaosTrigger
	v T
}

func (p *chaosOutcome[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: ChaosOutcome: fn is nil")
	}
	if p.never || !p.fire(ctx) {
		return fn(ctx)
	}
	p.report(ctx, Event{})
	return p.v, nil
}

func (p *chaosOutcome[T]) link(next chain[T]) chain[T] {
	if p.never {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) {
		if !p.fire(ctx) {
			return next(ctx, fn)
		}
		p.report(ctx, Event{})
		return p.v, nil
	}
}

type chaosBehavior[T any] struct {
	chaosTrigger
	f func(context.Context)
}

func (p *chaosBehavior[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: ChaosBehavior: fn is nil")
	}
	if !p.never && p.fire(ctx) {
		p.report(ctx, Event{})
		p.f(ctx)
	}
	return fn(ctx)
}

func (p *chaosBehavior[T]) link(next chain[T]) chain[T] {
	if p.never {
		return next
	}
	return func(ctx context.Context, fn Func[T]) (T, error) {
		if p.fire(ctx) {
			p.report(ctx, Event{})
			p.f(ctx)
		}
		return next(ctx, fn)
	}
}

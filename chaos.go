package resilience

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// ChaosFault returns a policy that fails a call it injects into (see
// [ChaosOption]) with the zero T and err itself, without calling fn. It
// panics if err is nil.
func ChaosFault[T any](err error, opts ...ChaosOption) Policy[T] {
	if err == nil {
		panic("resilience: ChaosFault: error is nil")
	}
	p := &chaosFault[T]{err: err}
	p.configure("ChaosFault", KindChaosFault, opts)
	return p
}

// ChaosLatency returns a policy that waits d on its clock before it calls
// fn, in a call it injects into (see [ChaosOption]). A call whose context
// ends during the wait gets the zero T and the context's error, and fn is
// not called. A d of 0 does not wait but is still reported. It panics if d
// is negative.
func ChaosLatency[T any](d time.Duration, opts ...ChaosOption) Policy[T] {
	checkDuration("ChaosLatency", "latency", d)
	p := &chaosLatency[T]{d: d}
	p.configure("ChaosLatency", KindChaosLatency, opts)
	return p
}

// ChaosOutcome returns a policy that answers a call it injects into (see
// [ChaosOption]) with v and a nil error, without calling fn: a stale cache
// entry, an empty page. Every such call gets the same v, so v must be safe
// to share.
func ChaosOutcome[T any](v T, opts ...ChaosOption) Policy[T] {
	p := &chaosOutcome[T]{v: v}
	p.configure("ChaosOutcome", KindChaosOutcome, opts)
	return p
}

// ChaosBehavior returns a policy that, in a call it injects into (see
// [ChaosOption]), calls f with the call's context and then fn: f is the
// side effect to inject (drop a cache, close a connection). f is called
// concurrently when the calls are; a panic in f happens to the caller, as
// one in fn would. It panics if f is nil.
func ChaosBehavior[T any](f func(ctx context.Context), opts ...ChaosOption) Policy[T] {
	if f == nil {
		panic("resilience: ChaosBehavior: behavior is nil")
	}
	p := &chaosBehavior[T]{f: f}
	p.configure("ChaosBehavior", KindChaosBehavior, opts)
	return p
}

// ChaosOption configures [ChaosFault], [ChaosLatency], [ChaosOutcome] and
// [ChaosBehavior]; an [Option] is one too. A call is injected into if
// [WithChaosEnabled] approves it and [WithChaosEvery] or [WithChaosRate]
// (by default every call) picks it, and reported as an [EventChaos]; other
// calls go through untouched. Put chaos innermost, just around fn. The
// chaos policies are safe for concurrent use; their constructors panic if
// an option is invalid, and their Execute if fn is nil.
type ChaosOption interface {
	applyChaos(*chaosConfig)
}

type chaosConfig struct {
	common
	rate    float64
	every   uint64
	enabled func(context.Context) bool

	// The options that chose the trigger, as the user wrote them, for a
	// panic that names two that conflict.
	rateOpt, everyOpt string
}

type chaosOptionFunc func(*chaosConfig)

func (f chaosOptionFunc) applyChaos(c *chaosConfig) { f(c) }

func (o Option) applyChaos(c *chaosConfig) { o.set(&c.common) }

// WithChaosRate sets the share of enabled calls a chaos policy injects
// into, drawn at random for each call: 0.2 is one in five on average. At 0
// the policy is no layer at all in a [Compose]. The default is 1. It panics
// unless 0 <= rate <= 1.
func WithChaosRate(rate float64) ChaosOption {
	if !(rate >= 0 && rate <= 1) { // also false for NaN
		panic(fmt.Sprintf("resilience: WithChaosRate: rate must be in [0, 1], got %v", rate))
	}
	name := fmt.Sprintf("WithChaosRate(%v)", rate)
	return chaosOptionFunc(func(c *chaosConfig) { c.rate, c.rateOpt = rate, name })
}

// WithChaosEvery makes a chaos policy inject into every nth enabled call,
// in the order the calls reach it, instead of drawing: a deterministic
// trigger for tests. It panics if n < 1; the constructor panics if
// [WithChaosRate] or [WithRand] is given too.
func WithChaosEvery(n int) ChaosOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithChaosEvery: n must be at least 1, got %d", n))
	}
	name := fmt.Sprintf("WithChaosEvery(%d)", n)
	return chaosOptionFunc(func(c *chaosConfig) { c.every, c.everyOpt = uint64(n), name })
}

// WithChaosEnabled makes a chaos policy inject only into calls whose
// context f approves (one tenant, a canary, while a flag is on). f is
// called once for each call, concurrently when the calls are. By default
// every call is enabled. It panics if f is nil.
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

}

// configure reads the options given to the constructor fn.
func (t *chaosTrigger) configure(fn, component string, opts []ChaosOption) {
	cfg := chaosConfig{rate: 1}
	for _, o := range opts {
		checkOption(fn, o)
		o.applyChaos(&cfg)
	}
	if cfg.everyOpt != "" {
		randOpt := ""
		if cfg.common.rand != nil {
			randOpt = "WithRand"
		}
		for _, other := range []string{cfg.rateOpt, randOpt} {
			if other != "" {
				panic(fmt.Sprintf("resilience: %s: %s and %s both decide which calls to inject into; give one", fn, cfg.everyOpt, other))
			}
		}
	}
	t.common, t.component, t.enabled = cfg.common, component, cfg.enabled
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
	return source{t.rand}.uint64() < t.threshold
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

package resilience

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/latency"
)

// Hedge returns a policy that cuts the tail of a call's latency: when no
// result has come after a delay ([WithHedgeQuantile]), it starts another
// attempt, within [WithHedgeMax] and a budget, and returns the first success
// or error not to retry, or the last error when every attempt failed; the
// losers are cancelled and their results go to the [WithDiscard] hook. The
// first attempt runs in the caller's goroutine: a default-mode [Timeout]
// inside the Hedge bounds every attempt. The policy is an [Inspector]:
// register it with reg.Register(name, h.(resilience.Inspector)). It panics
// if an option is invalid.
func Hedge[T any](opts ...HedgeOption) Policy[T] {
	cfg := hedgeConfig{max: 1, quantile: 0.95, floor: time.Millisecond, ceiling: time.Second}
	for _, o := range opts {
		checkOption("Hedge", o)
		o.applyHedge(&cfg)
	}
	cfg.route = newRoute(KindHedge, &cfg.common)
	h := &hedge[T]{hedgeConfig: cfg, firstWon: new(hedgeState[T]), direct: callsFn[T]()}
	h.discard = discardOf[T]("Hedge", cfg.discard)
	if !cfg.fixed {
		h.lat = latency.New(cfg.quantile, cfg.floor, cfg.ceiling, hedgeWindow)
	}
	if h.budget == nil {
		var opts []RetryBudgetOption
		if cfg.clock != nil {
			opts = append(opts, WithClock(cfg.clock))
		}
		h.budget = NewRetryBudget(0.1, 1, opts...)
	}
	return h
}

// hedgeWindow is the number of latencies each of the estimate's two
// histograms holds.
const hedgeWindow = 1000

// HedgeOption configures [Hedge]; an [Option] or [WithDiscard] is one too.
type HedgeOption interface {
	applyHedge(*hedgeConfig)
}

type hedgeConfig struct {
	common
	fixed          bool // the delay is set, not estimated
	delay          time.Duration
	quantile       float64
	floor, ceiling time.Duration
	max            int
	budget         *RetryBudget
	retryIf        func(error) bool
	discard        any // func(T), checked by Hedge[T]
}

type hedgeOptionFunc func(*hedgeConfig)

func (f hedgeOptionFunc) applyHedge(c *hedgeConfig) { f(c) }

func (o Option) applyHedge(c *hedgeConfig)        { o.set(&c.common) }
func (o DiscardOption) applyHedge(c *hedgeConfig) { c.discard = o.f }

// WithHedgeDelay fixes the delay after which a [Hedge] starts each further
// attempt, instead of [WithHedgeQuantile]; 0 starts them all at once. It
// panics if d is negative.
func WithHedgeDelay(d time.Duration) HedgeOption {
	checkDuration("WithHedgeDelay", "delay", d)
	return hedgeOptionFunc(func(c *hedgeConfig) { c.fixed, c.delay = true, d })
}

// WithHedgeQuantile makes a [Hedge]'s delay the quantile q of the latencies
// of recent successful attempts, within [floor, ceiling], and the ceiling
// until 32 are known. The default is (0.95, 1ms, 1s). It panics unless
// 0 < q < 1 and 0 <= floor <= ceiling.
func WithHedgeQuantile(q float64, floor, ceiling time.Duration) HedgeOption {
	if !(q > 0 && q < 1) {
		panic(fmt.Sprintf("resilience: WithHedgeQuantile: quantile must be in (0, 1), got %v", q))
	}
	if floor < 0 || ceiling < floor {
		panic(fmt.Sprintf("resilience: WithHedgeQuantile: need 0 <= floor <= ceiling, got floor %v, ceiling %v", floor, ceiling))
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.fixed, c.quantile, c.floor, c.ceiling = false, q, floor, ceiling })
}

// WithHedgeMax sets how many hedges a [Hedge] may start for one call, on
// top of the first attempt. The default is 1. It panics unless 1 <= n <= 100.
func WithHedgeMax(n int) HedgeOption {
	if n < 1 || n > 100 {
		panic(fmt.Sprintf("resilience: WithHedgeMax: hedges must be between 1 and 100, got %d", n))
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.max = n })
}

// WithHedgeBudget makes a [Hedge]'s hedges draw on b, as retries do, shared
// with other policies; a hedge b refuses is not started. (A quota gets
// nothing back from a Hedge's successes.) By default a Hedge has a budget of
// its own: 10% of its calls, plus one a second. It panics if b is nil.
func WithHedgeBudget(b *RetryBudget) HedgeOption {
	if b == nil {
		panic("resilience: WithHedgeBudget: budget is nil")
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.budget = b })
}

// WithHedgeRetryIf decides which errors let a [Hedge]'s other attempts go
// on (f returns true) rather than answer the call. By default every error
// does but a [Permanent] one or one after the caller's context ended. It
// panics if f is nil.
func WithHedgeRetryIf(f func(err error) bool) HedgeOption {
	if f == nil {
		panic("resilience: WithHedgeRetryIf: predicate is nil")
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.retryIf = f })
}

type hedge[T any] struct {
	hedgeConfig
	discard  func(T)
	lat      *latency.Quantile // nil with a fixed delay
	firstWon *hedgeState[T]    // a call's hedges once its first attempt is the answer (see claim)
	direct   chain[T]          // fn alone, for Execute
}

func (h *hedge[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Hedge: fn is nil")
	}
	return h.run(ctx, h.direct, fn, h.outcomes)
}

func (h *hedge[T]) link(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return h.run(ctx, next, fn, h.outcomes) }
}

func (h *hedge[T]) reportsOutcomes() bool { return h.outcomes && h.observer != nil }

func (h *hedge[T]) linkQuiet(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return h.run(ctx, next, fn, false) }
}

// retryable reports whether err lets the other attempts go on.
func (h *hedge[T]) retryable(ctx context.Context, err error) bool {
	if asPermanent(err) != nil || ctx.Err() != nil {
		return false
	}
	return h.retryIf == nil || h.retryIf(err)
}

func (h *hedge[T]) currentDelay() time.Duration {
	if h.lat == nil {
		return h.delay
	}
	return h.lat.Get()
}

// run makes a call's first attempt in the caller's goroutine, with a timer
// that starts the hedges if no answer has come by the delay. report says
// whether the call's EventCallEnded is reported.
func (h *hedge[T]) run(ctx context.Context, next chain[T], fn Func[T], report bool) (v T, err error) {
	h.budget.called()
	var start time.Time
	if h.lat != nil || h.outcomes {
		start = h.now()
	}
	delay := h.currentDelay()
	first, cancel := context.WithCancel(ctx)
	r := &hedgeRun[T]{h: h, ctx: ctx, next: next, fn: fn, cancel: cancel, delay: delay}
	finished := false
	defer func() {
		if !finished { // fn or the observer panicked or called runtime.Goexit
			if s := h.claim(&r.hedges); s != nil {
				s.abandon()
			} else {
				r.endFirst()
			}
		}
	}()
	if delay == 0 {
		r.start(false) // every attempt at once
	} else {
		r.arm()
	}
	v, err = next(first, fn)
	finished = true
	if err == nil && h.lat != nil {
		h.lat.Record(h.since(start))
	}
	if s := h.claim(&r.hedges); s != nil {
		v, err = s.join(v, err)
	} else {
		r.endFirst() // no hedge was started: the first attempt is the answer
	}
	if report {
		h.ended(ctx, start, err)
	}
	return v, err
}

// claim decides, once the first attempt of a call returned, whether it is
// the answer: it is, and claim returns nil, if it sets hedges, the call's
// race with its trigger, to h.firstWon before the trigger set it to the state
// of the hedges it started; otherwise claim returns that state.
func (h *hedge[T]) claim(hedges *atomic.Pointer[hedgeState[T]]) *hedgeState[T] {
	if hedges.CompareAndSwap(nil, h.firstWon) {
		return nil
	}
	return hedges.Load()
}

// newHedges returns the state of a call's hedges, counting the first
// attempt, whose context cancelFirst cancels.
func (h *hedge[T]) newHedges(ctx context.Context, next chain[T], fn Func[T], delay time.Duration, cancelFirst context.CancelFunc) *hedgeState[T] {
	return &hedgeState[T]{h: h, ctx: ctx, next: next, fn: fn, delay: delay,
		started: 1, running: 1, cancels: []context.CancelFunc{cancelFirst}, done: make(chan struct{})}
}

func (h *hedge[T]) ended(ctx context.Context, start time.Time, err error) {
	if h.outcomes && h.observer != nil {
		h.observe(ctx, Event{Kind: EventCallEnded, Component: KindHedge, Err: err, Duration: h.since(start)})
	}
}

// hedgeRun is one call's first attempt and the timer that starts the
// hedges. It is made for each call, never pooled: its timer belongs to the
// caller's testing/synctest bubble, if any.
type hedgeRun[T any] struct {
	h      *hedge[T]
	timer  *time.Timer                   // on the real clock, once armed
	stop   func() bool                   // on an injected clock, once armed
	hedges atomic.Pointer[hedgeState[T]] // the race of the caller and the timer (see claim)

	ctx    context.Context // the caller's
	next   chain[T]
	fn     Func[T]
	cancel context.CancelFunc // the first attempt's context's
	delay  time.Duration
}

// arm sets the timer that starts the hedges at the delay.
func (r *hedgeRun[T]) arm() {
	if r.h.clock == nil {
		r.timer = time.AfterFunc(r.delay, r.fire)
		return
	}
	r.stop = r.h.afterFunc(r.delay, r.fire)
}

// fire starts hedging from the timer's goroutine, unless the first attempt
// has returned.
func (r *hedgeRun[T]) fire() { r.start(true) }

// endFirst ends the first attempt's context once its outcome is the
// answer, and stops the timer of the hedges.
func (r *hedgeRun[T]) endFirst() {
	r.cancel()
	switch {
	case r.timer != nil:
		r.timer.Stop()
	case r.stop != nil:
		r.stop()
	}
}

// start starts hedging, unless the first attempt has returned. detached
// says that it runs in a goroutine of its own, not the caller's.
func (r *hedgeRun[T]) start(detached bool) {
	s := r.h.newHedges(r.ctx, r.next, r.fn, r.delay, r.cancel)
	if !r.hedges.CompareAndSwap(nil, s) {
		return // the first attempt returned first
	}
	if r.delay > 0 {
		s.launch(detached)
		return
	}
	for range r.h.max {
		s.launch(detached)
	}
}

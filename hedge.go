package resilience

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Hedge returns a policy that cuts the tail of a call's latency: when no
// result has come after a delay, it starts another attempt (a hedge), up to
// [WithHedgeMax] of them, and the first acceptable result is returned. A
// success is acceptable, and so is an error not to retry; a retryable error
// (by default any error, as for [Retry]; see [WithHedgeRetryIf]) lets the
// other attempts go on, and the call fails with the last error only when
// every attempt started has failed.
//
// The delay follows the 95th percentile of the latencies of recent
// successful attempts (the last 1,000 to 2,000), within a floor of 1ms and a
// ceiling of 1s, and is the ceiling until 32 latencies are known;
// [WithHedgeQuantile] changes these, and [WithHedgeDelay] fixes the delay
// (0: every attempt at once). The estimate takes no lock. On the timing
// wheel (below), every attempt that outlasts the delay is timed, but of
// the first attempts that answer before it only one in 16, drawn by a hash
// of the attempt's start that has nothing to do with its latency, and
// counting for 16, so that most calls read the clock once; the estimate
// stays unbiased, a little noisier.
//
// Hedges draw from a retry budget, so that a slow server is never doubled:
// by default one of the Hedge's own that lets hedges add 10% to the calls,
// plus one a second; [WithHedgeBudget] shares one with other policies.
//
// On the real clock, the first attempt's context and the trigger of the
// hedges take one allocation and a slot on the timing wheel that every
// [Timeout] shares: a delay is met up to a millisecond late. A delay under
// a millisecond, an injected clock and a testing/synctest bubble get a
// context.WithCancel and a runtime timer instead.
//
// The losers' contexts are cancelled the moment a winner is chosen; their
// results, when they come, go to the [WithDiscard] hook, and nothing is
// left running once they return. The caller does not wait for them, with
// one exception: the first attempt runs in the caller's goroutine, so that
// a call that answers before the delay needs no goroutine, and a first
// attempt that ignores its context holds the caller until it returns. Put
// a [Timeout] in its default mode inside the Hedge to bound every attempt:
//
//	Compose(Hedge[T](), Timeout[T](d), Guarded[T](breaker))
//
// Outside a Retry, a Hedge's attempts are hedged as a whole; inside it,
// each retry is. A panic in an attempt reaches the caller if no result has
// been returned yet; later, it is reported as an [EventLatePanic].
//
// Hedge panics if an option is invalid.
func Hedge[T any](opts ...HedgeOption) Policy[T] {
	cfg := hedgeConfig{max: 1, quantile: 0.95, floor: time.Millisecond, ceiling: time.Second}
	for _, o := range opts {
		checkOption("Hedge", o)
		o.applyHedge(&cfg)
	}
	h := &hedge[T]{hedgeConfig: cfg, alone: new(hedgeState[T])}
	h.self = h.newLink(last[T]())
	h.discard = discardOf[T]("Hedge", cfg.discard)
	if !cfg.fixed {
		h.lat = newLatencies(cfg.quantile, cfg.floor, cfg.ceiling, hedgeWindow)
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

// HedgeOption configures [Hedge]. [Option] ([WithClock], [WithObserver],
// [WithName]) and [WithDiscard] are ones too.
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
// attempt; 0 starts every attempt at once. By default the delay follows a
// quantile of recent latencies. It panics if d is negative.
func WithHedgeDelay(d time.Duration) HedgeOption {
	if d < 0 {
		panic(fmt.Sprintf("resilience: WithHedgeDelay: delay must not be negative, got %v", d))
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.fixed, c.delay = true, d })
}

// WithHedgeQuantile makes a [Hedge]'s delay follow the quantile q (0.95:
// the 95th percentile) of the latencies of recent successful attempts,
// kept within [floor, ceiling], and the ceiling until 32 latencies are
// known. The default is (0.95, 1ms, 1s). It panics unless 0 < q < 1 and
// 0 <= floor <= ceiling.
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

// WithHedgeBudget makes a [Hedge]'s hedges draw on b, shared with other
// policies (a [Retry]'s retries, say): each call deposits, each hedge
// withdraws, and a hedge the budget refuses is not started. By default a
// Hedge has a budget of its own: 10% of its calls, plus one a second. It
// panics if b is nil.
func WithHedgeBudget(b *RetryBudget) HedgeOption {
	if b == nil {
		panic("resilience: WithHedgeBudget: budget is nil")
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.budget = b })
}

// WithHedgeRetryIf decides which errors let a [Hedge]'s other attempts go
// on (f returns true) and which are the call's answer (false). By default
// every error lets them go on, but a [Permanent] one or one that comes
// after the caller's context ended. It panics if f is nil.
func WithHedgeRetryIf(f func(err error) bool) HedgeOption {
	if f == nil {
		panic("resilience: WithHedgeRetryIf: predicate is nil")
	}
	return hedgeOptionFunc(func(c *hedgeConfig) { c.retryIf = f })
}

type hedge[T any] struct {
	hedgeConfig
	discard func(T)
	lat     *latencies     // nil with a fixed delay
	runs    sync.Pool      // of *hedgeRun[T] whose timer never fired (real clock)
	alone   *hedgeState[T] // a call's hedges once its first attempt is the answer (see claim)
	self    *hedgeLink[T]  // the Hedge on its own, for Execute
}

// hedgeLink is a Hedge at one place in a chain: what follows it, and the
// trigger of its calls' hedges on the timing wheel.
type hedgeLink[T any] struct {
	h    *hedge[T]
	next chain[T]
	fire func(*deadlineCtx) // the hook of its hedgeFirsts
}

func (h *hedge[T]) newLink(next chain[T]) *hedgeLink[T] {
	l := &hedgeLink[T]{h: h, next: next}
	l.fire = l.fireFirst
	return l
}

func (h *hedge[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Hedge: fn is nil")
	}
	return h.run(ctx, h.self, fn)
}

func (h *hedge[T]) link(next chain[T]) chain[T] {
	l := h.newLink(next)
	return func(ctx context.Context, fn Func[T]) (T, error) { return h.run(ctx, l, fn) }
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
	return h.lat.get()
}

func (h *hedge[T]) run(ctx context.Context, l *hedgeLink[T], fn Func[T]) (v T, err error) {
	h.budget.called()
	delay := h.currentDelay()
	now, ok := time.Duration(0), false
	if h.clock == nil {
		now, ok = wheelNow(delay, triggerMin)
	}
	if !ok {
		return h.runTimed(ctx, l.next, fn, delay)
	}
	// On the timing wheel: the first attempt's context is the trigger of
	// the hedges, and the call's one allocation.
	c := &hedgeFirst[T]{deadlineCtx: deadlineCtx{parent: ctx, at: now + delay}, fn: fn}
	c.setTrigger(l.fire)
	finished := false
	defer func() {
		if !finished { // fn or the observer panicked or called runtime.Goexit
			if s := h.claim(&c.hedges); s != nil {
				s.abandon()
			} else {
				c.releaseTrigger()
			}
		}
	}()
	v, err = l.next(&c.deadlineCtx, fn)
	finished = true
	if c.releaseTrigger() {
		// The trigger left the wheel unfired: no hedge started, none will,
		// and the first attempt is the answer.
		if err == nil && h.lat != nil && drawn(uintptr(unsafe.Pointer(c)), now) {
			h.lat.record(h.mark()-now, latencySample)
		}
		h.ended(ctx, err)
		return v, err
	}
	if err == nil && h.lat != nil {
		h.lat.record(h.mark()-now, 1)
	}
	// The trigger fired: the first attempt is the answer only if it came
	// before the hedges.
	if s := h.claim(&c.hedges); s != nil {
		v, err = s.join(v, err)
	}
	h.ended(ctx, err)
	return v, err
}

// claim decides, once the first attempt of a call returned, whether it is
// the answer: it is, and claim returns nil, if it sets hedges, the call's
// race with its trigger, to h.alone before the trigger set it to the state
// of the hedges it started; otherwise claim returns that state.
func (h *hedge[T]) claim(hedges *atomic.Pointer[hedgeState[T]]) *hedgeState[T] {
	if hedges.CompareAndSwap(nil, h.alone) {
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

// hedgeFirst is the first attempt's context of a call on the timing wheel,
// and the trigger of its hedges: a trigger deadlineCtx, filed on the wheel
// for the time the first hedge is due, whose hook is its link's fireFirst,
// and the call's fn beside it, in one allocation of 128 bytes. The caller
// and the trigger race to set hedges: the caller to h.alone once the first
// attempt returned, the trigger to the state of the hedges it starts.
type hedgeFirst[T any] struct {
	deadlineCtx
	hedges atomic.Pointer[hedgeState[T]]
	fn     Func[T]
}

// fireFirst starts the hedges of the call whose first attempt has the
// context c, in a goroutine of the wheel's, unless the first attempt has
// returned. Further hedges follow the delay of the moment.
func (l *hedgeLink[T]) fireFirst(c *deadlineCtx) {
	// c heads a hedgeFirst[T]: only run files this hook, on one of those.
	f := (*hedgeFirst[T])(unsafe.Pointer(c))
	s := l.h.newHedges(c.parent, l.next, f.fn, l.h.currentDelay(), c.release)
	if f.hedges.CompareAndSwap(nil, s) {
		s.launch(true)
	}
}

// runTimed is run with a runtime timer as the trigger of the hedges: a
// delay under the wheel's tick, an injected clock, a synctest bubble.
func (h *hedge[T]) runTimed(ctx context.Context, next chain[T], fn Func[T], delay time.Duration) (v T, err error) {
	r, start := h.begin(ctx, next, fn, delay)
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
	if r.delay == 0 {
		r.start(false) // every attempt at once
	} else {
		r.arm(r.delay)
	}
	v, err = next(r.first, fn)
	finished = true
	if err == nil && h.lat != nil {
		h.lat.record(h.mark()-start, 1)
	}
	if s := h.claim(&r.hedges); s != nil {
		v, err = s.join(v, err)
	} else {
		r.endFirst() // no hedge was started: the first attempt is the answer
	}
	h.ended(ctx, err)
	return v, err
}

// begin prepares a call's first attempt in a run, pooled on the real
// clock: the first attempt gets a context.WithCancel and the run a timer,
// which runTimed arms once it is ready for a panic (an observer's, as the
// hedges start). begin returns the time the latency of the first attempt
// is measured from (see mark).
func (h *hedge[T]) begin(ctx context.Context, next chain[T], fn Func[T], delay time.Duration) (*hedgeRun[T], time.Duration) {
	actx, cancel := context.WithCancel(ctx)
	r := h.getRun()
	r.ctx, r.next, r.fn, r.cancel, r.delay, r.first = ctx, next, fn, cancel, delay, actx
	var start time.Duration
	if h.lat != nil {
		start = h.mark()
	}
	return r, start
}

// latencySample is how rarely a first attempt that answers before the
// delay, on the timing wheel, is timed: one in latencySample, counting for
// as many, so that most calls read the clock once. The estimate stays
// unbiased, for every attempt that outlasts the delay is timed, and the
// others are drawn at random (see drawn).
const latencySample = 1 << latencySampleBits

const latencySampleBits = 4

// drawn reports whether the first attempt whose context is at address
// addr, started at now, is one of the one in latencySample that are timed.
// It hashes the address with the start time (Fibonacci hashing: the top
// bits of the product with 2^64 divided by the golden ratio), so that the
// draw costs a multiplication, needs no state, and has nothing to do with
// how long the attempt takes: either input alone spreads the draws evenly
// (TestHedgeDrawn).
func drawn(addr uintptr, now time.Duration) bool {
	x := (uint64(addr) ^ uint64(now)) * 0x9e3779b97f4a7c15
	return x>>(64-latencySampleBits) == 0
}

// mark returns the time on the hedge's clock, as a duration from an origin
// of its own: latencies are differences of two marks.
func (h *hedge[T]) mark() time.Duration {
	if h.clock == nil {
		return time.Since(epoch) // one reading of the monotonic clock
	}
	return time.Duration(h.clock.Now().UnixNano())
}

func (h *hedge[T]) ended(ctx context.Context, err error) {
	if h.outcomes && h.observer != nil {
		h.observe(ctx, Event{Kind: EventCallEnded, Component: "hedge", Err: err})
	}
}

// hedgeRun is one call's first attempt and the runtime timer that starts
// the hedges, where the timing wheel does not serve the delay (see
// runTimed). With the real clock it is pooled with its timer, and reused
// as long as the timer never fired.
type hedgeRun[T any] struct {
	h      *hedge[T]
	timer  *time.Timer                   // real clock
	stop   func() bool                   // an injected clock's timer
	hedges atomic.Pointer[hedgeState[T]] // the race of the caller and the timer (see claim)

	// What fire needs, set before the timer is armed.
	ctx    context.Context
	next   chain[T]
	fn     Func[T]
	first  context.Context    // the first attempt's, a context.WithCancel
	cancel context.CancelFunc // first's
	delay  time.Duration
}

func (h *hedge[T]) getRun() *hedgeRun[T] {
	if h.clock == nil {
		if r, ok := h.runs.Get().(*hedgeRun[T]); ok {
			return r
		}
	}
	return &hedgeRun[T]{h: h}
}

// putRun recycles a run whose timer never fired, on the real clock.
func (h *hedge[T]) putRun(r *hedgeRun[T]) {
	if h.clock != nil {
		return
	}
	if r.hedges.Load() != nil {
		r.hedges.Store(nil)
	}
	r.ctx, r.next, r.fn, r.first, r.cancel = nil, nil, nil, nil, nil
	h.runs.Put(r)
}

func (r *hedgeRun[T]) arm(d time.Duration) {
	if r.h.clock != nil {
		r.stop = r.h.afterFunc(d, r.fire)
		return
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(d, r.fire)
		return
	}
	r.timer.Reset(d)
}

// disarm stops the timer and reports whether it stopped it before it fired.
func (r *hedgeRun[T]) disarm() bool {
	if r.timer != nil {
		return r.timer.Stop()
	}
	if r.stop != nil {
		return r.stop()
	}
	return false
}

// fire starts hedging from the timer's goroutine, unless the first attempt
// has returned.
func (r *hedgeRun[T]) fire() { r.start(true) }

// endFirst ends the first attempt's context once its outcome is the
// answer, stops the timer of the hedges, and recycles the run when it can.
func (r *hedgeRun[T]) endFirst() {
	r.cancel()
	if r.disarm() {
		r.h.putRun(r)
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

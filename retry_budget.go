package resilience

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// RetryBudget bounds the retries of many calls together, so that an outage
// is not multiplied by every caller's retries: a quota ([NewRetryQuota], the
// AWS SDKs'), a throttle ([NewRetryThrottle], gRPC's) or a budget
// ([NewRetryBudget], Finagle's). Share one among [Retry] policies of any
// result type with [WithBudget], and with a [Hedge] with [WithHedgeBudget].
// Its observer gets [EventRefused], [EventExhausted] and [EventReplenished].
// A RetryBudget is safe for concurrent use; the zero value is not usable.
type RetryBudget struct {
	// The balance in millionths of a thousandth of a retry (see unit):
	// integers, so that deposits add exactly and concurrently.
	balance atomic.Int64

	perCall    int64 // deposited when a call begins (budget)
	perSuccess int64 // deposited when an attempt succeeds (throttle)
	perFailure int64 // withdrawn when an attempt fails and is to be retried (throttle)
	perRetry   int64 // withdrawn by each retry (budget, quota)
	keep       int64 // a retry is made only if it leaves at least this much
	capacity   int64 // the balance at most
	kind       string

	timeoutCost int64 // withdrawn by a retry after a timeout (quota)
	refunds     bool  // a retry that succeeds gives back what it took (quota)

	minPerSecond float64
	common
	mu       sync.Mutex
	floor    float64 // retries the floor still allows
	refilled time.Time

	// Whether the last retry asked for was refused, and since when: kept
	// only for an observer, which hears of each change.
	exhausted      atomic.Bool
	exhaustedSince time.Time // guarded by mu
}

// budgetUnit is a retry, or a token, in the balance's units: ratios are
// held to nine decimal places, and the largest capacity, with the largest
// deposit on top, still fits in an int64.
const (
	budgetUnit     = 1_000_000_000
	maxBudgetSize  = 1_000_000_000 // retries or tokens
	maxBudgetRatio = 1000
	minBudgetRatio = 0.000001 // below, rounding to nine places would cost more than 0.05%
)

// The forms of a budget, after its constructor: RetryBudgetSnapshot.Form.
const (
	componentBudget   = "budget"
	componentThrottle = "throttle"
	componentQuota    = "quota"
)

// NewRetryBudget returns a budget that lets retries add ratio of the calls
// (0.1: 10%), plus minPerSecond retries a second so that rare calls can
// still retry. Deposits are saved up to [WithBudgetCapacity]. It panics if
// ratio is neither 0 nor in [0.000001, 1000], if minPerSecond is negative,
// or if an option is invalid.
func NewRetryBudget(ratio float64, minPerSecond int, opts ...RetryBudgetOption) *RetryBudget {
	const fn = "NewRetryBudget"
	if !(ratio == 0 || ratio >= minBudgetRatio && ratio <= maxBudgetRatio) {
		panic(fmt.Sprintf("resilience: %s: ratio must be 0 or in [%v, %v], got %v", fn, minBudgetRatio, maxBudgetRatio, ratio))
	}
	if minPerSecond < 0 {
		panic(fmt.Sprintf("resilience: %s: minPerSecond must not be negative, got %d", fn, minPerSecond))
	}
	cfg := budgetConfig{capacity: 100}
	for _, o := range opts {
		checkOption(fn, o)
		o.applyBudget(&cfg)
	}
	cfg.route = newRoute(KindRetryBudget, &cfg.common)
	b := &RetryBudget{
		perCall:  budgetUnits(ratio),
		perRetry: budgetUnit,
		capacity: int64(cfg.capacity) * budgetUnit,
		kind:     componentBudget,

		minPerSecond: float64(minPerSecond),
		common:       cfg.common,
	}
	b.floor, b.refilled = b.minPerSecond, b.now()
	return b
}

// NewRetryThrottle returns gRPC's retry throttle: tokens tokens, less one
// for every attempt that fails and would be retried, plus ratio for every
// success (up to tokens); it allows a retry while more than tokens/2
// remain. It panics if tokens is not in [3, 1000000000], if ratio is not in
// [0.000001, 1000], or if an option is invalid.
func NewRetryThrottle(tokens int, ratio float64, opts ...Option) *RetryBudget {
	const fn = "NewRetryThrottle"
	if tokens < 3 || tokens > maxBudgetSize {
		panic(fmt.Sprintf("resilience: %s: tokens must be in [3, %d] (fewer never allow a retry), got %d", fn, maxBudgetSize, tokens))
	}
	if !(ratio >= minBudgetRatio && ratio <= maxBudgetRatio) {
		panic(fmt.Sprintf("resilience: %s: ratio must be in [%v, %v], got %v", fn, minBudgetRatio, maxBudgetRatio, ratio))
	}
	var c common
	for _, o := range opts {
		checkOption(fn, o)
		o.set(&c)
	}
	c.route = newRoute(KindRetryBudget, &c)
	return newThrottle(tokens, ratio, c)
}

func newThrottle(tokens int, ratio float64, c common) *RetryBudget {
	capacity := int64(tokens) * budgetUnit
	b := &RetryBudget{
		perSuccess: budgetUnits(ratio),
		perFailure: budgetUnit,
		keep:       capacity/2 + 1, // more than half
		capacity:   capacity,
		kind:       componentThrottle,
		common:     c,
	}
	b.balance.Store(capacity)
	return b
}

// budgetUnits converts a ratio of retries to the balance's units.
func budgetUnits(ratio float64) int64 { return int64(math.Round(ratio * budgetUnit)) }

// RetryBudgetOption configures [NewRetryBudget]: [WithBudgetCapacity], or
// an [Option].
type RetryBudgetOption interface {
	applyBudget(*budgetConfig)
}

type budgetConfig struct {
	capacity int
	common
}

type budgetOptionFunc func(*budgetConfig)

func (f budgetOptionFunc) applyBudget(c *budgetConfig) { f(c) }

func (o Option) applyBudget(c *budgetConfig) { o.set(&c.common) }

// WithBudgetCapacity sets how many retries a [NewRetryBudget]'s deposits
// can save up: 100 by default; 0 leaves only the floor. It panics if n is
// not in [0, 1000000000].
func WithBudgetCapacity(n int) RetryBudgetOption {
	if n < 0 || n > maxBudgetSize {
		panic(fmt.Sprintf("resilience: WithBudgetCapacity: capacity must be in [0, %d], got %d", maxBudgetSize, n))
	}
	return budgetOptionFunc(func(c *budgetConfig) { c.capacity = n })
}

// WithBudget makes retries draw on b, shared with other policies, instead
// of the quota a Retry keeps of its own; a retry b refuses is not made, and
// the error matches [ErrRetryBudgetExhausted]. It panics if b is nil or
// was not made by a constructor.
func WithBudget(b *RetryBudget) RetryOption {
	if b == nil {
		panic("resilience: WithBudget: budget is nil")
	}
	if b.kind == "" {
		panic("resilience: WithBudget: budget is a zero RetryBudget; make one with NewRetryQuota, NewRetryThrottle or NewRetryBudget")
	}
	return retryOptionFunc(func(c *retryConfig) { c.budget, c.budgetSet = b, true })
}

// WithoutBudget makes a Retry retry as its attempts, backoff and time
// allow, with neither a budget nor its own quota: for a service whose
// failures never come from overload.
func WithoutBudget() RetryOption {
	return retryOptionFunc(func(c *retryConfig) { c.budget, c.budgetSet = nil, true })
}

// succeededFirst records a success at the first attempt, as succeeded(0)
// does, on a nil b too: small enough for the compiler to inline into a
// Retry's lean path.
func (b *RetryBudget) succeededFirst() {
	if b != nil && b.perSuccess != 0 && b.balance.Load() < b.capacity {
		b.deposit(b.perSuccess)
	}
}

// called records that a call begins.
func (b *RetryBudget) called() {
	if b.perCall != 0 {
		b.deposit(b.perCall)
	}
}

// succeeded records an attempt that succeeded; paid is what the retry
// that made it took from a quota (0 for a first attempt). A full quota or
// throttle costs one atomic load.
func (b *RetryBudget) succeeded(paid int64) {
	n := b.perSuccess
	if b.refunds && paid > 0 {
		n = paid
	}
	if n != 0 && b.balance.Load() < b.capacity {
		b.deposit(n)
	}
}

// failed records an attempt that failed and is to be retried.
func (b *RetryBudget) failed() {
	if b.perFailure == 0 {
		return
	}
	for {
		old := b.loadBalance()
		if old == 0 || b.balance.CompareAndSwap(old, max(old-b.perFailure, 0)) {
			return
		}
	}
}

func (b *RetryBudget) deposit(n int64) {
	for {
		old := b.loadBalance()
		if old >= b.capacity || b.balance.CompareAndSwap(old, min(old+n, b.capacity)) {
			return
		}
	}
}

// allow takes a retry after an attempt that failed with err: from the
// balance, else from the floor. It reports whether there was one to take
// and what it took from a quota's balance, to give back if the retry
// succeeds. A refusal, and a change between refusing and allowing, is
// reported to the observer.
func (b *RetryBudget) allow(ctx context.Context, attempt int, err error) (paid int64, ok bool) {
	cost := b.perRetry
	if b.timeoutCost != cost && b.timeoutCost != 0 && isTimeout(err) {
		cost = b.timeoutCost
	}
	if b.withdraw(cost) {
		paid, ok = cost, true
	} else {
		ok = b.takeFloor()
	}
	if b.reports() {
		b.observeAllow(ctx, attempt, ok)
	}
	return paid, ok
}

// observeAllow reports a refusal, and a change of state: the first refusal
// after a retry was allowed, or the first retry allowed after a refusal.
func (b *RetryBudget) observeAllow(ctx context.Context, attempt int, ok bool) {
	if b.exhausted.Load() != ok {
		// No change: the last decision was the same.
		if !ok {
			b.observe(ctx, Event{Kind: EventRefused, Component: KindRetryBudget, Attempt: attempt, Err: ErrRetryBudgetExhausted})
		}
		return
	}
	b.mu.Lock()
	changed := b.exhausted.CompareAndSwap(ok, !ok)
	var since time.Duration
	if changed {
		now := b.now()
		if ok {
			since = now.Sub(b.exhaustedSince)
		} else {
			b.exhaustedSince = now
		}
	}
	b.mu.Unlock()
	switch {
	case !changed:
	case ok:
		b.observe(ctx, Event{Kind: EventReplenished, Component: KindRetryBudget, Attempt: attempt, Duration: since})
	default:
		b.observe(ctx, Event{Kind: EventExhausted, Component: KindRetryBudget, Attempt: attempt, Err: ErrRetryBudgetExhausted})
	}
	if !ok {
		b.observe(ctx, Event{Kind: EventRefused, Component: KindRetryBudget, Attempt: attempt, Err: ErrRetryBudgetExhausted})
	}
}

// take takes one retry from the balance at a retry's cost (none for a
// throttle, which only needs more than half its tokens left).
func (b *RetryBudget) take() bool { return b.withdraw(b.perRetry) }

// withdraw takes n from the balance if it leaves at least keep.
func (b *RetryBudget) withdraw(n int64) bool {
	for {
		old := b.loadBalance()
		if old-n < b.keep {
			return false
		}
		if n == 0 || b.balance.CompareAndSwap(old, old-n) {
			return true
		}
	}
}

func (b *RetryBudget) takeFloor() bool {
	if b.minPerSecond == 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.floor = b.floorAt(now)
	b.refilled = now
	if b.floor < 1 {
		return false
	}
	b.floor--
	return true
}

// floorAt is what the floor allows at now, refilled since the last refill.
// The caller holds b.mu.
func (b *RetryBudget) floorAt(now time.Time) float64 {
	if elapsed := now.Sub(b.refilled); elapsed > 0 {
		return min(b.minPerSecond, b.floor+elapsed.Seconds()*b.minPerSecond)
	}
	return b.floor
}

// Available returns how many retries the budget would allow now if every
// attempt from now on failed (for a quota, at the cost of an attempt that
// did not time out), rounded down and saturating at the largest int.
func (b *RetryBudget) Available() int {
	var n int64
	if b.perRetry == 0 {
		// A throttle: the k-th failure from now leaves balance − k tokens,
		// and is retried if that is at least keep.
		n = max(b.balance.Load()-b.keep, 0) / b.perFailure
	} else {
		n = b.balance.Load() / b.perRetry
	}
	if b.minPerSecond == 0 {
		return int(n)
	}
	b.mu.Lock()
	floor := b.floorAt(b.now())
	b.mu.Unlock()
	if floor+float64(n) >= 0x1p63 { // rounding is monotonic: the exact sum is no less
		return math.MaxInt
	}
	return int(n) + int(floor)
}

// loadBalance reads the balance for a compare-and-swap to change it.
func (b *RetryBudget) loadBalance() int64 {
	old := b.balance.Load()
	if balanceRead != nil {
		balanceRead(b)
	}
	return old
}

// balanceRead is nil but in the package's tests, which set it to change a
// budget's balance after a caller has read it and before its
// compare-and-swap, as a caller on another core can: a seam where a race
// must be forced.
var balanceRead func(*RetryBudget)

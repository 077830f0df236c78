package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker is a circuit breaker: after too many failures it opens and
// refuses calls at once with [ErrBreakerOpen], sparing both the caller and
// the struggling service; after a cool-down it lets a few probe calls
// through (half-open) and closes again when they succeed. It is a [Guard]:
// one breaker per service, shared by calls of any result type through
// [Guarded].
//
// By default it opens after 5 consecutive failures, stays open 30s, then
// admits one probe, and one successful probe closes it. Options add
// failure-rate windows (count- or time-based), go-resiliency's rule of
// failures without an error-free period, slow calls counted as failures, a
// cool-down that grows on repeated trips, more probes, and a predicate for
// what counts as a failure (by default any error but context.Canceled,
// which counts neither way).
//
// Outcomes of calls admitted before a state change are ignored. A panic in
// a guarded call counts as a failure and frees its probe. State-change
// hooks run outside every lock. A success in the closed state takes no
// lock and allocates nothing (with a failure-rate window or slow-call
// detection it takes the breaker's lock or reads the clock). A Breaker is
// safe for concurrent use.
type Breaker struct {
	cfg       breakerConfig
	realClock bool

	// word holds the generation, counted up at every state change, above
	// two bits of BreakerState.
	word     atomic.Uint64
	failures atomic.Int64  // consecutive failures, closed state
	ready    atomic.Uint64 // generation whose cool-down is over (real clock)
	until    atomic.Int64  // end of the cool-down, Unix nanoseconds
	openErr  atomic.Pointer[BreakerOpenError]
	done     atomic.Pointer[breakerDone]
	refused  atomic.Int64

	mu          sync.Mutex // guards what follows, and every state change
	lastFailure time.Time
	probes      int // probes in flight, half-open
	successes   int // probe successes, half-open
	trips       int // trips since the breaker last closed
	allTrips    int
	coolDown    time.Duration // the last cool-down
	isolated    bool
	timer       interface{ Stop() bool }
	window      *failureWindow
	events      []stateChange
	delivering  bool
}

// BreakerState is the state of a [Breaker].
type BreakerState uint8

const (
	// BreakerClosed lets every call through and counts failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen refuses every call until its cool-down ends.
	BreakerOpen
	// BreakerHalfOpen lets a bounded number of probe calls through.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}

type stateChange struct{ from, to BreakerState }

type breakerDone struct {
	ticket uint64
	f      func(error)
}

// Tickets hold the generation, a probe bit and, with slow-call detection,
// the call's start in microseconds.
const (
	ticketGenShift = 41
	ticketProbe    = 1 << 40
	ticketTimeMask = 1<<40 - 1
	genMask        = 1<<(64-ticketGenShift) - 1
)

// NewBreaker returns a closed breaker. It panics if an option is invalid,
// or if no rule could ever open it.
func NewBreaker(opts ...BreakerOption) *Breaker {
	cfg := breakerConfig{threshold: 5, coolDown: 30 * time.Second, probes: 1, successes: 1}
	for _, o := range opts {
		if o == nil {
			panic("resilience: NewBreaker: option is nil")
		}
		o.applyBreaker(&cfg)
	}
	if cfg.threshold == 0 && cfg.rate == 0 {
		panic("resilience: NewBreaker: no rule can open the breaker (failure threshold 0 and no failure rate)")
	}
	b := &Breaker{cfg: cfg, realClock: cfg.clock == nil}
	if cfg.rate > 0 {
		b.window = newFailureWindow(cfg.windowCalls, cfg.windowSpan)
	}
	b.setDone(0)
	return b
}

// BreakerOption configures [NewBreaker]. [Option] ([WithClock],
// [WithObserver], [WithName]) is one too.
type BreakerOption interface {
	applyBreaker(*breakerConfig)
}

type breakerConfig struct {
	threshold   int
	expiry      time.Duration
	rate        float64
	minCalls    int
	windowCalls int
	windowSpan  time.Duration
	slow        time.Duration
	coolDown    time.Duration
	growth      Backoff
	probes      int
	successes   int
	isFailure   func(error) bool
	onChange    func(from, to BreakerState)
	common
}

type breakerOptionFunc func(*breakerConfig)

func (f breakerOptionFunc) applyBreaker(c *breakerConfig) { f(c) }

func (o Option) applyBreaker(c *breakerConfig) { o.set(&c.common) }

// WithBreakerThreshold opens the breaker after n consecutive failures; a
// success starts the count again. The default is 5; 0 turns the rule off
// (leaving a failure rate to open it). It panics if n is negative.
func WithBreakerThreshold(n int) BreakerOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithBreakerThreshold: threshold must not be negative, got %d", n))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.threshold = n })
}

// WithBreakerFailureExpiry switches the threshold rule to go-resiliency's: the
// breaker opens after threshold failures with no error-free period of d
// between them. A failure more than d after the previous one starts the
// count again, and successes do not. It panics unless d > 0.
func WithBreakerFailureExpiry(d time.Duration) BreakerOption {
	if d <= 0 {
		panic(fmt.Sprintf("resilience: WithBreakerFailureExpiry: expiry must be positive, got %v", d))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.expiry = d })
}

// WithBreakerFailureRate opens the breaker when, among the last calls outcomes,
// the share of failures reaches rate (0.5: half), provided at least
// minCalls outcomes are counted. It panics unless 0 < rate <= 1 and
// 1 <= minCalls <= calls.
func WithBreakerFailureRate(rate float64, minCalls, calls int) BreakerOption {
	checkRate("WithBreakerFailureRate", rate, minCalls, calls)
	return breakerOptionFunc(func(c *breakerConfig) {
		c.rate, c.minCalls, c.windowCalls, c.windowSpan = rate, minCalls, calls, 0
	})
}

// WithBreakerFailureRateWindow opens the breaker when, among the outcomes of the
// last span (kept in 10 rolling buckets), the share of failures reaches
// rate, provided at least minCalls outcomes are counted. It panics unless
// 0 < rate <= 1, minCalls >= 1 and span >= 10ns.
func WithBreakerFailureRateWindow(rate float64, minCalls int, span time.Duration) BreakerOption {
	checkRate("WithBreakerFailureRateWindow", rate, minCalls, math.MaxInt32)
	if span < windowBuckets {
		panic(fmt.Sprintf("resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got %v", span))
	}
	return breakerOptionFunc(func(c *breakerConfig) {
		c.rate, c.minCalls, c.windowCalls, c.windowSpan = rate, minCalls, 0, span
	})
}

func checkRate(fn string, rate float64, minCalls, calls int) {
	if !(rate > 0 && rate <= 1) {
		panic(fmt.Sprintf("resilience: %s: rate must be in (0, 1], got %v", fn, rate))
	}
	if minCalls < 1 || minCalls > calls {
		panic(fmt.Sprintf("resilience: %s: minCalls must be between 1 and %d, got %d", fn, calls, minCalls))
	}
}

// WithBreakerSlowCallThreshold counts a call that takes longer than d as a
// failure even when it succeeds. By default no call is too slow. It panics
// unless d > 0.
func WithBreakerSlowCallThreshold(d time.Duration) BreakerOption {
	if d <= 0 {
		panic(fmt.Sprintf("resilience: WithBreakerSlowCallThreshold: threshold must be positive, got %v", d))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.slow = d })
}

// WithBreakerCoolDown sets how long the breaker stays open before it lets probes
// through. The default is 30s. It panics if d is negative.
func WithBreakerCoolDown(d time.Duration) BreakerOption {
	checkDuration("WithBreakerCoolDown", "d", d)
	return breakerOptionFunc(func(c *breakerConfig) { c.coolDown = d })
}

// WithBreakerCoolDownBackoff makes the cool-down grow on repeated trips: trip n
// since the breaker last closed stays open b.Delay(n, previous cool-down)
// (when b stops, the last cool-down is kept). It panics if b is nil.
func WithBreakerCoolDownBackoff(b Backoff) BreakerOption {
	if b == nil {
		panic("resilience: WithBreakerCoolDownBackoff: backoff is nil")
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.growth = b })
}

// WithBreakerProbes sets how many probe calls a half-open breaker lets run at
// once; more are refused. The default is 1. It panics if n < 1.
func WithBreakerProbes(n int) BreakerOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBreakerProbes: probes must be at least 1, got %d", n))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.probes = n })
}

// WithBreakerSuccessThreshold sets how many probes must succeed before a half-open
// breaker closes; one failure reopens it. The default is 1. It panics if
// n < 1.
func WithBreakerSuccessThreshold(n int) BreakerOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBreakerSuccessThreshold: successes must be at least 1, got %d", n))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.successes = n })
}

// WithBreakerFailureIf decides which errors count as failures; errors for which f
// returns false count as successes. context.Canceled counts neither way
// unless f is given. f never sees nil. It panics if f is nil.
func WithBreakerFailureIf(f func(err error) bool) BreakerOption {
	if f == nil {
		panic("resilience: WithBreakerFailureIf: predicate is nil")
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.isFailure = f })
}

// WithBreakerOnStateChange sets a hook called with every state change, in the
// order the changes happened, outside every lock: it may call the
// breaker's methods. It runs in the goroutine that made the change or in
// one delivering changes at the time. It panics if f is nil.
func WithBreakerOnStateChange(f func(from, to BreakerState)) BreakerOption {
	if f == nil {
		panic("resilience: WithBreakerOnStateChange: hook is nil")
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.onChange = f })
}

// BreakerOpenError is the error of a call refused by an open [Breaker]. It
// matches [ErrBreakerOpen], and RetryAfter tells how long until the
// breaker lets a probe through, so a [Retry] outside it waits just that
// long.
type BreakerOpenError struct {
	until time.Time // end of the cool-down; zero while isolated
	clock *common
}

// Error returns "resilience: circuit breaker open".
func (e *BreakerOpenError) Error() string { return ErrBreakerOpen.Error() }

// Is reports whether target is ErrBreakerOpen.
func (e *BreakerOpenError) Is(target error) bool { return target == ErrBreakerOpen }

// RetryAfter returns the time left until the cool-down ends, plus a
// margin of a millisecond so that a call made after that long finds the
// breaker half-open; the largest Duration while the breaker is isolated.
func (e *BreakerOpenError) RetryAfter() time.Duration {
	if e.until.IsZero() {
		return maxDuration
	}
	return max(e.until.Sub(e.clock.now()), 0) + retryAfterMargin
}

// retryAfterMargin lets the cool-down's timer fire before the retry comes.
const retryAfterMargin = time.Millisecond

// errProbesBusy refuses a call while every probe of a half-open breaker is
// in flight.
var errProbesBusy error = probesBusyError{}

type probesBusyError struct{}

func (probesBusyError) Error() string        { return "resilience: circuit breaker half-open, probes busy" }
func (probesBusyError) Is(target error) bool { return target == ErrBreakerOpen }

func wordOf(gen uint64, s BreakerState) uint64 { return gen<<2 | uint64(s) }
func stateOf(w uint64) BreakerState            { return BreakerState(w & 3) }
func genOf(w uint64) uint64                    { return w >> 2 }

// Enter admits a call or refuses it with an error matching ErrBreakerOpen.
// The done function must be called exactly once with the call's outcome;
// in the closed state it is shared by calls and costs no allocation.
func (b *Breaker) Enter(ctx context.Context) (done func(err error), err error) {
	t, err := b.enter(ctx)
	if err != nil {
		return nil, err
	}
	if d := b.done.Load(); d.ticket == t {
		return d.f, nil
	}
	return func(err error) { b.exit(t, err) }, nil
}

func (b *Breaker) setDone(gen uint64) {
	t := (gen & genMask) << ticketGenShift
	b.done.Store(&breakerDone{ticket: t, f: func(err error) { b.exit(t, err) }})
}

func (b *Breaker) enter(context.Context) (uint64, error) {
	w := b.word.Load()
	switch stateOf(w) {
	case BreakerClosed:
		return b.ticket(w, 0), nil
	case BreakerOpen:
		if !b.coolDownOver(w) {
			b.refused.Add(1)
			return 0, b.openErr.Load()
		}
	}
	return b.enterSlow()
}

func (b *Breaker) ticket(w uint64, probe uint64) uint64 {
	t := (genOf(w)&genMask)<<ticketGenShift | probe
	if b.cfg.slow > 0 {
		t |= uint64(b.micros()) & ticketTimeMask
	}
	return t
}

// micros is the time in microseconds on the breaker's clock.
func (b *Breaker) micros() int64 { return b.cfg.now().UnixMicro() }

func (b *Breaker) coolDownOver(w uint64) bool {
	if b.realClock {
		return b.ready.Load() == genOf(w)
	}
	return b.cfg.now().UnixNano() >= b.until.Load()
}

// enterSlow admits a call in the half-open state, or moves an open breaker
// whose cool-down is over to half-open.
func (b *Breaker) enterSlow() (uint64, error) {
	b.mu.Lock()
	w := b.advance()
	var t uint64
	var err error
	switch stateOf(w) {
	case BreakerClosed:
		t = b.ticket(w, 0)
	case BreakerOpen:
		b.refused.Add(1)
		err = b.openErr.Load()
	case BreakerHalfOpen:
		if b.probes < b.cfg.probes {
			b.probes++
			t = b.ticket(w, ticketProbe)
		} else {
			b.refused.Add(1)
			err = errProbesBusy
		}
	}
	b.mu.Unlock()
	b.deliver()
	return t, err
}

// advance moves an open breaker whose cool-down is over to half-open, and
// returns the state word. b.mu is held.
func (b *Breaker) advance() uint64 {
	w := b.word.Load()
	if stateOf(w) == BreakerOpen && !b.isolated && b.coolDownOver(w) {
		b.probes, b.successes = 0, 0
		w = b.change(w, BreakerHalfOpen)
	}
	return w
}

// change moves to state to under a new generation. b.mu is held.
func (b *Breaker) change(w uint64, to BreakerState) uint64 {
	nw := wordOf(genOf(w)+1, to)
	b.word.Store(nw)
	if b.cfg.onChange != nil {
		b.events = append(b.events, stateChange{stateOf(w), to})
	}
	if to == BreakerClosed {
		b.setDone(genOf(nw))
	}
	return nw
}

func (b *Breaker) exit(t uint64, err error) {
	failed, counts := b.judge(t, err)
	w := b.word.Load()
	if t>>ticketGenShift != genOf(w)&genMask {
		return // a call from an earlier state: ignored
	}
	if t&ticketProbe != 0 {
		b.exitProbe(t, failed, counts)
		return
	}
	if !counts || stateOf(w) != BreakerClosed {
		return
	}
	if !failed {
		if b.window != nil {
			b.mu.Lock()
			if b.word.Load() == w {
				now := b.cfg.now()
				b.window.record(now, false)
				if b.rateTrips(now) {
					b.open(w, false)
				}
			}
			b.mu.Unlock()
			b.deliver()
		} else if b.cfg.expiry == 0 && b.failures.Load() != 0 {
			b.failures.Store(0)
		}
		return
	}
	b.mu.Lock()
	if b.word.Load() == w {
		b.closedFailure(w)
	}
	b.mu.Unlock()
	b.deliver()
}

// judge says whether an outcome is a failure, and whether it counts at all.
func (b *Breaker) judge(t uint64, err error) (failed, counts bool) {
	switch {
	case err == nil:
	case b.cfg.isFailure != nil:
		failed = b.cfg.isFailure(err)
	case errors.Is(err, context.Canceled):
		return false, false
	default:
		failed = true
	}
	if !failed && b.cfg.slow > 0 {
		elapsed := time.Duration((uint64(b.micros())-t)&ticketTimeMask) * time.Microsecond
		failed = elapsed > b.cfg.slow
	}
	return failed, true
}

// closedFailure counts a failure in the closed state and trips the breaker
// when a rule says so. b.mu is held.
func (b *Breaker) closedFailure(w uint64) {
	var now time.Time
	if b.window != nil || b.cfg.expiry > 0 {
		now = b.cfg.now()
	}
	trip := false
	if b.window != nil {
		b.window.record(now, true)
		trip = b.rateTrips(now)
	}
	if b.cfg.threshold > 0 {
		if b.cfg.expiry > 0 {
			if !b.lastFailure.IsZero() && now.Sub(b.lastFailure) > b.cfg.expiry {
				b.failures.Store(0)
			}
			b.lastFailure = now
		}
		if b.failures.Add(1) >= int64(b.cfg.threshold) {
			trip = true
		}
	}
	if trip {
		b.open(w, false)
	}
}

// rateTrips reports whether the failure rate in the window opens the
// breaker. b.mu is held.
func (b *Breaker) rateTrips(now time.Time) bool {
	calls, failures := b.window.counts(now)
	return calls >= b.cfg.minCalls && float64(failures) >= b.cfg.rate*float64(calls)
}

func (b *Breaker) exitProbe(t uint64, failed, counts bool) {
	b.mu.Lock()
	w := b.word.Load()
	if t>>ticketGenShift == genOf(w)&genMask && stateOf(w) == BreakerHalfOpen {
		b.probes--
		switch {
		case !counts:
		case failed:
			b.open(w, false)
		default:
			b.successes++
			if b.successes >= b.cfg.successes {
				b.close(w)
			}
		}
	}
	b.mu.Unlock()
	b.deliver()
}

// open trips the breaker: isolated, until Reset, or for a cool-down. b.mu
// is held.
func (b *Breaker) open(w uint64, isolate bool) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.trips++
	b.allTrips++
	b.isolated = isolate
	b.probes, b.successes = 0, 0 // probes in flight are of an earlier generation now
	nw := b.change(w, BreakerOpen)
	gen := genOf(nw)
	if isolate {
		b.until.Store(math.MaxInt64)
		b.openErr.Store(&BreakerOpenError{clock: &b.cfg.common})
		return
	}
	d := b.cfg.coolDown
	if b.cfg.growth != nil {
		if g, ok := b.cfg.growth.Delay(b.trips, b.coolDown); ok {
			d = g
		} else if b.trips > 1 {
			d = b.coolDown
		}
	}
	b.coolDown = d
	until := b.cfg.now().Add(d)
	b.until.Store(until.UnixNano())
	b.openErr.Store(&BreakerOpenError{until: until, clock: &b.cfg.common})
	if b.realClock {
		b.timer = time.AfterFunc(d, func() { b.ready.Store(gen) })
	}
}

// close closes the breaker and forgets past failures. b.mu is held.
func (b *Breaker) close(w uint64) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.failures.Store(0)
	b.lastFailure = time.Time{}
	b.trips, b.coolDown, b.isolated = 0, 0, false
	b.probes, b.successes = 0, 0
	if b.window != nil {
		b.window.reset()
	}
	b.change(w, BreakerClosed)
}

// deliver hands queued state changes to the hook, in order, outside the
// lock. Only one goroutine delivers at a time; changes made meanwhile,
// even by the hook itself, are delivered by it too.
func (b *Breaker) deliver() {
	if b.cfg.onChange == nil {
		return
	}
	b.mu.Lock()
	if b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for len(b.events) > 0 {
		evs := b.events
		b.events = nil
		b.mu.Unlock()
		for _, e := range evs {
			b.cfg.onChange(e.from, e.to)
		}
		b.mu.Lock()
	}
	b.delivering = false
	b.mu.Unlock()
}

// State returns the breaker's state now. An open breaker whose cool-down
// is over reports, and becomes, half-open.
func (b *Breaker) State() BreakerState {
	w := b.word.Load()
	if stateOf(w) != BreakerOpen || !b.coolDownOver(w) {
		return stateOf(w)
	}
	b.mu.Lock()
	w = b.advance()
	b.mu.Unlock()
	b.deliver()
	return stateOf(w)
}

// Trip opens the breaker now, for its cool-down, whatever its state.
func (b *Breaker) Trip() {
	b.mu.Lock()
	b.open(b.word.Load(), false)
	b.mu.Unlock()
	b.deliver()
}

// Isolate opens the breaker until Reset: no cool-down ends it.
func (b *Breaker) Isolate() {
	b.mu.Lock()
	b.open(b.word.Load(), true)
	b.mu.Unlock()
	b.deliver()
}

// Reset closes the breaker and forgets past failures, whatever its state.
func (b *Breaker) Reset() {
	b.mu.Lock()
	b.close(b.word.Load())
	b.mu.Unlock()
	b.deliver()
}

// BreakerMetrics is a snapshot of a [Breaker]'s counts.
type BreakerMetrics struct {
	State               BreakerState
	Isolated            bool    // open until Reset
	ConsecutiveFailures int     // in the closed state
	WindowCalls         int     // outcomes in the failure-rate window, if any
	WindowFailures      int     // failures among them
	FailureRate         float64 // WindowFailures / WindowCalls, 0 without calls
	Probes              int     // probes in flight, half-open
	Trips               int     // times the breaker opened since it was made
	Refused             int64   // calls refused since it was made
}

// Metrics returns a snapshot of the breaker's counts.
func (b *Breaker) Metrics() BreakerMetrics {
	state := b.State()
	b.mu.Lock()
	defer b.mu.Unlock()
	m := BreakerMetrics{
		State:               state,
		Isolated:            b.isolated,
		ConsecutiveFailures: int(b.failures.Load()),
		Probes:              b.probes,
		Trips:               b.allTrips,
		Refused:             b.refused.Load(),
	}
	if b.window != nil {
		m.WindowCalls, m.WindowFailures = b.window.counts(b.cfg.now())
		if m.WindowCalls > 0 {
			m.FailureRate = float64(m.WindowFailures) / float64(m.WindowCalls)
		}
	}
	return m
}

package resilience

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/latency"
)

// AdaptiveLimiter limits how many calls run at once, as a [Bulkhead] does,
// but finds the limit itself: it raises it while the calls it admits are
// about as fast as without load and lowers it when they slow down or end in
// drops. A call's [Priority] decides the share of the limit it may use, so
// the lowest are refused first, with a *[ShedError] matching
// [ErrLimitExceeded]. Its observer events have component "adaptive-limiter";
// docs/load-control.md says how the limit moves. It is safe for concurrent
// use; its zero value is not usable: make one with [NewAdaptiveLimiter].
type AdaptiveLimiter struct {
	// state holds the calls in flight in its low 32 bits and the number of
	// waiters above them. While anybody waits, slots change hands under mu.
	state atomic.Int64
	limit atomic.Int64 // the limit calls are admitted under
	hint  atomic.Int64 // the recent mean latency, for refusals

	// calls counts the calls admitted in the current window; one in every
	// mask+1 of them (a power of two) is timed and becomes a sample, so
	// that at high rates most calls read no clock.
	calls, mask atomic.Int64

	// The current window's aggregates, and when it may close.
	n, sum, drops atomic.Int64
	busy, bound   atomic.Bool
	closeAt       atomic.Int64 // on the time line
	need          atomic.Int64 // samples needed to close
	probeFrom     atomic.Int64 // during a probe, calls entered before are no samples,
	probeTo       atomic.Int64 // nor calls entered from then on; math.MaxInt64 outside
	probeCalls    atomic.Int64 // during a probe, its number of samples, else 0
	pending       atomic.Int64 // a probe's samples not yet back
	longest       atomic.Int64 // the longest of a probe's samples

	p50 latency.Median // the current window's samples, for their median

	refusalCount

	wmu sync.Mutex // held by the call closing a window
	g   gradient   // guarded by wmu

	wait     time.Duration
	waitFrom int   // the lowest level that may wait
	queue    int64 // most waiters; -1: any number
	judge    func(error) Outcome
	common
	origin time.Time // the time line's zero

	mu      sync.Mutex
	waiters [priorityLevels]list.List // of *limiterWaiter, by level, oldest first; guarded by mu

	// Enter's done functions, made once so that Enter allocates nothing
	// without an observer: done for a call that is no sample, and one per
	// slot for the timed calls, whose slot holds their ticket.
	done      func(error)
	slotFree  atomic.Uint32 // bit i set: slot i is free
	slotTimes [sampleSlots]atomic.Uint64
	slotDone  [sampleSlots]func(error)
}

// sampleSlots is the number of timed calls that may be in flight at once
// through Enter without an observer; a timed call that finds none free is
// no sample. Calls through [Guarded] carry their ticket themselves.
const sampleSlots = 32

// samplesPerWindow is about how many calls of a window are timed: enough
// for a mean, few enough that a busy limiter rarely reads the clock.
const samplesPerWindow = 64

const (
	adaptiveSlotMask  = 1<<32 - 1
	adaptiveOneWaiter = 1 << 32
)

// limiterWaiter is a call waiting for a slot.
type limiterWaiter struct {
	ready   chan struct{} // closed when the waiter is given a slot
	granted bool          // guarded by mu
	ticket  uint64        // set, under mu, when granted
	level   int
	elem    *list.Element
}

// NewAdaptiveLimiter returns an adaptive concurrency limiter configured by
// opts. It panics if an option is invalid, if the floor is above the
// ceiling, or if the initial limit is outside them.
func NewAdaptiveLimiter(opts ...AdaptiveLimiterOption) *AdaptiveLimiter {
	cfg := adaptiveConfig{
		floor: 1, ceiling: 1000, tolerance: 1.25,
		window: 100 * time.Millisecond, probeEvery: 30 * time.Second,
		queue: -1, classifier: adaptiveOutcome, waitFrom: PrioritySheddable,
	}
	for _, o := range opts {
		checkOption("NewAdaptiveLimiter", o)
		o.applyAdaptiveLimiter(&cfg)
	}
	if cfg.floor > cfg.ceiling {
		panic(fmt.Sprintf("resilience: NewAdaptiveLimiter: WithAdaptiveLimits floor %d is above the ceiling %d", cfg.floor, cfg.ceiling))
	}
	if cfg.initial == 0 {
		cfg.initial = min(max(20, cfg.floor), cfg.ceiling)
	}
	if cfg.initial < cfg.floor || cfg.initial > cfg.ceiling {
		panic(fmt.Sprintf("resilience: NewAdaptiveLimiter: WithAdaptiveInitial %d is outside the limits [%d, %d]", cfg.initial, cfg.floor, cfg.ceiling))
	}
	cfg.route = newRoute(KindAdaptiveLimiter, &cfg.common)
	l := &AdaptiveLimiter{wait: cfg.wait, waitFrom: cfg.waitFrom.level(), queue: cfg.queue, judge: cfg.classifier, common: cfg.common}
	l.origin = l.now()
	l.done = func(err error) { l.exit(enterCtx, 0, err, true) }
	l.slotFree.Store(1<<sampleSlots - 1)
	for i := range l.slotDone {
		l.slotDone[i] = func(err error) {
			t := l.slotTimes[i].Load()
			l.slotFree.Or(1 << i)
			l.exit(enterCtx, t, err, true)
		}
	}
	l.g = gradient{
		floor: float64(cfg.floor), ceiling: float64(cfg.ceiling), tolerance: cfg.tolerance,
		window: cfg.window, probeEvery: cfg.probeEvery, minSamples: 20,
		limit: float64(cfg.initial), measuredAt: float64(cfg.initial),
	}
	l.g.startProbe(0)
	l.publish()
	return l
}

// Limit returns the limit calls are admitted under now.
func (l *AdaptiveLimiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns the number of calls admitted and not yet done.
func (l *AdaptiveLimiter) InFlight() int { return int(l.state.Load() & adaptiveSlotMask) }

// Waiting returns the number of calls waiting for a slot now.
func (l *AdaptiveLimiter) Waiting() int { return int(l.state.Load() / adaptiveOneWaiter) }

// Enter admits the call or refuses it, as described on [AdaptiveLimiter].
// The done function it returns must be called exactly once with the call's
// outcome, an error matching context.Canceled if its caller cancelled it.
func (l *AdaptiveLimiter) Enter(ctx context.Context) (done func(err error), err error) {
	t, err := l.enter(ctx, true)
	if err != nil {
		return nil, err
	}
	if l.reports() {
		return func(err error) { l.exit(ctx, t, err, true) }, nil
	}
	if t == 0 {
		return l.done, nil
	}
	for {
		free := l.slotFree.Load()
		if free == 0 {
			l.forget(t)
			return l.done, nil // no slot: the call is no sample
		}
		i := bits.TrailingZeros32(free)
		if l.slotFree.CompareAndSwap(free, free&^(1<<i)) {
			l.slotTimes[i].Store(t)
			return l.slotDone[i], nil
		}
	}
}

func (l *AdaptiveLimiter) reportsOutcomes() bool { return l.outcomes }

// elapsed returns the time on the limiter's time line.
// It never goes below 0, also when an injected clock goes back past the
// limiter's making.
func (l *AdaptiveLimiter) elapsed() int64 { return max(int64(l.since(l.origin)), 0) }

// ticket returns the ticket of a call just admitted: 0 for a call that is
// no sample, else one more than the time it was admitted. An observer of
// outcomes is told every call's duration, so every call is timed.
func (l *AdaptiveLimiter) ticket() uint64 {
	c := l.calls.Add(1)
	if c&l.mask.Load() != 0 && !l.outcomes {
		return 0
	}
	t := l.elapsed()
	if to := l.probeTo.Load(); to != math.MaxInt64 && t < to && t >= l.probeFrom.Load() {
		l.pending.Add(1) // a probe's sample: the probe waits for it
		if c == l.probeCalls.Load() {
			// The probe's last sample: the calls admitted from now on are
			// none.
			l.probeTo.Store(t + 1)
		}
	}
	return uint64(t) + 1
}

// forget tells a probe not to wait for the call of ticket t, which will
// not be timed.
func (l *AdaptiveLimiter) forget(t uint64) {
	if l.inProbe(t) {
		l.pending.Add(-1)
	}
}

// inProbe reports whether the call of ticket t is one of a probe's
// samples: timed, and admitted while the probe took them.
func (l *AdaptiveLimiter) inProbe(t uint64) bool {
	to := l.probeTo.Load()
	return t != 0 && to != math.MaxInt64 && int64(t-1) >= l.probeFrom.Load() && int64(t-1) < to
}

// threshold returns how many calls of level lv may be in flight under
// limit lim.
func threshold(lim int64, lv int) int64 { return max(lim*priorityShare[lv]/100, 1) }

// enter admits a call and returns its ticket, the time it was admitted.
// Below the sheddable share of the limit it needs no priority.
func (l *AdaptiveLimiter) enter(ctx context.Context, _ bool) (uint64, error) {
	s := l.state.Load()
	if s < l.limit.Load()*priorityShare[0]/100 && l.state.CompareAndSwap(s, s+1) {
		return l.ticket(), nil
	}
	return l.enterSlow(ctx)
}

func (l *AdaptiveLimiter) enterSlow(ctx context.Context) (uint64, error) {
	p := PriorityFrom(ctx)
	lv := p.level()
	for {
		s := l.state.Load()
		if s >= adaptiveOneWaiter || s >= threshold(l.limit.Load(), lv) {
			break
		}
		if l.state.CompareAndSwap(s, s+1) {
			return l.ticket(), nil
		}
	}
	if l.wait == 0 || lv < l.waitFrom {
		return 0, l.refuse(ctx, p)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	wait := l.waitFor(ctx)
	if wait <= 0 {
		return 0, l.refuse(ctx, p)
	}
	w, ok := l.enqueue(lv)
	switch {
	case w != nil:
		if err := l.await(ctx, w, p, wait); err != nil {
			return 0, err
		}
		return w.ticket, nil
	case !ok:
		return 0, l.refuse(ctx, p)
	}
	return l.ticket(), nil
}

// waitFor returns how long a call of context ctx may wait for a slot: as
// long as its deadline leaves waitMargin times the recent mean latency
// after the wait, so that a call that waited can still be answered in
// time, and l.wait at most.
func (l *AdaptiveLimiter) waitFor(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return min(l.wait, l.until(dl)-waitMargin*max(time.Duration(l.hint.Load()), time.Millisecond))
	}
	return l.wait
}

// waitMargin is how many times the recent mean latency a waiting call's
// deadline must leave after its wait: the tail of the latencies, not
// their mean, decides whether it is answered in time. In sim/'s load
// scenario (half the calls critical, at the capacity) it leaves at most
// 0.02% of the critical calls answered late, where one mean left several
// percent.
const waitMargin = 3

// refuse reports the refusal of a call of priority p and returns its error.
func (l *AdaptiveLimiter) refuse(ctx context.Context, p Priority) error {
	err := &ShedError{sentinel: ErrLimitExceeded, priority: p, after: max(time.Duration(l.hint.Load()), time.Millisecond)}
	if !l.bound.Load() {
		l.bound.Store(true)
	}
	l.refusedN.Add(1)
	if l.reports() {
		l.observe(ctx, Event{Kind: EventRefused, Component: KindAdaptiveLimiter, Err: err, Wait: err.after})
	}
	return err
}

// exit ends a call of context ctx admitted with ticket t, and makes it a
// sample of the current window if it was timed, unless its caller
// cancelled it (for enterCtx, see there).
func (l *AdaptiveLimiter) exit(ctx context.Context, t uint64, err error, report bool) {
	inFlight := l.release()
	if t == 0 {
		if _, panicked := l.tell(ctx, 0, err, report, inFlight); panicked != nil {
			panic(panicked)
		}
		return
	}
	now := l.elapsed()
	probe := l.inProbe(t)
	if probe {
		l.pending.Add(-1)
	}
	at, to := int64(t-1), l.probeTo.Load()
	// A sample unless the caller left, the clock went back since, or a
	// probe is on and the call was admitted before it (under the higher
	// limit) or after it took its samples.
	told, panicked := l.tell(ctx, now-at, err, report, inFlight)
	sample := told && now >= at && at >= l.probeFrom.Load() && at < to
	var n int64
	if sample {
		d := now - at
		l.sum.Add(d)
		l.p50.Record(time.Duration(d))
		for m := l.longest.Load(); probe && d > m && !l.longest.CompareAndSwap(m, d); m = l.longest.Load() {
		}
		n = l.n.Add(1)
	} else {
		n = l.n.Load()
	}
	if to != math.MaxInt64 {
		// A probe closes once every sample it took is back.
		if now >= to && l.pending.Load() <= 0 || now >= l.closeAt.Load() {
			l.closeWindow(ctx, now)
		}
	} else if now >= l.closeAt.Load() && n >= l.need.Load() {
		l.closeWindow(ctx, now)
	}
	if panicked != nil {
		panic(panicked) // the classifier's, once the outcome is counted
	}
}

// tell reports the end of a call that took d, if an observer asks,
// classifies its outcome, counts a drop, marks the window busy, and reports
// whether the call says anything of the server: not if it is ignored, nor
// if its caller left (for enterCtx, see there). It returns what the
// classifier panicked with, if it did.
func (l *AdaptiveLimiter) tell(ctx context.Context, d int64, err error, report bool, inFlight int64) (told bool, panicked any) {
	if l.outcomes && report {
		l.observe(ctx, Event{Kind: EventCallEnded, Component: KindAdaptiveLimiter, Err: err, Duration: time.Duration(d)})
	}
	if err != nil {
		if errors.Is(err, context.Canceled) && (ctx == enterCtx || ctx.Err() == context.Canceled) {
			return false, nil
		}
		var o Outcome
		switch o, panicked = classify(l.judge, err); o {
		case OutcomeIgnored:
			return false, panicked
		case OutcomeFailure:
			l.drops.Add(1)
		}
	}
	if 2*inFlight >= l.limit.Load() && !l.busy.Load() {
		l.busy.Store(true)
	}
	return true, panicked
}

// closeWindow works out the limit from the window's samples, unless another
// call is doing so already, and reports the change outside the lock.
func (l *AdaptiveLimiter) closeWindow(ctx context.Context, now int64) {
	if !l.wmu.TryLock() {
		return
	}
	old := l.limit.Load()
	if to := time.Duration(l.probeTo.Load()); l.g.probing && to < l.g.probeTo {
		l.g.probeTo = to // the probe admitted all the samples it takes
	}
	if !l.g.closes(time.Duration(now), l.n.Load(), time.Duration(l.longest.Load()), l.pending.Load()) {
		l.publish() // a probe may wait longer, or take samples longer
		l.wmu.Unlock()
		return
	}
	s := windowStats{
		n: l.n.Swap(0), sum: time.Duration(l.sum.Swap(0)), p50: l.p50.Take(typicalQuantile),
		drops: l.drops.Swap(0), busy: l.busy.Swap(false), bound: l.bound.Swap(false),
	}
	// Time about samplesPerWindow of the next window's calls, if it is as
	// busy as this one was (a probe may be shorter or longer).
	calls, from := l.calls.Swap(0), l.g.windowFrom
	why := l.g.update(time.Duration(now), s)
	if took := time.Duration(now) - from; took > 0 {
		calls = int64(float64(calls) * float64(l.g.span()) / float64(took))
	}
	mask := int64(1)<<(bits.Len64(uint64(max(calls/samplesPerWindow, 1)))-1) - 1
	if l.g.probing {
		mask = 0 // a probe times every call, to end soon
	}
	l.mask.Store(mask)
	l.publish()
	lim := l.limit.Load()
	l.wmu.Unlock()
	if lim > old && l.state.Load() >= adaptiveOneWaiter {
		l.mu.Lock()
		l.admitWaiters()
		l.mu.Unlock()
	}
	if l.reports() && why != nil && lim != old {
		l.observe(ctx, Event{Kind: EventLimitChanged, Component: KindAdaptiveLimiter, OldLimit: int(old), NewLimit: int(lim), Reason: why})
	}
}

// publish makes the gradient's state the one calls see. l.wmu is held, or
// the limiter is being built.
func (l *AdaptiveLimiter) publish() {
	l.limit.Store(l.g.published())
	l.hint.Store(int64(l.g.recent))
	if l.g.probing {
		if l.probeTo.Load() == math.MaxInt64 {
			l.pending.Store(0) // a probe begins
		}
		l.probeFrom.Store(int64(l.g.windowFrom))
		l.probeTo.Store(int64(l.g.probeTo))
		l.probeCalls.Store(probeSamples)
	} else {
		l.probeFrom.Store(0)
		l.probeTo.Store(math.MaxInt64)
		l.probeCalls.Store(0)
		l.longest.Store(0)
	}
	at, need := l.g.closesAt()
	l.closeAt.Store(int64(at))
	l.need.Store(need)
}

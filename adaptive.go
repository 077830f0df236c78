package resilience

import (
	"context"
	"errors"
	"math"
	"time"
)

var (
	// ErrLimitExceeded is matched by the *[ShedError] of a call an
	// [AdaptiveLimiter] refused: its priority's share of the limit was in use.
	ErrLimitExceeded = errors.New("resilience: adaptive limit exceeded")

	// ErrThrottled is matched by the *[ShedError] of a call an
	// [AdaptiveThrottler] refused locally.
	ErrThrottled = errors.New("resilience: throttled")
)

// ShedError is the error of a call an [AdaptiveLimiter] or an
// [AdaptiveThrottler] refused; it matches [ErrLimitExceeded] or
// [ErrThrottled], and is a [RetryHint].
type ShedError struct {
	sentinel error
	priority Priority
	after    time.Duration
}

// Error returns the sentinel's message: "resilience: adaptive limit
// exceeded" or "resilience: throttled".
func (e *ShedError) Error() string {
	if e.sentinel == nil {
		return "resilience: shed"
	}
	return e.sentinel.Error()
}

// Is reports whether target is the sentinel the error stands for.
func (e *ShedError) Is(target error) bool { return target == e.sentinel }

// Priority returns the priority of the refused call, as [PriorityFrom]
// read it from its context.
func (e *ShedError) Priority() Priority { return e.priority }

// RetryAfter returns when to try again, at least a millisecond: a
// limiter's recent mean latency, or the time until a throttler's window
// slides.
func (e *ShedError) RetryAfter() time.Duration { return e.after }

// enterCtx stands for the context of a call an adaptive guard admitted
// through Enter without an observer: its done is made once and shared, so
// it knows no call's context, and takes an error matching
// context.Canceled for the caller's.
var enterCtx context.Context = sharedDoneCtx{context.Background()}

type sharedDoneCtx struct{ context.Context }

// limitReason says why an adaptive limit changed, for EventLimitChanged's
// Reason.
type limitReason string

func (r limitReason) Error() string { return string(r) }

// The reasons an adaptive limit changes.
const (
	reasonLatency    limitReason = "latency"     // the gradient of the latencies moved it
	reasonDrops      limitReason = "drops"       // calls timed out or panicked: cut
	reasonProbe      limitReason = "probe"       // lowered to measure the no-load latency
	reasonProbeEnded limitReason = "probe-ended" // the probe is over, the limit restored
)

// gradient is the state of an [AdaptiveLimiter]'s limit, changed once per
// window: a pure function of the window's aggregates and the time (on the
// limiter's time line, from its origin), with no clock, lock or user code
// inside, so that table tests feed it windows directly.
//
// The limit follows Envoy's adaptive concurrency: each window,
// L ← L·g + √(L·g) with g = clamp(tolerance·baseline/recent, 0.5, 2),
// where recent is the window's mean latency and baseline the no-load
// latency. Under overload L·g tends to tolerance·capacity in flight, a
// fixpoint that depends on the baseline and not on the limit's history,
// so the limit cannot creep up (Gradient2's drift). The baseline is
// measured afresh every probeEvery by a probe window in which the limit is
// halved, which drains the queue the limit allowed: a minimum kept over
// loaded windows would rise with that queue (Vegas' drift). Between probes
// a window faster than the baseline lowers it. A window with drops (calls
// that timed out or panicked) cuts the limit by a tenth at least, so a
// stable latency at a timeout still lowers it; a window in which in-flight
// never reached half the limit does not raise it, so an idle limiter does
// not wander to its ceiling.
type gradient struct {
	floor, ceiling float64
	tolerance      float64
	window         time.Duration // shortest window
	probeEvery     time.Duration
	probeSamples   int64
	minSamples     int64

	limit      float64       // the limit outside a probe
	baseline   time.Duration // no-load mean latency; 0 until the first probe ends
	recent     time.Duration // the last window's mean latency
	probing    bool
	windowFrom time.Duration // when the current window (or probe) began
	nextProbe  time.Duration
}

// windowStats are the aggregates of one window's samples.
type windowStats struct {
	n, drops int64
	sum      time.Duration
	busy     bool // in-flight reached half the limit
}

// published returns the limit calls are admitted under: during a probe,
// half the limit.
func (g *gradient) published() int64 {
	l := g.limit
	if g.probing && g.baseline > 0 {
		l = max(g.floor, l/2)
	}
	return int64(l)
}

// closesAt returns when the current window may close and how many samples
// it needs by then.
func (g *gradient) closesAt() (at time.Duration, samples int64) {
	if g.probing {
		return g.windowFrom, g.probeSamples
	}
	return g.windowFrom + max(g.window, 2*g.recent), g.minSamples
}

// startProbe begins a probe window at now.
func (g *gradient) startProbe(now time.Duration) {
	g.probing = true
	g.windowFrom = now
}

// update closes the window at now with aggregates s, and says why the
// limit changed (nil: it did not, or not for a reason worth telling).
func (g *gradient) update(now time.Duration, s windowStats) error {
	g.windowFrom = now
	if s.n == 0 {
		return nil
	}
	mean := s.sum / time.Duration(s.n)
	g.recent = max(mean, 1)
	if g.probing {
		g.probing = false
		g.baseline = g.recent
		g.nextProbe = now + g.probeEvery
		return reasonProbeEnded
	}
	if mean < g.baseline {
		g.baseline = g.recent
	}
	gr := min(max(g.tolerance*float64(g.baseline)/float64(g.recent), 0.5), 2)
	l := g.limit * gr
	l += math.Sqrt(l)
	var why error = reasonLatency
	if !s.busy {
		l = min(l, g.limit)
	}
	if s.drops > 0 && l > 0.9*g.limit {
		l, why = 0.9*g.limit, reasonDrops
	}
	g.limit = min(max(l, g.floor), g.ceiling)
	if now >= g.nextProbe {
		g.startProbe(now)
		return reasonProbe
	}
	return why
}

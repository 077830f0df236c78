package resilience

import (
	"context"
	"math"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

var (
	// ErrLimitExceeded is matched by the *[ShedError] of a call an
	// [AdaptiveLimiter] refused: its priority's share of the limit was in
	// use. It matches [ErrRefused].
	ErrLimitExceeded error = &refusalSentinel{"resilience: adaptive limit exceeded"}

	// ErrThrottled is matched by the *[ShedError] of a call an
	// [AdaptiveThrottler] refused locally. It matches [ErrRefused].
	ErrThrottled error = &refusalSentinel{"resilience: throttled"}
)

// ShedError is the error of a call an [AdaptiveLimiter] or an
// [AdaptiveThrottler] refused; it matches [ErrLimitExceeded] or
// [ErrThrottled], and [ErrRefused], and is a [RetryHint].
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

// Is reports whether target is the sentinel the error stands for, or
// ErrRefused.
func (e *ShedError) Is(target error) bool { return target == e.sentinel || target == ErrRefused }

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
// L ← L·g + √(L·g) with g = clamp(tolerance·baseline/typical, 0.5, 2),
// where typical is the window's median latency and baseline the no-load
// median. Under overload L·g tends to tolerance·capacity in flight, a
// fixpoint that depends on the baseline and not on the limit's history,
// so the limit cannot creep up (Gradient2's drift).
//
// The baseline is only ever measured by a probe: a window in which the
// limit is halved, which drains the queue the limit allowed, so that its
// median latency is the service's own. A minimum kept over loaded windows
// would rise with that queue (Vegas' drift); one kept over short windows
// falls with their luck, so that a mix of fast and slow calls reads as
// queueing. A probe comes every probeEvery while the limit turns calls
// away (one that turns none away needs no baseline), and also as soon as
// the limit has halved since the last one measured the baseline, or a busy
// window is faster than the baseline allows (at most once every probeGap
// windows): a service that got slower (a slower database, a cold cache)
// reads as queueing and pushes the limit down, one that got faster is
// faster than its baseline, and either way the baseline is what is wrong.
// A window with drops (calls that timed out or panicked) cuts the limit
// by a tenth at least, so a stable latency at a timeout
// still lowers it; a window in which in-flight never reached half the
// limit moves it neither way, since the limit did not decide its latency,
// and one in which the limit turned nobody away (refused none, made none
// wait) does not lower it: at 0.8 of its capacity a server queues calls
// by itself, and a limit below what it is offered would only refuse them.
type gradient struct {
	floor, ceiling float64
	tolerance      float64
	window         time.Duration // shortest window
	probeEvery     time.Duration
	minSamples     int64 // samples a window needs to close

	limit      float64       // the limit outside a probe
	baseline   time.Duration // no-load median latency; 0 until the first probe ends
	recent     time.Duration // the last window's mean latency
	typical    time.Duration // the last window's median latency
	probing    bool
	windowFrom time.Duration // when the current window (or probe) began
	nextProbe  time.Duration // when a probe is due
	measuredAt float64       // the limit when the last probe ended
	bound      bool          // the limit turned calls away since the last probe
	stale      int           // stale windows in a row (see update)
	noProbe    time.Duration // no probe for a moved limit before this
	probeTo    time.Duration // a probe's samples are the calls admitted before
	longest    time.Duration // the longest of a probe's samples so far
}

// minGradient is the most one window may lower the limit by (before the
// root is added), and 2 the most it may raise it by, as in Envoy.
const minGradient = 0.5

// typicalQuantile is the quantile of a window's latencies the limit goes
// by, and the baseline is: the median, which a few slow calls (one slow
// endpoint among fast ones) move not at all, where they move a mean of a
// few dozen samples by half.
const typicalQuantile = 0.5

// A probe takes as samples the first probeSamples calls it admits, or
// those it admits in probeWindows windows if fewer; probeGap is how many
// windows after a probe a moved limit may start the next.
const (
	probeSamples = 100
	probeWindows = 5
	probeGap     = 10
)

// windowStats are the aggregates of one window's samples.
type windowStats struct {
	n, drops int64
	sum      time.Duration
	p50      time.Duration // the median of the samples
	busy     bool          // in-flight reached half the limit
	bound    bool          // the limit refused a call, or made one wait
}

// published returns the limit calls are admitted under: during a probe,
// half the limit, or half the limit the last probe measured at if that is
// lower: a limit that ran up on a baseline gone stale, or in the first
// busy window of an overload, would not drain the queue at half.
func (g *gradient) published() int64 {
	l := g.limit
	if g.probing && g.baseline > 0 {
		l = max(g.floor, min(l, g.measuredAt)/2)
	}
	return int64(l)
}

// span returns how long the current window lasts: the shortest window, or
// twice the recent latency if that is longer.
func (g *gradient) span() time.Duration { return max(g.window, sat.Mul(g.recent, 2)) }

// closesAt returns when the current window may close and how many samples
// it needs by then. A probe's samples are the calls it admitted before
// probeTo, and it waits for every one of them ([gradient.closes]), so that
// slow calls still running are not left out of its mean; but no longer
// than twice the longest seen or a span after probeTo, whichever is
// longer, should a call hang.
func (g *gradient) closesAt() (at time.Duration, samples int64) {
	if g.probing {
		return sat.Add(g.probeTo, sat.Mul(max(g.span(), g.longest), 2)), g.minSamples
	}
	return sat.Add(g.windowFrom, g.span()), g.minSamples
}

// closes reports whether the window closes at now with n samples: a
// probe's once it has minSamples and pending of its samples are still
// out, none or too long; another's when closesAt says. A probe that has
// too few samples by probeTo takes samples for another span.
func (g *gradient) closes(now time.Duration, n int64, longest time.Duration, pending int64) bool {
	if !g.probing {
		at, need := g.closesAt()
		return now >= at && n >= need
	}
	g.longest = max(g.longest, longest)
	if now < g.probeTo {
		return false
	}
	if n < g.minSamples {
		g.probeTo = sat.Add(now, g.span())
		return false
	}
	at, _ := g.closesAt()
	return pending <= 0 || now >= at
}

// startProbe begins a probe window at now.
func (g *gradient) startProbe(now time.Duration) {
	g.probing = true
	g.windowFrom = now
	g.probeTo = sat.Add(now, sat.Mul(g.span(), probeWindows))
	g.longest = 0
}

// update closes the window at now with aggregates s, and says why the
// limit changed (nil: it did not, or not for a reason worth telling).
func (g *gradient) update(now time.Duration, s windowStats) error {
	g.windowFrom = now
	if s.n == 0 {
		return nil
	}
	mean := s.sum / time.Duration(s.n)
	g.recent, g.typical = max(mean, 1), max(s.p50, 1)
	if g.probing {
		g.probing = false
		// A probe's mean is of a hundred calls: near the last baseline, it
		// moves it by a quarter of the way, for the precision of several
		// probes; far from it, the service changed, and it is the baseline.
		if b := g.baseline; b > 0 && g.typical < b+b/4 && g.typical > b-b/4 {
			g.baseline = b - b/4 + g.typical/4
		} else {
			g.baseline = g.typical
		}
		g.measuredAt, g.bound = g.limit, false
		g.nextProbe = sat.Add(now, g.probeEvery)
		g.noProbe = sat.Add(now, sat.Mul(g.window, probeGap))
		return reasonProbeEnded
	}
	l, why := g.limit, error(nil)
	if s.busy {
		gr := min(max(g.tolerance*float64(g.baseline)/float64(g.typical), minGradient), 2)
		l = g.limit * gr
		l += math.Sqrt(l)
		why = reasonLatency
		if !s.bound {
			// The latency is the server's own queueing: a limit that
			// turned nobody away did not make it, and one lower would.
			l = max(l, g.limit)
		}
	}
	if s.drops > 0 && l > 0.9*g.limit {
		l, why = 0.9*g.limit, reasonDrops
	}
	// A busy window whose median is under three quarters of the baseline
	// says the baseline is stale: a loaded call is not faster than an
	// unloaded one, so the service got faster (after a spike of slowness,
	// say). Such a window does not raise the limit, two in a row bring a
	// probe, and until a probe measures it again the limit at most doubles, so
	// that the probe, from half of it, drains the queue. A window that is
	// not stale, turned calls away and reached that cap has the room it
	// found: the cap moves.
	stale := s.busy && g.typical < g.baseline-g.baseline/4
	if stale {
		g.stale++
		l = min(l, g.limit) // no rise on a baseline that is too high
	} else {
		g.stale = 0
	}
	most := max(2*g.measuredAt, g.floor)
	g.limit = min(max(l, g.floor), g.ceiling, most)
	if g.limit >= most && !stale && s.bound {
		g.measuredAt = g.limit
	}
	// A probe due comes once the limit turns calls away: one that turns
	// none away needs no baseline, and its probe would. A limit halved since
	// the last probe is a slower service or fewer workers, and a stale
	// window a faster service: either way the baseline may be wrong.
	g.bound = g.bound || s.bound
	moved := 2*g.limit <= g.measuredAt || g.stale >= 2 // one stale window may be luck
	if now >= g.nextProbe && g.bound || moved && now >= g.noProbe {
		g.startProbe(now)
		return reasonProbe
	}
	return why
}

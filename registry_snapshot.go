package resilience

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Snapshot is what a [Registry] shows of one registered guard at one
// moment: plain values, ready for a template, JSON or a metrics gauge.
// Kind says which one of the sections is set, the others being nil:
// "breaker", "bulkhead", "rate-limiter", "keyed-rate-limiter",
// "retry-budget", "adaptive-limiter", "adaptive-throttler" or "hedge".
type Snapshot struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// State is the guard's state in words: a breaker's "closed", "open",
	// "half-open" or "isolated"; "full", "queueing", "limiting",
	// "exhausted", "throttling" or "ok" for the others; "shedding" for
	// one of the others that would say "ok" but refused a call lately (see
	// Shedding); "unreadable" for a guard whose inspection failed (see
	// Err).
	State string `json:"state"`
	// Health sums State up, for a colour.
	Health Health `json:"health"`
	// LastRefused is when the registry last heard the guard refuse a call,
	// an [EventRefused] under its name (see [Registry.Observe]), or, for a
	// bulkhead, rate limiter, keyed rate limiter, adaptive limiter or
	// adaptive throttler that reports no events to it, the first snapshot
	// that found the guard's count of refusals moved: zero if it never
	// refused. For a Hedge it is a hedge its budget refused, the call going
	// on.
	LastRefused time.Time `json:"lastRefused,omitzero"`
	// Shedding reports that the guard refused a call lately: LastRefused
	// is less than the registry's [WithRegistryShedding] (a minute by
	// default) before the snapshot. A guard whose state would be "ok" then
	// says "shedding", health warning: an [AdaptiveLimiter] refuses calls
	// of low priority long before every slot is taken. Other states say
	// more, and stay: "full", "throttling", a breaker's "open" (a breaker
	// closed again stays "closed"). Never set for a Hedge.
	Shedding bool `json:"shedding,omitempty"`

	Breaker           *BreakerSnapshot           `json:"breaker,omitempty"`
	Bulkhead          *BulkheadSnapshot          `json:"bulkhead,omitempty"`
	RateLimiter       *RateLimiterSnapshot       `json:"rateLimiter,omitempty"`
	KeyedRateLimiter  *KeyedRateLimiterSnapshot  `json:"keyedRateLimiter,omitempty"`
	RetryBudget       *RetryBudgetSnapshot       `json:"retryBudget,omitempty"`
	AdaptiveLimiter   *AdaptiveLimiterSnapshot   `json:"adaptiveLimiter,omitempty"`
	AdaptiveThrottler *AdaptiveThrottlerSnapshot `json:"adaptiveThrottler,omitempty"`
	Hedge             *HedgeSnapshot             `json:"hedge,omitempty"`

	// Err says why the guard could not be read, when State is
	// "unreadable": what its inspection panicked with. No guard of the
	// package does; the registry shows it rather than fail every snapshot.
	Err string `json:"err,omitempty"`

	// Events are the recent events of the name, the newest first, when the
	// guard reports to the registry (see [Registry.Observe]).
	Events []EventRecord `json:"events,omitempty"`
}

// Health is how a registered guard fares, in three steps a status page
// shows as colours.
type Health string

// The values of [Health].
const (
	HealthOK       Health = "ok"       // calls go through as usual
	HealthWarning  Health = "warning"  // calls wait, are limited, shed or probe
	HealthCritical Health = "critical" // calls are refused: an open breaker
)

// BreakerSnapshot is a [Breaker]'s section of a [Snapshot]: its
// [BreakerMetrics], state in words.
type BreakerSnapshot struct {
	State               string        `json:"state"` // "closed", "open", "half-open"
	Isolated            bool          `json:"isolated"`
	ConsecutiveFailures int           `json:"consecutiveFailures"`
	WindowCalls         int           `json:"windowCalls"`
	WindowFailures      int           `json:"windowFailures"`
	FailureRate         float64       `json:"failureRate"`
	Probes              int           `json:"probes"`
	Trips               int           `json:"trips"`
	HalfOpenIn          time.Duration `json:"halfOpenIn"` // open: until half-open
}

// BulkheadSnapshot is a [Bulkhead]'s section of a [Snapshot].
type BulkheadSnapshot struct {
	InUse   int `json:"inUse"`
	Limit   int `json:"limit"`
	Waiting int `json:"waiting"`
}

// RateLimiterSnapshot is a [RateLimiter]'s section of a [Snapshot].
// Tokens is +Inf at [RateUnlimited], which JSON cannot hold: it is
// reported as the burst then.
type RateLimiterSnapshot struct {
	Tokens float64 `json:"tokens"`
	Rate   float64 `json:"rate"` // tokens a second
	Burst  int     `json:"burst"`
}

// KeyedRateLimiterSnapshot is a [KeyedRateLimiter]'s section of a
// [Snapshot]: how many keys it holds, and the keys it refused most among
// them, at most 10, the most refused first.
type KeyedRateLimiterSnapshot struct {
	Keys       int          `json:"keys"`
	MaxKeys    int          `json:"maxKeys"`
	Rate       float64      `json:"rate"`
	Burst      int          `json:"burst"`
	TopRefused []KeyRefusal `json:"topRefused,omitempty"`
}

// KeyRefusal is a key of a [KeyedRateLimiter], as fmt prints it, and how
// many calls its bucket refused since the key came into the limiter's
// table. Keys whose buckets are full again are left out: the limiter
// drops them.
type KeyRefusal struct {
	Key      string `json:"key"`
	Refusals int64  `json:"refusals"`
}

// RetryBudgetSnapshot is a [RetryBudget]'s section of a [Snapshot]. Form
// is "quota", "throttle" or "budget", after its constructor; Tokens and
// Capacity are in its units (tokens, or retries for a budget).
type RetryBudgetSnapshot struct {
	Form      string  `json:"form"`
	Tokens    float64 `json:"tokens"`
	Capacity  float64 `json:"capacity"`
	Available int     `json:"available"` // RetryBudget.Available
}

// AdaptiveLimiterSnapshot is an [AdaptiveLimiter]'s section of a
// [Snapshot].
type AdaptiveLimiterSnapshot struct {
	Limit    int `json:"limit"`
	InFlight int `json:"inFlight"`
	Queued   int `json:"queued"`
}

// AdaptiveThrottlerSnapshot is an [AdaptiveThrottler]'s section of a
// [Snapshot]: the probability with which it refuses a call now.
type AdaptiveThrottlerSnapshot struct {
	Ratio float64 `json:"ratio"`
}

// HedgeSnapshot is a [Hedge]'s section of a [Snapshot]: the delay after
// which it starts a hedge now, and the hedges its budget allows.
type HedgeSnapshot struct {
	Delay           time.Duration `json:"delay"`
	Fixed           bool          `json:"fixed"` // WithHedgeDelay
	BudgetAvailable int           `json:"budgetAvailable"`
}

// EventRecord is an [Event] as a [Registry] keeps it: in words, with the
// time it came. Like events in a row are one record: Count of them, the
// first at First, the last at Time, whose details the record holds.
type EventRecord struct {
	Time      time.Time `json:"time"`
	First     time.Time `json:"first"`
	Count     int       `json:"count"`
	Kind      string    `json:"kind"` // EventKind.String: "state-change"
	Component string    `json:"component"`
	Err       string    `json:"err,omitempty"`
	// Text says what happened in a line: "closed → open",
	// "refused: resilience: breaker open (retry in 30s)".
	Text string `json:"text"`
}

func (rec eventRecord) export() EventRecord {
	e := rec.e
	out := EventRecord{
		Time: rec.last, First: rec.first, Count: rec.count,
		Kind: e.Kind.String(), Component: e.Component,
	}
	if e.Err != nil {
		out.Err = errorText(e.Err)
	}
	out.Text = describe(e, out.Err)
	return out
}

// errorText returns err.Error(), or, when that panics (a typed nil *T
// whose method reads its receiver, say), what fmt prints for such an
// error: "%!v(PANIC=Error method: …)". One broken error is shown as
// broken, and does not take every later snapshot down with it.
func errorText(err error) (text string) {
	defer func() {
		if p := recover(); p != nil {
			text = fmt.Sprintf("%%!v(PANIC=Error method: %v)", p)
		}
	}()
	return err.Error()
}

// describe says what e reports in a line; errText is e.Err in words.
func describe(e Event, errText string) string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	switch e.Kind {
	case EventStateChange:
		return e.From.String() + " → " + e.To.String()
	case EventLimitChanged:
		b.WriteString(": " + strconv.Itoa(e.OldLimit) + " → " + strconv.Itoa(e.NewLimit))
		if e.Reason != nil {
			b.WriteString(" (" + errorText(e.Reason) + ")")
		}
		return b.String()
	}
	if e.Attempt > 0 {
		b.WriteString(" #" + strconv.Itoa(e.Attempt))
	}
	if e.Err != nil {
		b.WriteString(": " + errText)
	}
	if e.Wait > 0 {
		b.WriteString(" (wait " + e.Wait.String() + ")")
	}
	if e.Duration > 0 {
		b.WriteString(" (took " + e.Duration.String() + ")")
	}
	return b.String()
}

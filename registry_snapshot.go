package resilience

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Snapshot is what a [Registry] shows of one registered guard at one
// moment: plain values, ready for a template, JSON or a metrics gauge.
// Kind says which one of the sections is set, the others being nil: one
// of the Kind constants (KindBreaker, KindBulkhead, KindRateLimiter,
// KindKeyedRateLimiter, KindRetryBudget, KindAdaptiveLimiter,
// KindAdaptiveThrottler, KindHedge), the same as the Component of the
// guard's events; a guard of another package (see [Inspector]) names its
// own kind and has no section. Each kind fills its snapshot itself, in its
// Inspect method.
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
	Keyed             *KeyedSnapshot             `json:"keyed,omitempty"`

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

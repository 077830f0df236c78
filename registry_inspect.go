package resilience

import (
	"fmt"
	"sync/atomic"
)

// inspectable is what a Registry can hold: each kind names itself, says
// whether its constructor made it, and fills its section of a snapshot,
// reading nothing the calls it guards depend on.
type inspectable interface {
	// guardKind is the guard's Snapshot.Kind.
	guardKind() string
	// made reports whether the guard's constructor made it: a zero value
	// has none of what inspect reads, and most kinds cannot even be used.
	made() bool
	// inspect fills s, whose Name, Kind, events and Shedding are set,
	// with the guard's state.
	inspect(s *Snapshot)
}

// refusalCount counts a guard's refusals, so that a Registry sees a guard
// shed calls even when the guard reports no events to it: a guard that
// embeds it is a refusalCounter.
type refusalCount struct{ refusedN atomic.Int64 }

func (c *refusalCount) refusals() int64 { return c.refusedN.Load() }

// refusalCounter is a guard that counts its refusals.
type refusalCounter interface{ refusals() int64 }

// inspectGuard fills s from g. A guard whose inspection panics, which no
// guard of the package does, is shown as such, "unreadable" and critical,
// so that one guard never takes the snapshots of the others with it.
func inspectGuard(g inspectable, s *Snapshot) {
	defer func() {
		if p := recover(); p != nil {
			*s = Snapshot{Name: s.Name, Kind: s.Kind, State: "unreadable", Health: HealthCritical,
				Err:         fmt.Sprintf("resilience: reading the guard panicked: %v", p),
				LastRefused: s.LastRefused, Shedding: s.Shedding, Events: s.Events}
		}
	}()
	g.inspect(s)
}

// shed shows a guard that refused a call lately, and would say "ok"
// otherwise, as "shedding". A guard that sheds by priority refuses calls
// with slots still free: its counts alone would show it well.
func (s *Snapshot) shed() {
	if s.Shedding && s.Health == HealthOK {
		s.State, s.Health = "shedding", HealthWarning
	}
}

func (*Breaker) guardKind() string { return "breaker" }

func (b *Breaker) made() bool { return b.view.Load() != nil }

func (b *Breaker) inspect(s *Snapshot) {
	m := b.Metrics()
	s.State = m.State.String()
	s.Breaker = &BreakerSnapshot{
		State: m.State.String(), Isolated: m.Isolated,
		ConsecutiveFailures: m.ConsecutiveFailures,
		WindowCalls:         m.WindowCalls, WindowFailures: m.WindowFailures, FailureRate: m.FailureRate,
		Probes: m.Probes, Trips: m.Trips, HalfOpenIn: m.HalfOpenIn,
	}
	switch {
	case m.Isolated:
		s.State, s.Health = "isolated", HealthCritical
	case m.State == BreakerOpen:
		s.Health = HealthCritical
	case m.State == BreakerHalfOpen:
		s.Health = HealthWarning
	}
}

func (*Bulkhead) guardKind() string { return "bulkhead" }

func (b *Bulkhead) made() bool { return b.limit > 0 }

func (b *Bulkhead) inspect(s *Snapshot) {
	bs := &BulkheadSnapshot{InUse: b.InUse(), Limit: b.Limit(), Waiting: b.Waiting()}
	s.Bulkhead = bs
	slotsState(s, bs.InUse, bs.Limit, bs.Waiting)
}

// slotsState says how a guard that limits calls at once fares.
func slotsState(s *Snapshot, inUse, limit, waiting int) {
	switch {
	case waiting > 0:
		s.State, s.Health = "queueing", HealthWarning
	case inUse >= limit:
		s.State, s.Health = "full", HealthWarning
	default:
		s.State = "ok"
	}
	s.shed()
}

func (*RateLimiter) guardKind() string { return "rate-limiter" }

func (l *RateLimiter) made() bool { return l.limits.made() }

// made reports whether newLimits made l: every rate and burst it takes
// has an interval or a tau (no limit has tau MaxInt64), the zero value
// neither.
func (l *limits) made() bool { return l.Interval != 0 || l.Tau != 0 }

func (l *RateLimiter) inspect(s *Snapshot) {
	rs := &RateLimiterSnapshot{Tokens: l.Tokens(), Rate: l.Rate(), Burst: l.Burst()}
	if l.Interval == 0 { // unlimited: +Inf tokens
		rs.Tokens = float64(rs.Burst)
	}
	s.State, s.RateLimiter = "ok", rs
	if l.Interval != 0 && rs.Tokens < 1 {
		s.State, s.Health = "limiting", HealthWarning
	}
	s.shed()
}

func (*KeyedRateLimiter[K]) guardKind() string { return "keyed-rate-limiter" }

func (l *KeyedRateLimiter[K]) made() bool { return l.maxKeys > 0 && l.limits.made() }

func (l *KeyedRateLimiter[K]) inspect(s *Snapshot) {
	ks := &KeyedRateLimiterSnapshot{
		Keys: l.Len(), MaxKeys: int(l.maxKeys), Rate: l.Rate(), Burst: l.Burst(),
		TopRefused: l.topRefused(keyedTopShown),
	}
	s.State, s.KeyedRateLimiter = "ok", ks
	switch {
	case ks.Keys >= ks.MaxKeys:
		s.State, s.Health = "full", HealthCritical
	case len(ks.TopRefused) > 0:
		s.State, s.Health = "limiting", HealthWarning
	}
	s.shed()
}

func (*RetryBudget) guardKind() string { return "retry-budget" }

func (b *RetryBudget) made() bool { return b.kind != "" }

func (b *RetryBudget) inspect(s *Snapshot) {
	rs := &RetryBudgetSnapshot{
		Form:      b.kind,
		Tokens:    float64(b.balance.Load()) / budgetUnit,
		Capacity:  float64(b.capacity) / budgetUnit,
		Available: b.Available(),
	}
	s.State, s.RetryBudget = "ok", rs
	if rs.Available == 0 {
		s.State, s.Health = "exhausted", HealthWarning
	}
	s.shed()
}

func (*AdaptiveLimiter) guardKind() string { return "adaptive-limiter" }

// made reads the limit, which every limiter made has, at least 1.
func (l *AdaptiveLimiter) made() bool { return l.Limit() > 0 }

func (l *AdaptiveLimiter) inspect(s *Snapshot) {
	as := &AdaptiveLimiterSnapshot{Limit: l.Limit(), InFlight: l.InFlight(), Queued: l.Queued()}
	s.AdaptiveLimiter = as
	slotsState(s, as.InFlight, as.Limit, as.Queued)
}

func (*AdaptiveThrottler) guardKind() string { return "adaptive-throttler" }

func (t *AdaptiveThrottler) made() bool { return t.done != nil }

func (t *AdaptiveThrottler) inspect(s *Snapshot) {
	ts := &AdaptiveThrottlerSnapshot{Ratio: t.Ratio()}
	s.State, s.AdaptiveThrottler = "ok", ts
	if ts.Ratio > 0 {
		s.State, s.Health = "throttling", HealthWarning
	}
	s.shed()
}

func (*hedge[T]) guardKind() string { return "hedge" }

// made holds: a hedge is made by Hedge alone, its type being unexported.
func (*hedge[T]) made() bool { return true }

// inspect leaves a hedge "ok" whatever its budget refused: a refused hedge
// is no refused call.
func (h *hedge[T]) inspect(s *Snapshot) {
	s.State, s.Shedding = "ok", false
	s.Hedge = &HedgeSnapshot{Delay: h.currentDelay(), Fixed: h.fixed, BudgetAvailable: h.budget.Available()}
}

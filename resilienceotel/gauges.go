package resilienceotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/faf87a20/resilience"
)

// gauges are the asynchronous instruments that read the guards of the
// registries given to [Observer.RegisterRegistry]. Values that add up
// across processes (slots, calls, keys) are up-down counters; the others
// (a state, tokens, a ratio, a delay) are gauges.
type gauges struct {
	health             metric.Int64ObservableGauge
	shedding           metric.Int64ObservableGauge
	breakerState       metric.Int64ObservableGauge
	breakerFailures    metric.Float64ObservableGauge
	breakerConsecutive metric.Int64ObservableGauge
	bulkheadInFlight   metric.Int64ObservableUpDownCounter
	bulkheadLimit      metric.Int64ObservableUpDownCounter
	bulkheadWaiting    metric.Int64ObservableUpDownCounter
	limiterTokens      metric.Float64ObservableGauge
	keyedKeys          metric.Int64ObservableUpDownCounter
	guardKeys          metric.Int64ObservableUpDownCounter
	guardKeysBusy      metric.Int64ObservableUpDownCounter
	budgetTokens       metric.Float64ObservableGauge
	adaptiveLimit      metric.Int64ObservableUpDownCounter
	adaptiveInFlight   metric.Int64ObservableUpDownCounter
	adaptiveWaiting    metric.Int64ObservableUpDownCounter
	throttleRatio      metric.Float64ObservableGauge
	hedgeDelay         metric.Float64ObservableGauge
}

// newGauges creates the instruments with m, and returns the errors m
// reports joined.
func newGauges(m metric.Meter) (gauges, error) {
	var g gauges
	var errs []error
	i64g := func(name, unit, desc string) metric.Int64ObservableGauge {
		inst, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	f64g := func(name, unit, desc string) metric.Float64ObservableGauge {
		inst, err := m.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	i64u := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		inst, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	g.health = i64g("resilience.guard.health", "{health}",
		"1 for how a registered guard fares (ok, warning or critical, the status page's colour), 0 for the two others.")
	g.shedding = i64g("resilience.guard.shedding", "{guard}",
		"1 if a registered guard refused a call lately (within the registry's WithRegistryShedding, a minute by default), else 0.")
	g.breakerState = i64g("resilience.breaker.state", "{state}",
		"1 for a registered breaker's current state, 0 for its other states.")
	g.breakerFailures = f64g("resilience.breaker.failure_ratio", "1",
		"Failures among the calls of a registered breaker's failure-rate window (0 without one).")
	g.breakerConsecutive = i64g("resilience.breaker.consecutive_failures", "{failure}",
		"Failures in a row of a registered breaker.")
	g.bulkheadInFlight = i64u("resilience.bulkhead.in_flight", "{call}", "Calls that hold a slot of a registered bulkhead.")
	g.bulkheadLimit = i64u("resilience.bulkhead.limit", "{call}", "Slots of a registered bulkhead.")
	g.bulkheadWaiting = i64u("resilience.bulkhead.waiting", "{call}", "Calls waiting for a slot of a registered bulkhead.")
	g.limiterTokens = f64g("resilience.rate_limiter.tokens", "{token}",
		"Tokens in a registered rate limiter's bucket (its burst when unlimited).")
	g.keyedKeys = i64u("resilience.keyed_rate_limiter.keys", "{key}", "Keys a registered keyed rate limiter holds.")
	g.guardKeys = i64u("resilience.keyed.keys", "{key}", "Keys whose guards a registered Keyed guard holds.")
	g.guardKeysBusy = i64u("resilience.keyed.busy", "{key}",
		"Keys of a registered Keyed guard whose guards it keeps for their state: a call in flight, a breaker not closed.")
	g.budgetTokens = f64g("resilience.retry_budget.tokens", "{token}",
		"Tokens of a registered retry quota, throttle or budget (retries, for a budget).")
	g.adaptiveLimit = i64u("resilience.adaptive_limiter.limit", "{call}", "A registered adaptive limiter's current limit.")
	g.adaptiveInFlight = i64u("resilience.adaptive_limiter.in_flight", "{call}", "Calls a registered adaptive limiter admitted that run.")
	g.adaptiveWaiting = i64u("resilience.adaptive_limiter.waiting", "{call}", "Calls waiting for a registered adaptive limiter.")
	g.throttleRatio = f64g("resilience.adaptive_throttler.rejection_ratio", "1",
		"The probability with which a registered adaptive throttler refuses a call.")
	g.hedgeDelay = f64g("resilience.hedge.delay", "s", "The delay after which a registered Hedge starts a hedge.")
	return g, errors.Join(errs...)
}

func (g *gauges) all() []metric.Observable {
	return []metric.Observable{
		g.health, g.shedding, g.breakerState, g.breakerFailures, g.breakerConsecutive,
		g.bulkheadInFlight, g.bulkheadLimit, g.bulkheadWaiting,
		g.limiterTokens, g.keyedKeys, g.guardKeys, g.guardKeysBusy, g.budgetTokens,
		g.adaptiveLimit, g.adaptiveInFlight, g.adaptiveWaiting,
		g.throttleRatio, g.hedgeDelay,
	}
}

// breakerStates are a breaker's states, and the attribute
// resilience.breaker.state says them.
var breakerStates = [...]struct {
	state resilience.BreakerState
	attr  string
}{
	{resilience.BreakerClosed, "closed"}, {resilience.BreakerOpen, "open"}, {resilience.BreakerHalfOpen, "half_open"},
}

// RegisterRegistry reports every guard registered in reg, read when the
// metrics are collected: the health of each (one series per health, 1 for
// the current one) and whether it sheds (1 if it refused a call lately: see
// resilience.WithRegistryShedding); a breaker's state, failure ratio and failures in a
// row; a bulkhead's calls in flight, limit and calls waiting; a rate limiter's
// tokens; a keyed rate limiter's keys; a retry quota's, throttle's or
// budget's tokens; an adaptive limiter's limit, calls in flight and calls waiting;
// an adaptive throttler's rejection ratio; a Hedge's delay. Each series
// carries resilience.name, the name the guard is registered under (the
// name its events carry too: a guard has one name, which Register gives
// it), and exists from registration on, before
// any call; a guard unregistered is no longer reported. The README lists
// the metrics.
//
// Unregister the returned registration to stop reporting reg. Each
// collection reads reg.Snapshots(). It panics if reg is nil.
func (o *Observer) RegisterRegistry(reg *resilience.Registry) (metric.Registration, error) {
	if reg == nil {
		panic("resilienceotel: Observer.RegisterRegistry: registry is nil")
	}
	g := &o.gauges
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for _, s := range reg.Snapshots() {
			g.observe(obs, s)
		}
		return nil
	}, g.all()...)
}

// healths are the values of a snapshot's Health, which the attribute
// resilience.health says as they are.
var healths = [...]resilience.Health{resilience.HealthOK, resilience.HealthWarning, resilience.HealthCritical}

// observe reports the snapshot s of one registered guard.
func (g *gauges) observe(obs metric.Observer, s resilience.Snapshot) {
	name := keyName.String(s.Name)
	set := metric.WithAttributeSet(attribute.NewSet(name))
	for _, h := range healths {
		obs.ObserveInt64(g.health, oneIf(s.Health == h), metric.WithAttributeSet(attribute.NewSet(name, keyHealth.String(string(h)))))
	}
	obs.ObserveInt64(g.shedding, oneIf(s.Shedding), set)
	switch {
	case s.Breaker != nil:
		b := s.Breaker
		for _, st := range breakerStates {
			obs.ObserveInt64(g.breakerState, oneIf(b.State == st.state), metric.WithAttributeSet(attribute.NewSet(name, keyState.String(st.attr))))
		}
		obs.ObserveFloat64(g.breakerFailures, b.FailureRate, set)
		obs.ObserveInt64(g.breakerConsecutive, int64(b.ConsecutiveFailures), set)
	case s.Bulkhead != nil:
		obs.ObserveInt64(g.bulkheadInFlight, int64(s.Bulkhead.InFlight), set)
		obs.ObserveInt64(g.bulkheadLimit, int64(s.Bulkhead.Limit), set)
		obs.ObserveInt64(g.bulkheadWaiting, int64(s.Bulkhead.Waiting), set)
	case s.RateLimiter != nil:
		obs.ObserveFloat64(g.limiterTokens, s.RateLimiter.Tokens, set)
	case s.KeyedRateLimiter != nil:
		obs.ObserveInt64(g.keyedKeys, int64(s.KeyedRateLimiter.Keys), set)
	case s.Keyed != nil: // one series per guard, none per key
		obs.ObserveInt64(g.guardKeys, int64(s.Keyed.Keys), set)
		obs.ObserveInt64(g.guardKeysBusy, int64(s.Keyed.Busy), set)
	case s.RetryBudget != nil:
		obs.ObserveFloat64(g.budgetTokens, s.RetryBudget.Tokens, set)
	case s.AdaptiveLimiter != nil:
		obs.ObserveInt64(g.adaptiveLimit, int64(s.AdaptiveLimiter.Limit), set)
		obs.ObserveInt64(g.adaptiveInFlight, int64(s.AdaptiveLimiter.InFlight), set)
		obs.ObserveInt64(g.adaptiveWaiting, int64(s.AdaptiveLimiter.Waiting), set)
	case s.AdaptiveThrottler != nil:
		obs.ObserveFloat64(g.throttleRatio, s.AdaptiveThrottler.Ratio, set)
	case s.Hedge != nil:
		obs.ObserveFloat64(g.hedgeDelay, s.Hedge.Delay.Seconds(), set)
	}
}

// oneIf is 1 if b holds, else 0: a gauge's value for a yes or no.
func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

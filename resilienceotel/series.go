package resilienceotel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/faf87a20/resilience"
)

// Attribute keys of the measurements and span events.
const (
	keyComponent = attribute.Key("resilience.component")
	keyName      = attribute.Key("resilience.name")
	keyOutcome   = attribute.Key("resilience.outcome")
	keyReason    = attribute.Key("resilience.reason")
	keyState     = attribute.Key("resilience.breaker.state")
	keyHealth    = attribute.Key("resilience.health")
)

// outcome is how a call, an attempt, a batch or a wait ended: the value of
// resilience.outcome.
type outcome uint8

const (
	outcomeSuccess outcome = iota
	outcomeFailure
	outcomeTimeout
	outcomeCanceled
	outcomeRefused
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"success", "failure", "timeout", "canceled", "refused"}

// reason is why a retry gave up or a guard refused: the value of
// resilience.reason.
type reason uint8

const (
	reasonOther reason = iota
	reasonRetriesExhausted
	reasonBudgetExhausted
	reasonBreakerOpen
	reasonBulkheadFull
	reasonTimeout
	reasonDeadlineExceeded
	reasonCanceled
	reasonRateLimited
	reasonLimitExceeded
	reasonThrottled
	numReasons
)

var reasonNames = [numReasons]string{"other", "retries_exhausted", "budget_exhausted", "breaker_open",
	"bulkhead_full", "timeout", "deadline_exceeded", "canceled", "rate_limited", "limit_exceeded", "throttled"}

// sentinels maps the errors a reason is read from, in the order they are
// tried: the library's own before the context's, since ErrTimeout matches
// context.DeadlineExceeded too, and so does a rate limiter's refusal for
// tokens that would come after the deadline. A refusal of a guard the list
// does not name (one that matches only resilience.ErrRefused) is "other":
// its outcome says it was refused.
var sentinels = [...]struct {
	err    error
	reason reason
}{
	{resilience.ErrRetriesExhausted, reasonRetriesExhausted},
	{resilience.ErrRetryBudgetExhausted, reasonBudgetExhausted},
	{resilience.ErrBreakerOpen, reasonBreakerOpen},
	{resilience.ErrBulkheadFull, reasonBulkheadFull},
	{resilience.ErrRateLimited, reasonRateLimited},
	{resilience.ErrLimitExceeded, reasonLimitExceeded},
	{resilience.ErrThrottled, reasonThrottled},
	{resilience.ErrTimeout, reasonTimeout},
	{context.DeadlineExceeded, reasonDeadlineExceeded},
	{context.Canceled, reasonCanceled},
}

// reasonOf names err by the first sentinel it matches. The sentinels
// themselves, as Retry gives them in Event.Reason, cost a comparison each.
func reasonOf(err error) reason {
	for _, s := range sentinels {
		if err == s.err {
			return s.reason
		}
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.reason
		}
	}
	return reasonOther
}

// outcomeOf classifies the error a call, an attempt or a batch ended with.
// A guard's refusal (resilience.ErrRefused), whatever the guard, is
// refused, before anything else it matches: a rate limiter's refusal for
// tokens that would come after the deadline is no timeout, and a Retry that
// gave up on a refused attempt was refused. A retry budget's refusal of a
// retry is refused too, though it is no guard's.
func outcomeOf(err error) outcome {
	if err == nil {
		return outcomeSuccess
	}
	if errors.Is(err, resilience.ErrRefused) {
		return outcomeRefused
	}
	switch reasonOf(err) {
	case reasonTimeout, reasonDeadlineExceeded:
		return outcomeTimeout
	case reasonCanceled:
		return outcomeCanceled
	case reasonBudgetExhausted:
		return outcomeRefused
	}
	return outcomeFailure
}

// attemptOutcome classifies the error of an attempt that failed: refused
// when a guard refused it (resilience.ErrRefused), else failure.
func attemptOutcome(err error) outcome {
	if errors.Is(err, resilience.ErrRefused) {
		return outcomeRefused
	}
	return outcomeFailure
}

// opts is one attribute set, wrapped once in the option slices the
// instruments take: passing a slice that exists allocates nothing, where
// passing the option alone would box a new slice on every measurement.
type opts struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

func optsOf(kv ...attribute.KeyValue) opts {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return opts{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
}

// series holds the attribute sets of one (component, name), built when
// the pair is first seen, so that recording a measurement builds no set
// and allocates nothing of ours.
type series struct {
	base     opts
	outcomes [numOutcomes]opts
	reasons  [numReasons]opts
	states   [3]opts               // by resilience.BreakerState
	attrs    [2]attribute.KeyValue // component and name, for span events
}

func newSeries(component, name string) *series {
	s := &series{attrs: [2]attribute.KeyValue{keyComponent.String(component), keyName.String(name)}}
	with := func(kv ...attribute.KeyValue) opts { return optsOf(append(s.attrs[:], kv...)...) }
	s.base = with()
	for i := range s.outcomes {
		s.outcomes[i] = with(keyOutcome.String(outcomeNames[i]))
	}
	for i := range s.reasons {
		s.reasons[i] = with(keyReason.String(reasonNames[i]))
	}
	for _, st := range []resilience.BreakerState{resilience.BreakerClosed, resilience.BreakerOpen, resilience.BreakerHalfOpen} {
		s.states[st] = with(keyState.String(stateName(st)))
	}
	return s
}

// stateName is a breaker state as an attribute value, in OTel's snake case.
func stateName(st resilience.BreakerState) string {
	if st == resilience.BreakerHalfOpen {
		return "half_open"
	}
	return st.String()
}

type seriesKey struct{ component, name string }

// seriesCache finds the series of a (component, name). Lookups read an
// immutable map through an atomic pointer, without a lock; the first event
// of a new pair copies the map under a mutex. A program has a handful of
// named components, so the copies stop early.
type seriesCache struct {
	m  atomic.Pointer[map[seriesKey]*series]
	mu sync.Mutex // held while adding
}

func (c *seriesCache) get(component, name string) *series {
	if m := c.m.Load(); m != nil {
		if s, ok := (*m)[seriesKey{component, name}]; ok {
			return s
		}
	}
	return c.add(component, name)
}

func (c *seriesCache) add(component, name string) *series {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := seriesKey{component, name}
	old := c.m.Load()
	if old != nil {
		if s, ok := (*old)[k]; ok {
			return s
		}
	}
	m := make(map[seriesKey]*series, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	s := newSeries(component, name)
	m[k] = s
	c.m.Store(&m)
	return s
}

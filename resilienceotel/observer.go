package resilienceotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/faf87a20/resilience"
)

// ScopeName is the instrumentation scope of the meter the observer records
// with.
const ScopeName = "github.com/faf87a20/resilience/resilienceotel"

// Version is the version of this module, without its "v": the
// instrumentation scope's version, which every metric carries beside
// [ScopeName]. It changes with each release of the module.
const Version = "0.1.0"

// Bucket boundaries: seconds for durations and waits (from 1ms to 60s),
// items for batch sizes.
var (
	secondsBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	sizeBuckets    = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// Observer is a [resilience.Observer] that records what the library's
// components do as OpenTelemetry metrics and, built [WithSpanEvents], adds
// span events to the span active in the context of the call an event
// belongs to: each retry (with its error and wait), each give-up, refusal,
// timeout, breaker state change, fallback and hedge. The README lists
// every metric, its unit and its attributes.
//
// Give one Observer to every component, each labelled with
// resilience.WithName: the component's kind and name become the attributes
// resilience.component and resilience.name. Keep names few and fixed, for
// every (component, name) pair is a set of series, kept for the life of
// the Observer.
//
// An Observer is safe for concurrent use.
type Observer struct {
	cfg    config
	meter  metric.Meter
	series seriesCache

	calls       metric.Float64Histogram
	attempts    metric.Int64Counter
	retries     metric.Int64Counter
	retryWait   metric.Float64Histogram
	giveUps     metric.Int64Counter
	timeouts    metric.Int64Counter
	refusals    metric.Int64Counter
	waiting     metric.Int64UpDownCounter
	waitTime    metric.Float64Histogram
	transitions metric.Int64Counter
	batchSize   metric.Int64Histogram
	batchTime   metric.Float64Histogram
	latePanics  metric.Int64Counter
	discarded   metric.Int64Counter
	fallbacks   metric.Int64Counter
	hedges      metric.Int64Counter
	gauges      gauges
}

// Option configures [NewObserver].
type Option interface {
	apply(*config)
}

type config struct {
	meterProvider   metric.MeterProvider
	withoutOutcomes bool
	spanEvents      bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider records the metrics with mp. The default, and what a
// nil mp means, is the global provider (otel.GetMeterProvider) at the time
// NewObserver is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithoutOutcomes makes the Observer not ask for an event at the end of
// every call (see [resilience.OutcomeObserver]): no resilience.call.duration
// and no successful attempts in resilience.attempts, and a call that
// succeeds costs nothing more than it does unobserved. By default outcomes
// are asked for: a call costs one measurement, one per call through a
// composition whatever its layers (see resilience.Compose), so that the
// calls' durations and the successes are there beside the failures.
func WithoutOutcomes() Option {
	return optionFunc(func(c *config) { c.withoutOutcomes = true })
}

// WithSpanEvents makes the Observer add span events to the span active in
// the context of the call an event belongs to, when that span is recording:
// each retry (with its error and wait), give-up, refusal, timeout, breaker
// state change, fallback and hedge appears in the trace of the request it
// happened in. It costs an allocation or two an event, on recording spans
// only. By default no span event is added.
func WithSpanEvents() Option {
	return optionFunc(func(c *config) { c.spanEvents = true })
}

// NewObserver creates the Observer's instruments with the meter of the
// configured provider for the instrumentation scope [ScopeName] at
// [Version]. It returns the errors the meter reports, with an Observer
// that is usable nonetheless (the failed instruments record nothing). It
// panics if an option is nil.
func NewObserver(opts ...Option) (*Observer, error) {
	var cfg config
	for _, opt := range opts {
		if opt == nil {
			panic("resilienceotel: NewObserver: option is nil")
		}
		opt.apply(&cfg)
	}
	if cfg.meterProvider == nil {
		cfg.meterProvider = otel.GetMeterProvider()
	}
	m := cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	o := &Observer{cfg: cfg, meter: m}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	seconds := metric.WithExplicitBucketBoundaries(secondsBuckets...)
	o.calls, err = m.Float64Histogram("resilience.call.duration", metric.WithUnit("s"), seconds,
		metric.WithDescription("Duration of calls through a component or a composition, by outcome."))
	check(err)
	o.attempts, err = m.Int64Counter("resilience.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts of a retry, by outcome (successful ones where the retry reports the call)."))
	check(err)
	o.retries, err = m.Int64Counter("resilience.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries scheduled after a failed attempt."))
	check(err)
	o.retryWait, err = m.Float64Histogram("resilience.retry.wait", metric.WithUnit("s"), seconds,
		metric.WithDescription("Wait before each retry."))
	check(err)
	o.giveUps, err = m.Int64Counter("resilience.give_ups", metric.WithUnit("{call}"),
		metric.WithDescription("Calls a retry gave up on, by reason."))
	check(err)
	o.timeouts, err = m.Int64Counter("resilience.timeouts", metric.WithUnit("{timeout}"),
		metric.WithDescription("Deadlines that passed before the call returned."))
	check(err)
	o.refusals, err = m.Int64Counter("resilience.refusals", metric.WithUnit("{call}"),
		metric.WithDescription("Calls a guard refused, by reason."))
	check(err)
	o.waiting, err = m.Int64UpDownCounter("resilience.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Calls waiting for a guard (a bulkhead slot, rate limiter tokens)."))
	check(err)
	o.waitTime, err = m.Float64Histogram("resilience.wait.duration", metric.WithUnit("s"), seconds,
		metric.WithDescription("Time calls waited for a guard, by outcome (success: admitted)."))
	check(err)
	o.transitions, err = m.Int64Counter("resilience.breaker.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Breaker state changes, by the state entered."))
	check(err)
	o.batchSize, err = m.Int64Histogram("resilience.batch.size", metric.WithUnit("{item}"),
		metric.WithExplicitBucketBoundaries(sizeBuckets...),
		metric.WithDescription("Items in each batch sent, by outcome."))
	check(err)
	o.batchTime, err = m.Float64Histogram("resilience.batch.duration", metric.WithUnit("s"), seconds,
		metric.WithDescription("Duration of each batch call, by outcome."))
	check(err)
	o.latePanics, err = m.Int64Counter("resilience.late_panics", metric.WithUnit("{panic}"),
		metric.WithDescription("Panics of calls nobody waited for any more."))
	check(err)
	o.discarded, err = m.Int64Counter("resilience.discarded", metric.WithUnit("{result}"),
		metric.WithDescription("Results obtained and not returned, handed to a discard hook."))
	check(err)
	o.fallbacks, err = m.Int64Counter("resilience.fallbacks", metric.WithUnit("{call}"),
		metric.WithDescription("Failed calls a fallback answered, by the reason of the failure."))
	check(err)
	o.hedges, err = m.Int64Counter("resilience.hedges", metric.WithUnit("{attempt}"),
		metric.WithDescription("Hedged attempts started after the first."))
	check(err)
	o.gauges, err = newGauges(m)
	check(err)
	return o, errors.Join(errs...)
}

// ObserveOutcomes reports whether the Observer asks for an event at the
// end of every call: true unless it was given [WithoutOutcomes].
func (o *Observer) ObserveOutcomes() bool { return !o.cfg.withoutOutcomes }

// Observe records e. Kinds it does not know are ignored.
func (o *Observer) Observe(ctx context.Context, e resilience.Event) {
	if k := int(e.Kind); k < len(recorders) && recorders[k] != nil {
		recorders[k](o, ctx, e)
	}
}

// recorders records each kind of event, indexed by its kind.
var recorders = [...]func(o *Observer, ctx context.Context, e resilience.Event){
	resilience.EventAttemptFailed: func(o *Observer, ctx context.Context, e resilience.Event) {
		o.attempts.Add(ctx, 1, o.series.get(e.Component, e.Name).outcomes[attemptOutcome(e.Err)].add...)
	},
	resilience.EventRetry: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.retries.Add(ctx, 1, s.base.add...)
		o.retryWait.Record(ctx, e.Wait.Seconds(), s.base.rec...)
		o.spanEvent(ctx, s, e)
	},
	resilience.EventGiveUp: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.giveUps.Add(ctx, 1, s.reasons[reasonOf(e.Reason)].add...)
		o.spanEvent(ctx, s, e)
	},
	resilience.EventTimeout: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.timeouts.Add(ctx, 1, s.base.add...)
		o.spanEvent(ctx, s, e)
	},
	resilience.EventRefused: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.refusals.Add(ctx, 1, s.reasons[reasonOf(e.Err)].add...)
		o.spanEvent(ctx, s, e)
	},
	resilience.EventStateChange: (*Observer).stateChange,
	resilience.EventWaitStarted: func(o *Observer, ctx context.Context, e resilience.Event) {
		o.waiting.Add(ctx, 1, o.series.get(e.Component, e.Name).base.add...)
	},
	resilience.EventWaitEnded: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.waiting.Add(ctx, -1, s.base.add...)
		o.waitTime.Record(ctx, e.Wait.Seconds(), s.outcomes[outcomeOf(e.Err)].rec...)
	},
	resilience.EventBatchSent: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name).outcomes[outcomeOf(e.Err)]
		o.batchSize.Record(ctx, int64(e.Size), s.rec...)
		o.batchTime.Record(ctx, e.Duration.Seconds(), s.rec...)
	},
	resilience.EventLatePanic: func(o *Observer, ctx context.Context, e resilience.Event) {
		o.latePanics.Add(ctx, 1, o.series.get(e.Component, e.Name).base.add...)
	},
	resilience.EventDiscarded: func(o *Observer, ctx context.Context, e resilience.Event) {
		o.discarded.Add(ctx, 1, o.series.get(e.Component, e.Name).base.add...)
	},
	resilience.EventFallback: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.fallbacks.Add(ctx, 1, s.reasons[reasonOf(e.Err)].add...)
		o.spanEvent(ctx, s, e)
	},
	resilience.EventHedge: func(o *Observer, ctx context.Context, e resilience.Event) {
		s := o.series.get(e.Component, e.Name)
		o.hedges.Add(ctx, 1, s.base.add...)
		o.spanEvent(ctx, s, e)
	},
	resilience.EventCallEnded: (*Observer).callEnded,
}

// stateChange records a breaker's change of state. The state itself is
// read from a registry (see [Observer.RegisterRegistry]), so that it is
// there before the first change.
func (o *Observer) stateChange(ctx context.Context, e resilience.Event) {
	if e.From > resilience.BreakerHalfOpen || e.To > resilience.BreakerHalfOpen {
		return
	}
	s := o.series.get(e.Component, e.Name)
	o.transitions.Add(ctx, 1, s.states[e.To].add...)
	o.spanEvent(ctx, s, e)
}

// callEnded records a call's duration and outcome, and the success of its
// last attempt.
func (o *Observer) callEnded(ctx context.Context, e resilience.Event) {
	s := o.series.get(e.Component, e.Name)
	out := outcomeOf(e.Err)
	o.calls.Record(ctx, e.Duration.Seconds(), s.outcomes[out].rec...)
	if out == outcomeSuccess && e.Attempt > 0 {
		o.attempts.Add(ctx, 1, s.outcomes[outcomeSuccess].add...)
	}
}

// Span event names and the attribute keys only they carry.
const (
	keyAttempt     = attribute.Key("resilience.attempt")
	keyResend      = attribute.Key("http.request.resend_count")
	keyWait        = attribute.Key("resilience.retry.wait")
	keyRetryAfter  = attribute.Key("resilience.retry_after")
	keyTimeout     = attribute.Key("resilience.timeout")
	keyHedgeDelay  = attribute.Key("resilience.hedge.delay")
	keyFrom        = attribute.Key("resilience.breaker.from")
	keyTo          = attribute.Key("resilience.breaker.to")
	keyErrorMsg    = attribute.Key("error.message")
	maxSpanAttribs = 7
)

// spanEvent adds e to the span in ctx, if it is recording.
func (o *Observer) spanEvent(ctx context.Context, s *series, e resilience.Event) {
	if !o.cfg.spanEvents {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, maxSpanAttribs)
	attrs = append(attrs, s.attrs[:]...)
	var name string
	switch e.Kind {
	case resilience.EventRetry:
		name = "resilience.retry"
		// The attempt that failed was the n-th; the one to come is the
		// n-th resend, in the terms of HTTP's semantic conventions.
		attrs = append(attrs, keyAttempt.Int(e.Attempt), keyResend.Int(e.Attempt), keyWait.Float64(e.Wait.Seconds()))
	case resilience.EventGiveUp:
		name = "resilience.give_up"
		attrs = append(attrs, keyAttempt.Int(e.Attempt), keyReason.String(reasonNames[reasonOf(e.Reason)]))
	case resilience.EventRefused:
		name = "resilience.refused"
		attrs = append(attrs, keyReason.String(reasonNames[reasonOf(e.Err)]))
		if e.Wait > 0 {
			attrs = append(attrs, keyRetryAfter.Float64(e.Wait.Seconds()))
		}
	case resilience.EventTimeout:
		name = "resilience.timeout"
		attrs = append(attrs, keyTimeout.Float64(e.Wait.Seconds()))
	case resilience.EventStateChange:
		name = "resilience.breaker.state_change"
		attrs = append(attrs, keyFrom.String(stateName(e.From)), keyTo.String(stateName(e.To)))
	case resilience.EventFallback:
		name = "resilience.fallback"
		attrs = append(attrs, keyReason.String(reasonNames[reasonOf(e.Err)]))
	case resilience.EventHedge:
		name = "resilience.hedge"
		attrs = append(attrs, keyAttempt.Int(e.Attempt), keyHedgeDelay.Float64(e.Wait.Seconds()))
	}
	if e.Err != nil {
		attrs = append(attrs, keyErrorMsg.String(e.Err.Error()))
	}
	span.AddEvent(name, trace.WithAttributes(attrs...))
}

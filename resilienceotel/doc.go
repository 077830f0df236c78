// Package resilienceotel records what the policies, guards and batchers of
// github.com/faf87a20/resilience do as OpenTelemetry metrics and span
// events. Build one [Observer] and give it to every component, each with a
// name:
//
//	obs, err := resilienceotel.NewObserver(resilienceotel.WithSpanEvents()) // the global meter provider
//	if err != nil {
//		log.Fatal(err)
//	}
//	observed := resilience.WithObserver(obs)
//	users := resilience.Compose(
//		resilience.Retry[User](observed, resilience.WithName("users-api")),
//		resilience.Guarded[User](resilience.NewBreaker(observed, resilience.WithName("users-api"))),
//	)
//	u, err := resilience.Do(context.Background(), users, fetchUser)
//	fmt.Println(u.Name, err)
//
// Metrics go to the global meter provider unless [WithMeterProvider] says
// otherwise, from the instrumentation scope [ScopeName] at [Version]. With
// [WithSpanEvents], span events go to the span active in the context of the
// call an event belongs to: a retry, a give-up, a refusal, a timeout, a
// breaker state change (on the call that caused it), a fallback or a hedge
// appears in the trace of the request it happened in.
//
// [Observer.RegisterRegistry] reads the guards of a resilience.Registry at
// each collection: a breaker's state, a bulkhead's slots, a limiter's
// tokens and the like, from registration on, before any call.
//
// There is no semantic convention for resilience yet. The names follow
// OpenTelemetry's style: metrics under resilience.*, units in UCUM
// (s, {call}, {retry}), attributes resilience.component (the kind of
// component, a resilience.Kind constant: "retry", "breaker",
// "rate-limiter", ...), resilience.name (from resilience.WithName, or the
// name a guard is registered under), resilience.outcome and resilience.reason. A retry's
// span event carries http.request.resend_count, as an HTTP client's resend
// does. The module's README lists every metric.
//
// # Cost
//
// A call that succeeds reports one event, and costs one measurement of
// resilience.call.duration (one per call through a composition, whatever
// its layers), unless the Observer was built [WithoutOutcomes]: then it
// costs nothing more than it would unobserved. Each event costs
// the measurements it makes and nothing of the Observer's own beyond a map
// lookup: the attribute sets of each (component, name) are built once, when
// the pair is first seen, and found again without a lock. Recording with
// the OpenTelemetry SDK costs a few hundred nanoseconds a measurement.
package resilienceotel

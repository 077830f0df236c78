package main

import (
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// contentionStrategy is one backoff strategy of the contention scenario.
// New builds the backoff one client uses, drawing its randomness from r.
type contentionStrategy struct {
	Name string
	New  func(r *rand.Rand) resilience.Backoff
}

// backoffParams are the contention scenario's backoff settings.
type backoffParams struct {
	Base time.Duration
	Cap  time.Duration
}

// contentionStrategies returns the six strategies of the contention
// scenario, each built from the library's backoffs. The exponential is AWS's
// model, base·2^n before retry n (so the first full-jitter window is
// [0, 2·base]); full and equal jitter wrap it capped, as in the AWS
// article: their waits only go down from it, so they never pass the cap.
func contentionStrategies(p backoffParams) []contentionStrategy {
	expo := resilience.Cap(resilience.Exponential(2*p.Base, 2), p.Cap)
	strategy := func(name string, b resilience.Backoff) contentionStrategy {
		return contentionStrategy{name, func(r *rand.Rand) resilience.Backoff { return resilience.UseRand(b, r) }}
	}
	return []contentionStrategy{
		strategy("none", resilience.Constant(0)),
		strategy("exponential", expo),
		strategy("full jitter", resilience.FullJitter(expo)),
		strategy("equal jitter", resilience.EqualJitter(expo)),
		strategy("decorrelated", resilience.DecorrelatedJitter(p.Base, p.Cap)),
		strategy("polly smooth", resilience.Cap(resilience.SmoothJitter(p.Base), p.Cap)),
	}
}

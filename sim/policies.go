package main

import (
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// policyParams are the outage scenario's policy settings.
type policyParams struct {
	Attempts      int
	FixedWait     time.Duration
	Base          time.Duration
	Cap           time.Duration
	BudgetRatio   float64
	BudgetFloor   float64
	BreakerFails  int
	BreakerCool   time.Duration
	BreakerProbes int
}

// outagePolicies returns the four policies of the outage scenario, each
// adding one thing to the one before it (after plain retries).
func outagePolicies(p policyParams) []outagePolicy {
	fixed := func(*rand.Rand) resilience.Backoff {
		return resilience.BackoffFunc(func(int, time.Duration) (time.Duration, bool) { return p.FixedWait, true })
	}
	jittered := func(r *rand.Rand) resilience.Backoff {
		return resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
			return time.Duration(r.Int64N(int64(standinExpo(p.Base, p.Cap, n)) + 1)), true
		})
	}
	newBudget := func(c clock.Clock) budget { return newStandinBudget(c, p.BudgetRatio, p.BudgetFloor) }
	newBreaker := func(c clock.Clock) resilience.Guard {
		return &standinBreaker{c: c, threshold: p.BreakerFails, coolDown: p.BreakerCool}
	}
	return []outagePolicy{
		{Name: "plain retries", Attempts: p.Attempts, NewBackoff: fixed, MaxWait: p.Cap},
		{Name: "expo+jitter", Attempts: p.Attempts, NewBackoff: jittered, MaxWait: p.Cap},
		{Name: "+budget", Attempts: p.Attempts, NewBackoff: jittered, NewBudget: newBudget, MaxWait: p.Cap},
		{Name: "+breaker", Attempts: p.Attempts, NewBackoff: jittered, NewBudget: newBudget, NewBreaker: newBreaker, MaxWait: p.Cap},
	}
}

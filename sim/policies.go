package main

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// policyParams are the outage scenario's policy settings.
type policyParams struct {
	Attempts       int
	FixedWait      time.Duration
	Base           time.Duration
	Cap            time.Duration
	BudgetRatio    float64
	BudgetFloor    int
	BudgetCapacity int
	BreakerFails   int
	BreakerCool    time.Duration
}

// outagePolicy is one client-side policy of the outage scenario. New builds
// the policy of one client (each client has its own backoff, budget and
// breaker, as separate processes would), reading and waiting on c, drawing
// jitter from r, and calling guard, when not nil, with the breaker it puts
// behind the retries.
type outagePolicy struct {
	Name string
	New  func(c clock.Clock, r *rand.Rand, guard func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}]
}

// outagePolicies returns the policies of the outage scenario: four that
// each add one thing to the one before it (after plain retries, with no
// budget or throttle), and the library's default Retry, with the retry
// quota it keeps by default and with gRPC's throttle in its place. They are
// the library's Retry, RetryBudget and Breaker, composed as a user would.
func outagePolicies(p policyParams) []outagePolicy {
	fixed := resilience.Constant(p.FixedWait)
	jittered := resilience.FullJitter(resilience.Cap(resilience.Exponential(p.Base, 2), p.Cap))
	retry := func(c clock.Clock, b resilience.Backoff, r *rand.Rand, more ...resilience.RetryOption) resilience.Policy[struct{}] {
		opts := append([]resilience.RetryOption{
			resilience.WithAttempts(p.Attempts),
			resilience.WithBackoff(resilience.UseRand(b, r)),
			resilience.WithMaxRetryAfter(p.Cap),
			resilience.WithClock(c),
		}, more...)
		return resilience.Retry[struct{}](opts...)
	}
	budget := func(c clock.Clock) resilience.RetryOption {
		return resilience.WithBudget(resilience.NewRetryBudget(p.BudgetRatio, p.BudgetFloor,
			resilience.WithBudgetCapacity(p.BudgetCapacity), resilience.WithClock(c)))
	}
	return []outagePolicy{
		{"plain retries", func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return retry(c, fixed, r, resilience.WithoutBudget())
		}},
		{"expo+jitter", func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return retry(c, jittered, r, resilience.WithoutBudget())
		}},
		{"+budget", func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return retry(c, jittered, r, budget(c))
		}},
		{"+breaker", func(c clock.Clock, r *rand.Rand, guard func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			var g resilience.Guard = resilience.NewBreaker(
				resilience.WithBreakerThreshold(p.BreakerFails),
				resilience.WithBreakerCoolDown(p.BreakerCool),
				resilience.WithClock(c))
			if guard != nil {
				g = guard(g)
			}
			return resilience.Compose(retry(c, jittered, r, budget(c)), resilience.Guarded[struct{}](g))
		}},
		{defaultPolicy, func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return defaultRetry(c, r)
		}},
		{throttlePolicy, func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return defaultRetry(c, r, resilience.WithBudget(resilience.NewRetryThrottle(10, 0.2)))
		}},
	}
}

// defaultPolicy names the library's Retry with no options of the
// simulation's flags; throttlePolicy names it with gRPC's throttle (10
// tokens, 0.2 a success) in place of its own retry quota, the default the
// quota replaced.
const (
	defaultPolicy  = "default Retry()"
	throttlePolicy = "Retry() + throttle"
)

// defaultRetry is resilience.Retry() as a program gets it, and its
// retry quota, on the virtual clock, with more options if given. Only the
// jitter's randomness is the run's, so that the run is reproducible: the
// backoff is the default one (full jitter over 100ms doubling, capped at
// 10s; see Retry's doc) with its draws from r.
func defaultRetry(c clock.Clock, r *rand.Rand, more ...resilience.RetryOption) resilience.Policy[struct{}] {
	b := resilience.FullJitter(resilience.Cap(resilience.Exponential(100*time.Millisecond, 2), 10*time.Second))
	opts := append([]resilience.RetryOption{resilience.WithClock(c), resilience.WithBackoff(resilience.UseRand(b, r))}, more...)
	return resilience.Retry[struct{}](opts...)
}

// countingGuard passes calls to a guard and counts the calls it refuses.
type countingGuard struct {
	g       resilience.Guard
	refused func()
}

func (c countingGuard) Enter(ctx context.Context) (func(error), error) {
	done, err := c.g.Enter(ctx)
	if err != nil {
		c.refused()
	}
	return done, err
}

package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// peerDefaults returns the retry policy every peer gives a user who sets
// nothing, each built from the library's pieces (none of the peers has a
// retry throttle, so each is built without one), beside this library's
// Retry() as a program gets it.
func peerDefaults() []outagePolicy {
	retry := func(attempts int, b func(r *rand.Rand) resilience.Backoff, more ...resilience.RetryOption) func(clock.Clock, *rand.Rand, func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
		return func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			opts := append([]resilience.RetryOption{resilience.WithAttempts(attempts), resilience.WithBackoff(b(r)),
				resilience.WithClock(c), resilience.WithoutBudget()}, more...)
			return resilience.Retry[struct{}](opts...)
		}
	}
	fixed := func(b resilience.Backoff) func(*rand.Rand) resilience.Backoff {
		return func(*rand.Rand) resilience.Backoff { return b }
	}
	return []outagePolicy{
		{defaultPolicy, func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return defaultRetry(c, r)
		}},
		// failsafe-go: 3 attempts, no delay.
		{"failsafe-go", retry(3, fixed(resilience.Constant(0)))},
		// cenkalti/backoff: 500ms ×1.5 ±50%, intervals up to 60s, for 15 min.
		{"cenkalti/backoff", retry(0, func(r *rand.Rand) resilience.Backoff {
			return resilience.UseRand(resilience.SymmetricJitter(resilience.Cap(resilience.Exponential(500*time.Millisecond, 1.5), time.Minute), 0.5), r)
		}, resilience.WithMaxElapsed(15*time.Minute))},
		// avast/retry-go: 10 attempts, 100ms doubling plus up to 100ms random.
		{"avast/retry-go", retry(10, func(r *rand.Rand) resilience.Backoff {
			expo := resilience.Exponential(100*time.Millisecond, 2)
			return resilience.BackoffFunc(func(n int, prev time.Duration) (time.Duration, bool) {
				d, _ := expo.Delay(n, prev)
				return d + time.Duration(r.Int64N(int64(100*time.Millisecond))), true
			})
		})},
		// hashicorp/go-retryablehttp: 5 attempts, waits 1, 2, 4, 8s.
		{"go-retryablehttp", retry(5, fixed(resilience.Schedule(time.Second, 2*time.Second, 4*time.Second, 8*time.Second)))},
		// Polly v8: 4 attempts, a constant 2s.
		{"Polly v8", retry(4, fixed(resilience.Constant(2*time.Second)))},
		// gRPC: no retry unless a service config asks.
		{"gRPC", retry(1, fixed(resilience.Constant(0)))},
		// gRPC with a retry policy (3 attempts, 100ms doubling to 1s, full
		// jitter) and throttling (10 tokens, 0.1 a success).
		{"gRPC + throttling", func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			b := resilience.FullJitter(resilience.Cap(resilience.Exponential(100*time.Millisecond, 2), time.Second))
			return resilience.Retry[struct{}](resilience.WithAttempts(3), resilience.WithBackoff(resilience.UseRand(b, r)),
				resilience.WithClock(c), resilience.WithBudget(resilience.NewRetryThrottle(10, 0.1, resilience.WithClock(c))))
		}},
	}
}

// defaultsResult is one policy's outcome in the three runs of the defaults
// scenario.
type defaultsResult struct {
	outage, transient1, transient10 outageResult
}

// runDefaults runs every default through the outage and, with no outage,
// through 1% and 10% transient failures.
func runDefaults(o *options) []defaultsResult {
	policies := peerDefaults()
	out := make([]defaultsResult, len(policies))
	cfg := o.outageConfig()
	calm := cfg
	calm.Outage = 0
	parallel(o.workers, 3*len(policies), func(k int) {
		i, run := k/3, k%3
		r := newRand(o.seed, seedDefaults, uint64(k))
		switch run {
		case 0:
			out[i].outage = runOutage(cfg, policies[i], r)
		case 1:
			c := calm
			c.Transient = 0.01
			out[i].transient1 = runOutage(c, policies[i], r)
		default:
			c := calm
			c.Transient = 0.10
			out[i].transient10 = runOutage(c, policies[i], r)
		}
	})
	return out
}

func failedShare(r outageResult) float64 {
	return 100 * float64(sum(r.Failed)) / float64(max(r.Requests, 1))
}

func writeDefaultsTable(w io.Writer, o *options, results []defaultsResult) error {
	cfg := o.outageConfig()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Defaults: each library's retry policy as a user gets it, in the outage above (%v of failing calls) and, with no outage, under transient failures; seed %d.\n\n",
		cfg.Outage, o.seed)
	fmt.Fprint(tw, "policy\tload in outage\tdrain after recovery\trequests failed\tmean latency\tp99 latency\tfailed at 1%\tload at 1%\tfailed at 10%\tload at 10%\t\n")
	for _, d := range results {
		r := d.outage
		drain := fmt.Sprintf("%.1f s", r.Drain.Seconds())
		if !r.Drained {
			drain = fmt.Sprintf("> %.1f s", (cfg.Duration - cfg.recovery()).Seconds())
		}
		mean, p99 := r.latency()
		fmt.Fprintf(tw, "%s\t%.2f×\t%s\t%.1f%%\t%v\t%v\t%.2f%%\t%.3f×\t%.2f%%\t%.3f×\t\n", r.Policy,
			r.outageLoad(cfg)/cfg.offered(), drain, failedShare(r), mean.Round(time.Millisecond), p99.Round(time.Millisecond),
			failedShare(d.transient1), float64(d.transient1.Calls)/float64(max(d.transient1.Requests, 1)),
			failedShare(d.transient10), float64(d.transient10.Calls)/float64(max(d.transient10.Requests, 1)))
	}
	fmt.Fprint(tw, "\nload in outage: calls reaching the failing server over the offered load. load at 1%/10%: calls per request.\n\n")
	return tw.Flush()
}

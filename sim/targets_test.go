package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// TestDefaultRetryTargets pins what the library's default Retry, with its
// retry quota, does to a fleet, for seeds 1–20 (1–2 under the race
// detector): the runs of the defaults scenario (`go run . -scenario
// defaults -seed N`), with the flags' defaults.
//
//   - Outage: while the server fails every call, the fleet sends it at most
//     1.1 times the offered load, and the server drains within 1 s of
//     recovery.
//   - Transient failures, as before the quota: with 1% of calls failing no
//     request fails but those whose three attempts all fail, which Retry()
//     without a budget fails as well (one in a million; one request of the
//     40,000 of seed 20); with 10%, under 0.5% do.
//   - Independent failures: at most 0.2% of the requests fail at 10%, 1.5%
//     at 20% and 5% at 30%, with no more calls per request than Retry()
//     without a budget makes in the same run.
//   - Brownout (30% of the calls refused for 30 s): at most 1.45 times the
//     offered load, and fewer requests failed than with gRPC's throttle in
//     place of the quota.
func TestDefaultRetryTargets(t *testing.T) {
	o := defaultOptions(t)
	policies := peerDefaults()
	quota, throttle := policyIndex(t, policies, defaultPolicy), policyIndex(t, policies, throttlePolicy)
	// Retry() without a budget, drawing what the default draws.
	unthrottled := append([]outagePolicy(nil), policies...)
	unthrottled[quota] = outagePolicy{"Retry() without a budget", func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
		return defaultRetry(c, r, resilience.WithoutBudget())
	}}
	failed := func(r outageResult) float64 { return failedShare(r) / 100 }
	seeds := uint64(20)
	if raceEnabled {
		seeds = 2 // the targets are checked without the race detector
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			var runs [defaultsRuns]outageResult
			for run := range runs {
				runs[run] = runDefault(o, seed, policies, quota, run)
			}

			cfg := o.defaultsConfig(runOutageFull)
			down := runs[runOutageFull]
			load := down.outageLoad(cfg) / cfg.offered()
			if load > 1.1 {
				t.Errorf("outage: load %.3f× the offered load, want at most 1.1×", load)
			}
			if !down.Drained || down.Drain > time.Second {
				t.Errorf("outage: drained %v after %v, want within 1s of recovery", down.Drained, down.Drain)
			}

			if n, free := sum(runs[runTransient1].Failed), sum(runDefault(o, seed, unthrottled, quota, runTransient1).Failed); n > free {
				t.Errorf("1%% transient failures: %d requests failed, want none but the %d Retry() without a budget fails", n, free)
			}
			for _, tc := range []struct {
				run       int
				maxFailed float64
			}{{runTransient10, 0.002}, {runTransient20, 0.015}, {runTransient30, 0.05}} {
				r := runs[tc.run]
				rate := o.defaultsConfig(tc.run).Transient
				if f := failed(r); f > tc.maxFailed {
					t.Errorf("%.0f%% independent failures: %.3f%% of the requests failed, want at most %.1f%%", 100*rate, 100*f, 100*tc.maxFailed)
				}
				if tc.run == runTransient10 {
					continue // the unthrottled load is the same, within chance
				}
				free := runDefault(o, seed, unthrottled, quota, tc.run)
				if got, want := callsPerRequest(r), callsPerRequest(free); got > want {
					t.Errorf("%.0f%% independent failures: %.4f calls per request, want at most %.4f, Retry() without a budget's", 100*rate, got, want)
				}
			}

			brown := o.defaultsConfig(runBrownout)
			b := runs[runBrownout]
			if l := b.outageLoad(brown) / brown.offered(); l > 1.45 {
				t.Errorf("brownout: load %.3f× the offered load, want at most 1.45×", l)
			}
			th := runDefault(o, seed, policies, throttle, runBrownout)
			if f, ft := failed(b), failed(th); f >= ft {
				t.Errorf("brownout: %.2f%% of the requests failed, want fewer than gRPC's throttle's %.2f%%", 100*f, 100*ft)
			}
			t.Logf("seed %d: outage load %.3f×, drain %v; failed at 1%%: %.3f%%, 10%%: %.3f%%, 20%%: %.3f%%, 30%%: %.3f%%; brownout: load %.3f×, failed %.2f%% (throttle %.2f%%)",
				seed, load, down.Drain, 100*failed(runs[runTransient1]), 100*failed(runs[runTransient10]),
				100*failed(runs[runTransient20]), 100*failed(runs[runTransient30]),
				b.outageLoad(brown)/brown.offered(), 100*failed(b), 100*failed(th))
		})
	}
}

func policyIndex(t *testing.T, policies []outagePolicy, name string) int {
	t.Helper()
	for i, p := range policies {
		if p.Name == name {
			return i
		}
	}
	t.Fatalf("no policy %q", name)
	return -1
}

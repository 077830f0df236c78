package main

import (
	"fmt"
	"math"
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

// TestAdaptiveTargets pins what the AdaptiveLimiter and the
// AdaptiveThrottler do in the load scenario (TestLoad), for seeds 1–20 (skipped
// under the race detector: .ci/run runs it without):
//
//   - at 2× and 3× the capacity, full and halved, a goodput of at least 90%
//     of the capacity;
//   - in every overloaded phase, after its first 10 s, a p99 latency of the
//     calls admitted of at most twice the unloaded p99;
//   - after every change of load or capacity, every second from 10 s on
//     with that p99 and, with the next, 90% of the goodput they could have
//     (a probe halves the limit for a fraction of a second, and may
//     straddle two);
//   - under a steady 1.5× overload, the limit after ten minutes within 10%
//     of the limit after one;
//   - at 2× overload with 45% or half of the calls critical (0.9 of the
//     capacity, or the whole of it), over four and a half minutes, under
//     1% of the critical calls refused or answered after their deadline
//     (a critical call may wait for a slot); the load shed must be the
//     sheddable calls' (priorityRun says why the run is that long);
//   - five clients, each with a throttle (K 1.15, a window of 500 ms, at
//     most 80% refused), against a service that accepts half of their load
//     for 30 s: at most 1.2 times what it accepts sent to it, and every
//     client sending what it is offered again within 5 s of the end.
func TestAdaptiveTargets(t *testing.T) {
	if raceEnabled {
		t.Skip("minutes under the race detector and coverage; .ci/run checks the targets without them")
	}
	seeds := uint64(20)
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			cfg := defaultLoad(seed)
			unloaded := unloadedOf(t, cfg)
			f := figures(cfg, runLoad(t, cfg, oursContender), unloaded)
			for k, p := range f.phases[1:] {
				ph := cfg.phases[k+1]
				if ph.load >= 2 && p.goodput < 0.9*p.capacity {
					t.Errorf("%s: goodput %.0f calls/s, want at least 90%% of %.0f", ph.name, p.goodput, p.capacity)
				}
				if ph.load*cfg.capacity(cfg.workers) > p.capacity && p.p99 > 2*unloaded {
					t.Errorf("%s: p99 %v, want at most twice the unloaded %v", ph.name, p.p99, unloaded)
				}
				if p.settled > settleAfter {
					t.Errorf("%s: settled after %v, want within %v", ph.name, p.settled, settleAfter)
				}
			}
			first, tenth := driftFigures(t, seed)
			if math.Abs(tenth-first) > 0.1*first {
				t.Errorf("1.5× for 10 min: limit %.0f after 1 min, %.0f after 10, want within 10%%", first, tenth)
			}
			crit45, _, _ := priorityFigures(t, seed, 0.45)
			if crit45 >= 0.01 {
				t.Errorf("2×, 45%% critical: %.2f%% of the critical calls refused or late, want under 1%%", 100*crit45)
			}
			crit50, _, low50 := priorityFigures(t, seed, 0.5)
			if crit50 >= 0.01 || low50 < 0.95 {
				t.Errorf("2×, 50%% critical: %.2f%% of the critical calls refused or late, %.1f%% of the sheddable refused; want under 1%% and at least 95%%", 100*crit50, 100*low50)
			}
			tc := tunedThrottle(seed)
			load, recovery := throttleFigures(tc, runThrottle(tc), time.Second)
			if load > 1.2 {
				t.Errorf("brownout: %.3f× what the service accepts sent to it, want at most 1.2×", load)
			}
			if recovery > 5*time.Second {
				t.Errorf("brownout: clients sending what they are offered %v after it, want within 5s", recovery)
			}
			t.Logf("seed %d: unloaded p99 %v; limit %.0f → %.0f over 10 min; critical refused or late %.2f%% (45%% critical), %.2f%% (50%%); throttle %.3f×, recovered in %v",
				seed, unloaded, first, tenth, 100*crit45, 100*crit50, load, recovery)
		})
	}
}

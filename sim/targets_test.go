package main

import (
	"fmt"
	"testing"
	"time"
)

// TestDefaultRetryTargets pins what the library's default Retry does to a
// fleet, in the outage scenario with the flags' defaults, for seeds 1–5
// (the same runs as `go run . -seed N`, with -outage 0 -transient R for the
// transient failures):
//
//   - while the server fails every call, the fleet sends it at most 1.1
//     times the offered load, and the server drains within 1 s of recovery;
//   - with no outage and 1% of calls failing now and then, no request
//     fails; with 10%, at most 0.5% of the requests fail.
func TestDefaultRetryTargets(t *testing.T) {
	o := defaultOptions(t)
	policies := outagePolicies(o.policyParams())
	idx := -1
	for i, p := range policies {
		if p.Name == defaultPolicy {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no policy %q", defaultPolicy)
	}
	pol := policies[idx]
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			run := func(outage time.Duration, transient float64) outageResult {
				cfg := o.outageConfig()
				cfg.Outage, cfg.Transient = outage, transient
				return runOutage(cfg, pol, newRand(seed, seedOutage, uint64(idx)))
			}
			cfg := o.outageConfig()
			down := run(cfg.Outage, 0)
			load := down.outageLoad(cfg) / cfg.offered()
			if load > 1.1 {
				t.Errorf("outage: load %.3f× the offered load, want at most 1.1×", load)
			}
			if !down.Drained || down.Drain > time.Second {
				t.Errorf("outage: drained %v after %v, want within 1s of recovery", down.Drained, down.Drain)
			}
			failed := func(r outageResult) float64 { return float64(sum(r.Failed)) / float64(r.Requests) }
			one, ten := run(0, 0.01), run(0, 0.1)
			if n := sum(one.Failed); n != 0 {
				t.Errorf("1%% transient failures: %d requests failed, want none", n)
			}
			if f := failed(ten); f > 0.005 {
				t.Errorf("10%% transient failures: %.3f%% of the requests failed, want at most 0.5%%", 100*f)
			}
			t.Logf("seed %d: outage load %.3f×, drain %v; failed at 1%%: %.3f%%, at 10%%: %.3f%% (%d of %d)",
				seed, load, down.Drain, 100*failed(one), 100*failed(ten), sum(ten.Failed), ten.Requests)
		})
	}
}

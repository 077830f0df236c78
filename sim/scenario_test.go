package main

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

var testBackoff = backoffParams{Base: 5 * time.Millisecond, Cap: 2 * time.Second}

func strategy(t *testing.T, name string) contentionStrategy {
	t.Helper()
	for _, s := range contentionStrategies(testBackoff) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no strategy %q", name)
	return contentionStrategy{}
}

func TestContentionExact(t *testing.T) {
	// With a fixed network delay of 10 ms every step is known: a read and a
	// write take 40 ms from the client's point of view.
	const ms = time.Millisecond
	tests := []struct {
		name      string
		clients   int
		strategy  string
		wantCalls int
		wantTime  time.Duration
	}{
		{"one client", 1, "none", 1, 40 * ms},
		{"two clients, no backoff", 2, "none", 3, 80 * ms},
		{"three clients, no backoff", 3, "none", 6, 120 * ms},
		// The loser waits base·2 = 10 ms before it reads again: AWS's model,
		// base·2^n before retry n.
		{"two clients, exponential", 2, "exponential", 3, 90 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := contentionConfig{Clients: tc.clients, NetMean: 10 * ms}
			got := runContention(cfg, strategy(t, tc.strategy), newRand(1))
			if got.Calls != tc.wantCalls || got.Time != tc.wantTime || !got.Finished {
				t.Errorf("runContention = %+v, want %d calls in %v, finished", got, tc.wantCalls, tc.wantTime)
			}
		})
	}
}

func TestContentionStrategies(t *testing.T) {
	cfg := contentionConfig{Clients: 40, NetMean: 10 * time.Millisecond, NetSD: 2 * time.Millisecond}
	for i, s := range contentionStrategies(testBackoff) {
		t.Run(s.Name, func(t *testing.T) {
			a := runContention(cfg, s, newRand(7, uint64(i)))
			b := runContention(cfg, s, newRand(7, uint64(i)))
			if a != b {
				t.Fatalf("same seed gave %+v then %+v", a, b)
			}
			if !a.Finished || a.GaveUp != 0 {
				t.Fatalf("runContention = %+v, want every client done", a)
			}
			// Each client lands exactly one write; at most N-1 fail per round.
			if a.Calls < cfg.Clients || a.Calls > cfg.Clients*(cfg.Clients+1)/2+cfg.Clients*cfg.Clients {
				t.Errorf("runContention calls = %d, want between %d and about N²", a.Calls, cfg.Clients)
			}
			if a.Reads != a.Calls {
				t.Errorf("runContention reads = %d, calls = %d, want one read per write", a.Reads, a.Calls)
			}
		})
	}
}

func TestContentionShape(t *testing.T) {
	// The AWS blog's findings, averaged over a few runs: un-jittered
	// exponential backoff is slowest, and every jittered strategy does less
	// work than none.
	o := defaultOptions(t)
	o.nMin, o.nMax, o.runs = 60, 60, 10
	tab := runContentionGrid(o, contentionStrategies(testBackoff))
	col := map[string]int{}
	for s, name := range tab.Strategies {
		col[name] = s
	}
	for _, name := range []string{"full jitter", "equal jitter", "decorrelated", "polly smooth"} {
		if tab.Calls[col[name]][0] >= tab.Calls[col["none"]][0] {
			t.Errorf("%s: %.0f calls, want fewer than none's %.0f", name, tab.Calls[col[name]][0], tab.Calls[col["none"]][0])
		}
		if tab.Time[col[name]][0] >= tab.Time[col["exponential"]][0] {
			t.Errorf("%s: %v, want sooner than exponential's %v", name, tab.Time[col[name]][0], tab.Time[col["exponential"]][0])
		}
	}
}

func TestContentionMaxCalls(t *testing.T) {
	cfg := contentionConfig{Clients: 50, NetMean: 10 * time.Millisecond, MaxCalls: 20}
	got := runContention(cfg, strategy(t, "none"), newRand(1))
	if got.Finished || got.Calls > 20+cfg.Clients {
		t.Errorf("runContention with MaxCalls 20 = %+v, want stopped early", got)
	}
}

func TestContentionBackoffStops(t *testing.T) {
	giveUp := contentionStrategy{"give up", func(*rand.Rand) resilience.Backoff {
		return resilience.BackoffFunc(func(int, time.Duration) (time.Duration, bool) { return 0, false })
	}}
	cfg := contentionConfig{Clients: 5, NetMean: 10 * time.Millisecond}
	got := runContention(cfg, giveUp, newRand(1))
	if got.Calls != 5 || got.GaveUp != 4 || !got.Finished {
		t.Errorf("runContention = %+v, want 5 calls, 4 clients gave up", got)
	}
}

func testOutageConfig() outageConfig {
	return outageConfig{
		Clients: 20, Rate: 10, Duration: 20 * time.Second,
		OutageStart: 4 * time.Second, Outage: 5 * time.Second,
		Capacity: 240, Queue: 200, Timeout: 100 * time.Millisecond,
		NetMean: 10 * time.Millisecond, NetSD: 2 * time.Millisecond,
		Bucket: 100 * time.Millisecond, Tolerance: 0.25,
	}
}

func testPolicies() map[string]outagePolicy {
	m := map[string]outagePolicy{}
	for _, p := range outagePolicies(policyParams{
		Attempts: 3, FixedWait: 100 * time.Millisecond, Base: 100 * time.Millisecond, Cap: 10 * time.Second,
		BudgetRatio: 0.1, BudgetFloor: 1, BudgetCapacity: 100, BreakerFails: 5, BreakerCool: 2 * time.Second,
	}) {
		m[p.Name] = p
	}
	return m
}

func TestOutageDeterministic(t *testing.T) {
	cfg := testOutageConfig()
	for name, p := range testPolicies() {
		t.Run(name, func(t *testing.T) {
			a := runOutage(cfg, p, newRand(3))
			b := runOutage(cfg, p, newRand(3))
			if !reflect.DeepEqual(a, b) {
				t.Errorf("same seed gave different results: peak %v/%v drain %v/%v", a.Peak, b.Peak, a.Drain, b.Drain)
			}
		})
	}
}

func TestOutagePolicies(t *testing.T) {
	healthy := testOutageConfig()
	healthy.Outage = 0
	roomy := testOutageConfig()
	roomy.Capacity, roomy.Timeout = 1000, time.Second
	tests := []struct {
		name             string
		cfg              outageConfig
		policy           string
		minOutageLoad    float64 // calls/s during the outage, as a multiple of the offered load
		maxOutageLoad    float64
		wantDrained      bool
		maxDrain         time.Duration
		maxCallsPerReqst float64
		wantRefused      bool // the clients' breakers refused calls
	}{
		{"no outage", healthy, "plain retries", 0, 0, true, 0, 1.01, false},
		{"plain retries triple the load", roomy, "plain retries", 2.8, 3.2, true, time.Second, 3, false},
		{"jitter does not lower it", roomy, "expo+jitter", 2.8, 3.2, true, time.Second, 3, false},
		{"a budget caps it", roomy, "+budget", 1, 1.3, true, time.Second, 1.2, false},
		{"a breaker sheds it", roomy, "+breaker", 0, 0.2, true, 2500 * time.Millisecond, 1, true},
		{"tight capacity: plain retries never drain", testOutageConfig(), "plain retries", 2.8, 3.2, false, 0, 3, false},
		{"tight capacity: a budget drains", testOutageConfig(), "+budget", 1, 1.3, true, time.Second, 1.2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runOutage(tc.cfg, testPolicies()[tc.policy], newRand(5))
			load := res.outageLoad(tc.cfg) / tc.cfg.offered()
			if tc.cfg.Outage > 0 && (load < tc.minOutageLoad || load > tc.maxOutageLoad) {
				t.Errorf("load during the outage = %.2f× offered, want in [%.2f, %.2f]", load, tc.minOutageLoad, tc.maxOutageLoad)
			}
			if res.Drained != tc.wantDrained || (tc.wantDrained && res.Drain > tc.maxDrain) {
				t.Errorf("drained %v after %v, want drained %v within %v", res.Drained, res.Drain, tc.wantDrained, tc.maxDrain)
			}
			if r := float64(res.Calls) / float64(res.Requests); r > tc.maxCallsPerReqst {
				t.Errorf("calls per request = %.2f, want at most %.2f", r, tc.maxCallsPerReqst)
			}
			if (res.Refused > 0) != tc.wantRefused {
				t.Errorf("breakers refused %d calls, want refusals %v", res.Refused, tc.wantRefused)
			}
			if res.Requests != 20*10*20 {
				t.Errorf("requests = %d, want %d", res.Requests, 20*10*20)
			}
		})
	}
}

func TestMeasure(t *testing.T) {
	// 10 clients at 10/s with 100 ms buckets offer 10 calls per bucket; the
	// outage covers buckets 2–4 and recovery is at 500 ms.
	cfg := outageConfig{Clients: 10, Rate: 10, Bucket: 100 * time.Millisecond, OutageStart: 200 * time.Millisecond, Outage: 300 * time.Millisecond, Tolerance: 0.1}
	tests := []struct {
		name        string
		load, fails []int
		wantPeak    float64
		wantDrain   time.Duration
		wantDrained bool
	}{
		{"calm", []int{10, 10, 10, 10, 10, 10, 10, 10, 10}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0}, 1, 0, true},
		{"spike then calm", []int{10, 10, 30, 30, 30, 25, 12, 10, 10}, []int{0, 0, 30, 30, 30, 2, 0, 0, 0}, 3, 200 * time.Millisecond, true},
		{"never calm", []int{10, 10, 30, 30, 30, 30, 30, 30, 30}, []int{0, 0, 30, 30, 30, 30, 30, 30, 30}, 3, 300 * time.Millisecond, false},
		{"too quiet counts as not drained", []int{10, 10, 0, 0, 0, 0, 5, 10, 10}, []int{0, 0, 10, 10, 10, 10, 0, 0, 0}, 1, 200 * time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := outageResult{Load: tc.load, Failures: tc.fails}
			res.measure(cfg)
			if res.Peak != tc.wantPeak || res.Drain != tc.wantDrain || res.Drained != tc.wantDrained {
				t.Errorf("measure = peak %v, drain %v (drained %v), want %v, %v (%v)",
					res.Peak, res.Drain, res.Drained, tc.wantPeak, tc.wantDrain, tc.wantDrained)
			}
		})
	}
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
)

// This file is the proof docs/chaos.md walks through: a composition of
// Timeout, Retry, Hedge and Breaker under load, with chaos injected
// innermost, in virtual time. Its figures are the guide's; the test pins
// them, so that the guide says what the code does.

var errUnavailable = errors.New("503 service unavailable")

// proofFigures is what one run of the proof measured.
type proofFigures struct {
	Requests, Failed int    // requests made, and those that failed
	FnCalls          int    // calls that reached the service
	Faults, Delays   int    // chaos injections
	Retries, Hedges  int    // retries and hedges started
	RetriesRefused   int    // retries the retry quota refused
	HedgesRefused    int    // hedges the hedge's budget refused
	Trips            int    // times the breaker opened
	Refused          int    // calls the open breaker refused
	Breaker          string // the breaker's changes of state, and when
	P50, P90, P99    time.Duration
	Max              time.Duration
}

func (f proofFigures) String() string {
	return fmt.Sprintf("requests %d, failed %d (%.1f%%), service calls %d, faults %d, delays %d, retries %d (%d refused), hedges %d (%d refused), breaker trips %d (%d calls refused: %s), p50 %v, p90 %v, p99 %v, max %v",
		f.Requests, f.Failed, 100*float64(f.Failed)/float64(f.Requests), f.FnCalls, f.Faults, f.Delays,
		f.Retries, f.RetriesRefused, f.Hedges, f.HedgesRefused, f.Trips, f.Refused, f.Breaker, f.P50, f.P90, f.P99, f.Max)
}

// proofCounter counts the events of every policy of the proof.
type proofCounter struct {
	mu    sync.Mutex
	fig   proofFigures
	start time.Time
}

func (c *proofCounter) Observe(_ context.Context, e resilience.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case e.Kind == resilience.EventChaos && e.Component == "chaos-fault":
		c.fig.Faults++
	case e.Kind == resilience.EventChaos && e.Component == "chaos-latency":
		c.fig.Delays++
	case e.Kind == resilience.EventRetry:
		c.fig.Retries++
	case e.Kind == resilience.EventHedge:
		c.fig.Hedges++
	case e.Kind == resilience.EventStateChange:
		if e.To == resilience.BreakerOpen {
			c.fig.Trips++
		}
		if c.fig.Breaker != "" {
			c.fig.Breaker += ", "
		}
		c.fig.Breaker += fmt.Sprintf("%v at %v", e.To, time.Since(c.start).Truncate(time.Millisecond))
	case e.Kind == resilience.EventRefused && e.Component == "breaker":
		c.fig.Refused++
	case e.Kind == resilience.EventRefused && e.Component == "quota":
		c.fig.RetriesRefused++
	case e.Kind == resilience.EventRefused && e.Component == "hedge":
		c.fig.HedgesRefused++
	}
}

// proofSetup is one scenario: which policies, which chaos.
type proofSetup struct {
	policies bool          // Timeout, Retry and Breaker around the service
	hedge    bool          // and a Hedge
	budget   float64       // the Hedge's budget, a share of calls; 0: its default (0.1)
	faults   float64       // the share of calls that fail
	delays   float64       // the share of calls delayed by 200ms
	outage   time.Duration // every call fails in [2s, 2s+outage)
}

const (
	proofRequests = 2500                 // one every 2ms: 500 a second for 5s
	proofSpacing  = 2 * time.Millisecond // between two requests
	proofService  = 20 * time.Millisecond
	proofLatency  = 200 * time.Millisecond
)

// runProof sends proofRequests requests through the scenario's
// composition and measures what happened. It must run in a synctest
// bubble.
//
// Every wait in it is a whole number of milliseconds, and request i
// starts i nanoseconds past a millisecond, so no two requests ever act in
// the same instant and the seeded chaos draws come in one order: the
// figures repeat exactly from run to run.
func runProof(su proofSetup) proofFigures {
	start := time.Now()
	count := &proofCounter{start: start}
	observe := resilience.WithObserver(count)
	outage := func(context.Context) bool {
		since := time.Since(start)
		return since >= 2*time.Second && since < 2*time.Second+su.outage
	}
	layers := []resilience.Policy[int]{}
	if su.policies {
		breaker := resilience.NewBreaker(observe,
			resilience.WithBreakerThreshold(0),                   // no rule of consecutive failures:
			resilience.WithBreakerFailureRate(0.5, 20, 50),       // half of the last 50 calls, at least 20
			resilience.WithBreakerCoolDown(500*time.Millisecond)) // then a probe after 0.5s
		layers = append(layers,
			resilience.Timeout[int](time.Second, observe),
			resilience.Retry[int](observe,
				resilience.WithAttempts(3),
				resilience.WithBackoff(resilience.Exponential(10*time.Millisecond, 2)),
				resilience.WithAbortOn(resilience.ErrBreakerOpen)))
		if su.hedge {
			opts := []resilience.HedgeOption{observe, resilience.WithHedgeDelay(100 * time.Millisecond)}
			if su.budget > 0 {
				opts = append(opts, resilience.WithHedgeBudget(resilience.NewRetryBudget(su.budget, 1)))
			}
			layers = append(layers, resilience.Hedge[int](opts...))
		}
		layers = append(layers, resilience.Guarded[int](breaker))
	}
	if su.outage > 0 {
		layers = append(layers, resilience.ChaosFault[int](errUnavailable, observe, resilience.WithChaosEnabled(outage)))
	}
	if su.faults > 0 {
		layers = append(layers, resilience.ChaosFault[int](errUnavailable, observe,
			resilience.WithChaosRate(su.faults), resilience.WithChaosRand(rand.New(rand.NewPCG(1, 2)))))
	}
	if su.delays > 0 {
		layers = append(layers, resilience.ChaosLatency[int](proofLatency, observe,
			resilience.WithChaosRate(su.delays), resilience.WithChaosRand(rand.New(rand.NewPCG(3, 4)))))
	}
	p := resilience.Compose(layers...)

	var mu sync.Mutex
	fnCalls := 0
	service := func(ctx context.Context) (int, error) {
		mu.Lock()
		fnCalls++
		mu.Unlock()
		t := time.NewTimer(proofService)
		defer t.Stop()
		select {
		case <-t.C:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	latencies := make([]time.Duration, proofRequests)
	failed := make([]bool, proofRequests)
	var wg sync.WaitGroup
	for i := range proofRequests {
		wg.Go(func() {
			t0 := time.Now()
			_, err := p.Execute(context.Background(), service)
			latencies[i], failed[i] = time.Since(t0), err != nil
		})
		time.Sleep(proofSpacing + time.Nanosecond)
	}
	wg.Wait()
	synctest.Wait() // and the hedges' timers, which report too

	count.mu.Lock()
	fig := count.fig
	count.mu.Unlock()
	fig.Requests, fig.FnCalls = proofRequests, fnCalls
	for _, f := range failed {
		if f {
			fig.Failed++
		}
	}
	slices.Sort(latencies)
	fig.P50 = latencies[len(latencies)*50/100]
	fig.P90 = latencies[len(latencies)*90/100]
	fig.P99 = latencies[len(latencies)*99/100]
	fig.Max = latencies[len(latencies)-1]
	return fig
}

// TestChaosProof runs the guide's scenarios and checks the figures it
// quotes.
func TestChaosProof(t *testing.T) {
	tests := []struct {
		name string
		su   proofSetup
		want proofFigures
	}{
		{"no chaos", proofSetup{policies: true, hedge: true},
			proofFigures{Requests: 2500, Failed: 0, FnCalls: 2500, Faults: 0, Delays: 0, Retries: 0, Hedges: 0, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 20 * time.Millisecond, P99: 20 * time.Millisecond, Max: 20 * time.Millisecond}},
		{"chaos, no policies", proofSetup{faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 497, FnCalls: 2003, Faults: 497, Delays: 378, Retries: 0, Hedges: 0, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 220 * time.Millisecond, P99: 220 * time.Millisecond, Max: 220 * time.Millisecond}},
		{"chaos, timeout+retry+breaker", proofSetup{policies: true, faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 18, FnCalls: 2482, Faults: 613, Delays: 462, Retries: 595, Hedges: 0, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 220 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
		{"chaos, timeout+retry+hedge+breaker", proofSetup{policies: true, hedge: true, faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 19, FnCalls: 2481, Faults: 677, Delays: 514, Retries: 597, Hedges: 314, HedgesRefused: 147, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 220 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
		{"chaos, hedge budget 25%", proofSetup{policies: true, hedge: true, budget: 0.25, faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 28, FnCalls: 2472, Faults: 715, Delays: 542, Retries: 602, RetriesRefused: 1, Hedges: 472, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 120 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
		{"chaos and a 1s outage, hedge budget 25%", proofSetup{policies: true, hedge: true, budget: 0.25, faults: 0.2, delays: 0.2, outage: time.Second},
			proofFigures{Requests: 2500, Failed: 795, FnCalls: 1705, Faults: 509, Delays: 370, Retries: 418, RetriesRefused: 13, Hedges: 316, HedgesRefused: 0, Trips: 3, Refused: 769,
				Breaker: "open at 2.022s, half-open at 2.522s, open at 2.522s, half-open at 3.022s, open at 3.022s, half-open at 3.522s, closed at 3.542s",
				P50:     20 * time.Millisecond, P90: 120 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got := runProof(tc.su)
				t.Logf("%v", got)
				if got != tc.want {
					t.Errorf("figures changed (docs/chaos.md quotes them):\n got %v\nwant %v", got, tc.want)
				}
			})
		})
	}
}

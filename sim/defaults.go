package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// peerDefaults returns the retry policy every peer gives a user who sets
// nothing, each built from the library's pieces (none of the peers has a
// retry throttle, so each is built without one), beside this library's
// Retry() as a program gets it and, last, with the throttle it kept by
// default before its retry quota.
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
		// This library's Retry() with gRPC's throttle (10 tokens, 0.2 a
		// success) in place of its retry quota: its default before the quota.
		{throttlePolicy, func(c clock.Clock, r *rand.Rand, _ func(resilience.Guard) resilience.Guard) resilience.Policy[struct{}] {
			return defaultRetry(c, r, resilience.WithBudget(resilience.NewRetryThrottle(10, 0.2)))
		}},
	}
}

// The runs of the defaults scenario, in the order of defaultsResult.runs.
const (
	runOutageFull  = iota // the outage scenario
	runTransient1         // no outage, 1% of calls failing at random
	runTransient10        // 10%
	runTransient20        // 20%, on a server with room for the retries
	runTransient30        // 30%, the same
	runBrownout           // the server refuses a share of the calls for a while
	defaultsRuns
)

// defaultsResult is one policy's outcome in the runs of the defaults
// scenario.
type defaultsResult struct {
	runs [defaultsRuns]outageResult
}

// defaultsConfig returns the configuration of one run of the defaults
// scenario: the outage scenario's, with no outage and failures at random,
// or with a brownout in place of the outage. At 20% and 30% the server has
// room for every retry (-room-capacity), so that the failures are the
// dependency's own and not the load's: the rows show what a policy does to
// a flaky dependency, not to an overloaded one.
func (o *options) defaultsConfig(run int) outageConfig {
	cfg := o.outageConfig()
	switch run {
	case runTransient1, runTransient10, runTransient20, runTransient30:
		cfg.Outage = 0
		cfg.Transient = [...]float64{runTransient1: 0.01, runTransient10: 0.10, runTransient20: 0.20, runTransient30: 0.30}[run]
		if run >= runTransient20 {
			cfg.Capacity = o.roomCapacity
		}
	case runBrownout:
		cfg.Outage, cfg.Refuse = o.brownout, o.brownoutRefuse
	}
	return cfg
}

// defaultsRand is the random source of policy i's run. The first three
// runs draw what they drew before the others were added.
func defaultsRand(seed uint64, i, run int) *rand.Rand {
	if run <= runTransient10 {
		return newRand(seed, seedDefaults, uint64(3*i+run))
	}
	return newRand(seed, seedDefaults, uint64(i), uint64(run))
}

// runDefault runs policy i of policies in one run of the defaults scenario.
func runDefault(o *options, seed uint64, policies []outagePolicy, i, run int) outageResult {
	return runOutage(o.defaultsConfig(run), policies[i], defaultsRand(seed, i, run))
}

// runDefaults runs every default through the outage, the failures at
// random and the brownout.
func runDefaults(o *options) []defaultsResult {
	policies := peerDefaults()
	out := make([]defaultsResult, len(policies))
	parallel(o.workers, defaultsRuns*len(policies), func(k int) {
		i, run := k/defaultsRuns, k%defaultsRuns
		out[i].runs[run] = runDefault(o, o.seed, policies, i, run)
	})
	return out
}

func failedShare(r outageResult) float64 {
	return 100 * float64(sum(r.Failed)) / float64(max(r.Requests, 1))
}

func callsPerRequest(r outageResult) float64 {
	return float64(r.Calls) / float64(max(r.Requests, 1))
}

func writeDefaultsTable(w io.Writer, o *options, results []defaultsResult) error {
	cfg := o.outageConfig()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Defaults: each library's retry policy as a user gets it, in the outage above (%v of failing calls) and, with no outage, under transient failures; seed %d.\n\n",
		cfg.Outage, o.seed)
	fmt.Fprint(tw, "policy\tload in outage\tdrain after recovery\trequests failed\tmean latency\tp99 latency\tfailed at 1%\tload at 1%\tfailed at 10%\tload at 10%\t\n")
	for _, d := range results {
		r := d.runs[runOutageFull]
		drain := fmt.Sprintf("%.1f s", r.Drain.Seconds())
		if !r.Drained {
			drain = fmt.Sprintf("> %.1f s", (cfg.Duration - cfg.recovery()).Seconds())
		}
		mean, p99 := r.latency()
		one, ten := d.runs[runTransient1], d.runs[runTransient10]
		fmt.Fprintf(tw, "%s\t%.2f×\t%s\t%.1f%%\t%v\t%v\t%.2f%%\t%.3f×\t%.2f%%\t%.3f×\t\n", r.Policy,
			r.outageLoad(cfg)/cfg.offered(), drain, failedShare(r), mean.Round(time.Millisecond), p99.Round(time.Millisecond),
			failedShare(one), callsPerRequest(one), failedShare(ten), callsPerRequest(ten))
	}
	fmt.Fprint(tw, "\nload in outage: calls reaching the failing server over the offered load. load at 1%/10%: calls per request.\n\n")

	brown := o.defaultsConfig(runBrownout)
	fmt.Fprintf(tw, "Defaults under failures at random on a server with room for the retries (capacity %g calls/s), and in a brownout (the server refuses %g%% of the calls from %v to %v); seed %d.\n\n",
		o.roomCapacity, 100*brown.Refuse, brown.OutageStart, brown.recovery(), o.seed)
	fmt.Fprint(tw, "policy\tfailed at 20%\tload at 20%\tfailed at 30%\tload at 30%\tload in brownout\tfailed in brownout\tp99 latency\t\n")
	for _, d := range results {
		b := d.runs[runBrownout]
		_, p99 := b.latency()
		twenty, thirty := d.runs[runTransient20], d.runs[runTransient30]
		fmt.Fprintf(tw, "%s\t%.2f%%\t%.3f×\t%.2f%%\t%.3f×\t%.2f×\t%.1f%%\t%v\t\n", b.Policy,
			failedShare(twenty), callsPerRequest(twenty), failedShare(thirty), callsPerRequest(thirty),
			b.outageLoad(brown)/brown.offered(), failedShare(b), p99.Round(time.Millisecond))
	}
	fmt.Fprint(tw, "\nload at 20%/30%: calls per request. load in brownout: calls reaching the server during the brownout over the offered load;\n")
	fmt.Fprint(tw, "failed in brownout: of every request of the run; p99 latency: of the run.\n\n")
	return tw.Flush()
}

// drawDefaults draws the defaults scenario: the requests failed and the
// calls per request against the share of calls failing at random, one line
// per policy of a few, and the brownout, one panel per policy of a few.
func drawDefaults(dir, format string, o *options, results []defaultsResult) error {
	drawn := []string{defaultPolicy, throttlePolicy, "failsafe-go", "gRPC + throttling", "gRPC"}
	var picked []defaultsResult
	for _, name := range drawn {
		for _, d := range results {
			if d.runs[runOutageFull].Policy == name {
				picked = append(picked, d)
			}
		}
	}
	room := fmt.Sprintf(" (20%%, 30%%: capacity %g calls/s)", o.roomCapacity)
	failed := newPlot("Failures at random: requests failed", "calls failing at random (%)"+room, "requests failed (%)")
	load := newPlot("Failures at random: load", "calls failing at random (%)"+room, "calls per request")
	rates := []int{runTransient1, runTransient10, runTransient20, runTransient30}
	for i, d := range picked {
		fxy, lxy := make(plotter.XYs, len(rates)), make(plotter.XYs, len(rates))
		for j, run := range rates {
			x := 100 * o.defaultsConfig(run).Transient
			fxy[j] = plotter.XY{X: x, Y: failedShare(d.runs[run])}
			lxy[j] = plotter.XY{X: x, Y: callsPerRequest(d.runs[run])}
		}
		name := d.runs[runOutageFull].Policy
		if err := addLinePoints(failed, name, i, fxy); err != nil {
			return err
		}
		if err := addLinePoints(load, name, i, lxy); err != nil {
			return err
		}
	}
	ticks := plot.ConstantTicks{{Value: 1, Label: "1"}, {Value: 10, Label: "10"}, {Value: 20, Label: "20"}, {Value: 30, Label: "30"}}
	failed.X.Tick.Marker, load.X.Tick.Marker = ticks, ticks
	failed.Y.Min, load.Y.Min = 0, 1
	failed.Y.Max *= 1.5 // room for the legend
	load.Y.Max += 0.25
	w, h := 28*vg.Centimeter, 11*vg.Centimeter
	c, wt := newCanvas(format, w, h)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter / 2, PadTop: vg.Centimeter / 4,
		PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 4}
	plots := [][]*plot.Plot{{failed, load}}
	canvases := plot.Align(plots, tiles, draw.New(c))
	failed.Draw(canvases[0][0])
	load.Draw(canvases[0][1])
	if err := writeFile(chartPath(dir, "defaults-failures", format), wt); err != nil {
		return err
	}

	var brownout []outageResult
	for _, d := range picked[:4] {
		brownout = append(brownout, d.runs[runBrownout])
	}
	return drawOutage(dir, "defaults-brownout", format, o.defaultsConfig(runBrownout), brownout)
}

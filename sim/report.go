package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// Scenario numbers mixed into each run's seed.
const (
	seedContention = 1
	seedOutage     = 2
	seedDefaults   = 3
)

// contentionTable holds the contention scenario's means: one row per client
// count, one column per strategy.
type contentionTable struct {
	Strategies []string
	N          []int
	Calls      [][]float64       // [strategy][n] mean writes per run
	Time       [][]time.Duration // [strategy][n] mean time to completion
	Unfinished [][]int           // [strategy][n] runs stopped by -max-calls
}

// parallel calls f(0) … f(n-1) on up to workers goroutines and returns when
// all have returned.
func parallel(workers, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

func (o *options) contentionConfig() contentionConfig {
	return contentionConfig{NetMean: o.netMean, NetSD: o.netSD, MaxCalls: o.maxCalls}
}

func (o *options) outageConfig() outageConfig {
	return outageConfig{
		Clients: o.clients, Rate: o.rate, Duration: o.duration,
		OutageStart: o.outageStart, Outage: o.outage, Refuse: o.refuse,
		Capacity: o.capacity, Queue: o.queue, Timeout: o.timeout, Transient: o.transient,
		NetMean: o.netMean, NetSD: o.netSD, Bucket: o.bucket, Tolerance: o.tolerance,
	}
}

func (o *options) policyParams() policyParams {
	return policyParams{
		Attempts: o.attempts, FixedWait: o.fixedWait, Base: o.retryBase, Cap: o.retryCap,
		BudgetRatio: o.budgetRatio, BudgetFloor: o.budgetFloor, BudgetCapacity: o.budgetCap,
		BreakerFails: o.breakerFails, BreakerCool: o.breakerCool,
	}
}

// runContentionGrid runs every strategy for every client count, runs times
// each, and averages.
func runContentionGrid(o *options, strategies []contentionStrategy) contentionTable {
	var t contentionTable
	for n := o.nMin; n <= o.nMax; n += o.nStep {
		t.N = append(t.N, n)
	}
	ns, ss := len(t.N), len(strategies)
	results := make([]contentionResult, ss*ns*o.runs)
	cfg := o.contentionConfig()
	parallel(o.workers, len(results), func(i int) {
		s, n, k := i/(ns*o.runs), i/o.runs%ns, i%o.runs
		c := cfg
		c.Clients = t.N[n]
		r := newRand(o.seed, seedContention, uint64(s), uint64(t.N[n]), uint64(k))
		results[i] = runContention(c, strategies[s], r)
	})
	for s, st := range strategies {
		t.Strategies = append(t.Strategies, st.Name)
		calls, times, unfinished := make([]float64, ns), make([]time.Duration, ns), make([]int, ns)
		for n := range ns {
			var sumCalls, sumTime float64
			for k := range o.runs {
				res := results[(s*ns+n)*o.runs+k]
				sumCalls += float64(res.Calls)
				sumTime += float64(res.Time)
				if !res.Finished {
					unfinished[n]++
				}
			}
			calls[n] = sumCalls / float64(o.runs)
			times[n] = time.Duration(sumTime / float64(o.runs))
		}
		t.Calls, t.Time, t.Unfinished = append(t.Calls, calls), append(t.Time, times), append(t.Unfinished, unfinished)
	}
	return t
}

// runOutages runs every policy once.
func runOutages(o *options, policies []outagePolicy) []outageResult {
	results := make([]outageResult, len(policies))
	cfg := o.outageConfig()
	parallel(o.workers, len(policies), func(i int) {
		results[i] = runOutage(cfg, policies[i], newRand(o.seed, seedOutage, uint64(i)))
	})
	return results
}

// simulate runs the chosen scenarios, prints their tables to w and draws
// their charts.
func simulate(o *options, w io.Writer) error {
	if o.charts != "" {
		if err := os.MkdirAll(o.charts, 0o755); err != nil {
			return err
		}
	}
	for _, sc := range []struct {
		name     string
		simulate func(*options, io.Writer) error
	}{
		{"contention", simulateContention},
		{"outage", simulateOutage},
		{"defaults", simulateDefaults},
	} {
		if o.scenario != "all" && o.scenario != sc.name {
			continue
		}
		if err := sc.simulate(o, w); err != nil {
			return err
		}
	}
	return nil
}

// simulateContention runs the contention scenario, prints its tables and
// draws its charts.
func simulateContention(o *options, w io.Writer) error {
	t := runContentionGrid(o, contentionStrategies(backoffParams{Base: o.base, Cap: o.cap}))
	if err := writeContentionTables(w, o, t); err != nil || o.charts == "" {
		return err
	}
	return drawContention(o.charts, o.format, t)
}

// simulateOutage runs the outage scenario, prints its table and draws its
// chart.
func simulateOutage(o *options, w io.Writer) error {
	cfg := o.outageConfig()
	results := runOutages(o, outagePolicies(o.policyParams()))
	if err := writeOutageTable(w, o, cfg, results); err != nil || o.charts == "" {
		return err
	}
	return drawOutage(o.charts, "outage-load", o.format, cfg, results)
}

// simulateDefaults runs the defaults scenario, prints its tables and draws
// its charts.
func simulateDefaults(o *options, w io.Writer) error {
	results := runDefaults(o)
	if err := writeDefaultsTable(w, o, results); err != nil || o.charts == "" {
		return err
	}
	return drawDefaults(o.charts, o.format, o, results)
}

func writeContentionTables(w io.Writer, o *options, t contentionTable) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := func(title string) {
		fmt.Fprintf(tw, "%s\n", title)
		fmt.Fprintf(tw, "N\t%s\t\n", strings.Join(t.Strategies, "\t"))
	}
	fmt.Fprintf(tw, "Contention: N clients, one optimistic write each; network %v ± %v; backoff base %v, cap %v; mean of %d runs, seed %d.\n\n",
		o.netMean, o.netSD, o.base, o.cap, o.runs, o.seed)
	header("Calls (writes) until every client succeeded")
	for n, size := range t.N {
		fmt.Fprintf(tw, "%d", size)
		for s := range t.Strategies {
			fmt.Fprintf(tw, "\t%.0f", t.Calls[s][n])
		}
		fmt.Fprint(tw, "\t\n")
	}
	fmt.Fprint(tw, "\n")
	header("Time to completion (ms)")
	for n, size := range t.N {
		fmt.Fprintf(tw, "%d", size)
		for s := range t.Strategies {
			fmt.Fprintf(tw, "\t%.0f", t.Time[s][n].Seconds()*1000)
		}
		fmt.Fprint(tw, "\t\n")
	}
	unfinished := 0
	for s := range t.Unfinished {
		for _, u := range t.Unfinished[s] {
			unfinished += u
		}
	}
	if unfinished > 0 {
		fmt.Fprintf(tw, "\nWarning: %d runs hit -max-calls before every client succeeded; their figures are cut short.\n", unfinished)
	}
	fmt.Fprint(tw, "\n")
	return tw.Flush()
}

func writeOutageTable(w io.Writer, o *options, cfg outageConfig, results []outageResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fails := "fails every call"
	if cfg.Refuse > 0 && cfg.Refuse < 1 {
		fails = fmt.Sprintf("refuses %g%% of the calls", 100*cfg.Refuse)
	}
	fmt.Fprintf(tw, "Outage: %d clients × %g req/s = %g req/s offered; server capacity %g calls/s, queue %d; %s from %v to %v; attempt timeout %v; %d attempts; seed %d.\n",
		cfg.Clients, cfg.Rate, cfg.offered(), cfg.Capacity, cfg.Queue, fails, cfg.OutageStart, cfg.recovery(), cfg.Timeout, o.attempts, o.seed)
	if cfg.Transient > 0 {
		fmt.Fprintf(tw, "Transient failures: %g%% of the calls the server serves fail anyway.\n", 100*cfg.Transient)
	}
	fmt.Fprint(tw, "\n")
	fmt.Fprint(tw, "policy\tpeak load\tcalls/request\tcalls/s in outage\tdrain after recovery\trequests failed\tmean latency\tp99 latency\t\n")
	for _, r := range results {
		drain := fmt.Sprintf("%.1f s", r.Drain.Seconds())
		if !r.Drained {
			drain = fmt.Sprintf("> %.1f s", (cfg.Duration - cfg.recovery()).Seconds())
		}
		mean, p99 := r.latency()
		fmt.Fprintf(tw, "%s\t%.2f×\t%.2f\t%.0f\t%s\t%.1f%%\t%v\t%v\t\n",
			r.Policy, r.Peak, float64(r.Calls)/float64(max(r.Requests, 1)),
			r.outageLoad(cfg), drain, 100*float64(sum(r.Failed))/float64(max(r.Requests, 1)),
			mean.Round(time.Millisecond), p99.Round(time.Millisecond))
	}
	fmt.Fprint(tw, "\npeak load: the busiest bucket's calls over the offered load. drain: from recovery until the load stays\n")
	fmt.Fprintf(tw, "within %.0f%% of the offered load with no failed attempt (\">\": never within the run).\n", 100*cfg.Tolerance)
	if cfg.Outage > 0 && (cfg.Refuse <= 0 || cfg.Refuse >= 1) {
		fmt.Fprintf(tw, "requests failed: the outage is %v of the %v run, so about %.0f%% of requests arrive while every call fails;\n",
			cfg.Outage, cfg.Duration, 100*cfg.Outage.Seconds()/cfg.Duration.Seconds())
		fmt.Fprint(tw, "they fail unless a retry of theirs lands after recovery, whatever the policy: the floor under that column.\n")
	}
	fmt.Fprint(tw, "\n")
	return tw.Flush()
}

// latency returns the mean and the 99th percentile of the requests'
// latencies.
func (r *outageResult) latency() (mean, p99 time.Duration) {
	if len(r.Latencies) == 0 {
		return 0, 0
	}
	sorted := slices.Clone(r.Latencies)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	return total / time.Duration(len(sorted)), sorted[len(sorted)*99/100]
}

// outageLoad is the mean server load, in calls per second, while the server
// was failing.
func (r *outageResult) outageLoad(cfg outageConfig) float64 {
	from, to := int(cfg.OutageStart/cfg.Bucket), int(cfg.recovery()/cfg.Bucket)
	if to <= from {
		return 0
	}
	return float64(sum(r.Load[from:to])) / (float64(to-from) * cfg.Bucket.Seconds())
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// chartPath is where a chart is written.
func chartPath(dir, name, format string) string { return filepath.Join(dir, name+"."+format) }

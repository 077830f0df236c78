package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The tail scenario runs in a testing/synctest bubble, where the library's
// real Hedge, with its goroutines and timers, runs on fake time: a bubble
// is only to be had in a test, so the scenario is one.
//
//	go test -run TestTail -v                    # the table
//	go test -run TestTail -args -tail charts    # and charts/tail.png, charts/tail.txt
var tailDir = flag.String("tail", "", "write the tail scenario's table and chart to this folder")

// tailConfig is the tail scenario: requests one after another to a server
// whose latency is heavy-tailed, as in The Tail at Scale: most answers
// quick, a few stalled for a second or two (a garbage collection, a
// compaction, a queue behind a slow disk).
type tailConfig struct {
	requests int
	seed     uint64
	median   time.Duration // of a quick answer, log-normal
	sigma    float64
	stallP   float64       // the chance that an attempt stalls
	stallMin time.Duration // a stall lasts uniformly in [stallMin, stallMax)
	stallMax time.Duration
}

var defaultTail = tailConfig{requests: 20000, seed: 1, median: 10 * time.Millisecond, sigma: 0.5,
	stallP: 0.015, stallMin: time.Second, stallMax: 2 * time.Second}

// latency is the latency of attempt a of request i: drawn from a source
// seeded by (seed, i, a), so that it does not depend on the order in which
// goroutines happen to run.
func (c tailConfig) latency(i, a int) time.Duration {
	r := rand.New(rand.NewPCG(c.seed, uint64(i)<<8|uint64(a)))
	if r.Float64() < c.stallP {
		return c.stallMin + time.Duration(r.Int64N(int64(c.stallMax-c.stallMin)))
	}
	return time.Duration(float64(c.median) * math.Exp(c.sigma*r.NormFloat64()))
}

type tailPolicy struct {
	name string
	make func() resilience.Policy[int] // made inside the bubble
}

var tailPolicies = []tailPolicy{
	{"no hedging", func() resilience.Policy[int] { return nil }},
	{"hedge after 50ms", func() resilience.Policy[int] {
		return resilience.Hedge[int](resilience.WithHedgeDelay(50 * time.Millisecond))
	}},
	{"hedge after p95", func() resilience.Policy[int] { return resilience.Hedge[int]() }},
}

type tailResult struct {
	name      string
	latencies []time.Duration // sorted
	attempts  int
}

func (r tailResult) quantile(q float64) time.Duration {
	return r.latencies[min(int(q*float64(len(r.latencies))), len(r.latencies)-1)]
}

// runTail sends c.requests requests, one after another, through p, in a
// bubble of its own.
func runTail(t *testing.T, c tailConfig, p tailPolicy) tailResult {
	res := tailResult{name: p.name}
	synctest.Test(t, func(t *testing.T) {
		policy := p.make()
		for i := range c.requests {
			var attempts atomic.Int32 // attempts of a hedged request run at once
			start := time.Now()
			_, err := resilience.Do(context.Background(), policy, func(ctx context.Context) (int, error) {
				attempt := int(attempts.Add(1))
				select {
				case <-time.After(c.latency(i, attempt)):
					return i, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			})
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			res.latencies = append(res.latencies, time.Since(start))
			synctest.Wait() // the losers have returned: their attempts are counted
			res.attempts += int(attempts.Load())
		}
	})
	slices.Sort(res.latencies)
	return res
}

func writeTailTable(w io.Writer, c tailConfig, results []tailResult) {
	fmt.Fprintf(w, "Tail: %d requests one after another; an attempt takes log-normal(median %v, σ %.1f), or stalls %v–%v with probability %.1f%%; seed %d\n",
		c.requests, c.median, c.sigma, c.stallMin, c.stallMax, c.stallP*100, c.seed)
	fmt.Fprintln(w, "| policy | p50 | p99 | p99.9 | extra load |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	for _, r := range results {
		extra := float64(r.attempts)/float64(c.requests) - 1
		fmt.Fprintf(w, "| %s | %v | %v | %v | %+.1f%% |\n", r.name,
			r.quantile(0.5).Round(100*time.Microsecond), r.quantile(0.99).Round(time.Millisecond),
			r.quantile(0.999).Round(time.Millisecond), extra*100)
	}
}

// drawTail draws each policy's latency distribution: the share of
// requests slower than x, on log scales, where the tail shows.
func drawTail(path string, results []tailResult) error {
	p := newPlot("Tail: share of requests slower than a latency", "latency (ms, log scale)", "share of requests slower (log scale)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	for i, r := range results {
		var xy plotter.XYs
		n := float64(len(r.latencies))
		for k := 0; k < len(r.latencies); k += max(1, len(r.latencies)/2000) {
			slower := (n - float64(k)) / n
			xy = append(xy, plotter.XY{X: max(float64(r.latencies[k])/1e6, 0.1), Y: slower})
		}
		if err := addLine(p, r.name, i, xy); err != nil {
			return err
		}
	}
	p.Legend.Top = true
	return save(p, path, 8*vg.Inch, 5*vg.Inch)
}

// TestTail runs the tail scenario and checks the shape of The Tail at
// Scale's result: hedging after a high percentile cuts the 99.9th
// percentile by an order of magnitude for a few percent more load.
func TestTail(t *testing.T) {
	c := defaultTail
	if testing.Short() {
		c.requests = 5000
	}
	var results []tailResult
	for _, p := range tailPolicies {
		results = append(results, runTail(t, c, p))
	}
	var table strings.Builder
	writeTailTable(&table, c, results)
	t.Log("\n" + table.String())

	none, fixed, adaptive := results[0], results[1], results[2]
	for _, hedged := range []tailResult{fixed, adaptive} {
		if got, base := hedged.quantile(0.999), none.quantile(0.999); got*10 > base {
			t.Errorf("%s: p99.9 %v, want under a tenth of %v without hedging", hedged.name, got, base)
		}
		if extra := float64(hedged.attempts)/float64(c.requests) - 1; extra > 0.10 {
			t.Errorf("%s: extra load %.1f%%, want at most 10%%", hedged.name, extra*100)
		}
		if got, base := hedged.quantile(0.5), none.quantile(0.5); got > base+base/10 {
			t.Errorf("%s: p50 %v, want about %v", hedged.name, got, base)
		}
	}
	if *tailDir != "" {
		if err := os.WriteFile(filepath.Join(*tailDir, "tail.txt"), []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := drawTail(filepath.Join(*tailDir, "tail.png"), results); err != nil {
			t.Fatal(err)
		}
	}
}

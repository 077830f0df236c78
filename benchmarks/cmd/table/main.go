// Command table reads the output of go test -bench (several rounds) and
// prints a markdown table: the median ns/op, B/op and allocs/op of each
// library in each row, the spread of its ns/op over the rounds, and
// resilience's speed-up over the best peer; with -targets, whether the
// project's targets for that row are met beyond the spread (see
// benchmarks/README.md).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// sample is one benchmark line.
type sample struct{ ns, bytes, allocs float64 }

// result is one library in one row: the medians of its samples, and the
// ends of its ns/op and allocs/op over the samples (its spread).
type result struct {
	lib               string
	ns, bytes, allocs float64
	nsLo, nsHi        float64
	allocsHi          float64
	n                 int // samples
}

// spread is the width of the result's ns/op over its samples, as a
// fraction of the median: (max − min) / median.
func (r result) spread() float64 {
	if r.ns == 0 {
		return 0
	}
	return (r.nsHi - r.nsLo) / r.ns
}

// row is one benchmark with its libraries, in the order first seen.
type row struct {
	name    string
	results []result
}

var line = regexp.MustCompile(`^Benchmark([^/\s]+)/(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

// parse groups the benchmark lines of r into rows.
func parse(r io.Reader) ([]row, error) {
	samples := map[string]map[string][]sample{}
	var rowOrder []string
	libOrder := map[string][]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		rowName, lib := m[1], m[2]
		var s sample
		s.ns, _ = strconv.ParseFloat(m[3], 64)
		s.bytes, _ = strconv.ParseFloat(m[4], 64)
		s.allocs, _ = strconv.ParseFloat(m[5], 64)
		if samples[rowName] == nil {
			samples[rowName] = map[string][]sample{}
			rowOrder = append(rowOrder, rowName)
		}
		if samples[rowName][lib] == nil {
			libOrder[rowName] = append(libOrder[rowName], lib)
		}
		samples[rowName][lib] = append(samples[rowName][lib], s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(rowOrder, func(a, b string) int { return rank(a) - rank(b) })
	var rows []row
	for _, name := range rowOrder {
		rw := row{name: name}
		for _, lib := range libOrder[name] {
			rw.results = append(rw.results, summarize(lib, samples[name][lib]))
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// summarize is the result of one library's samples in a row.
func summarize(lib string, ss []sample) result {
	ns := values(ss, func(s sample) float64 { return s.ns })
	allocs := values(ss, func(s sample) float64 { return s.allocs })
	return result{
		lib:      lib,
		ns:       median(ns),
		bytes:    median(values(ss, func(s sample) float64 { return s.bytes })),
		allocs:   median(allocs),
		nsLo:     ns[0],
		nsHi:     ns[len(ns)-1],
		allocsHi: allocs[len(allocs)-1],
		n:        len(ss),
	}
}

// values returns f of each sample, sorted.
func values(ss []sample, f func(sample) float64) []float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v
}

// order is the order rows are printed in, whatever order they ran in;
// rows it does not name come after, as they came.
var order = []string{"Bare", "RetrySuccess", "RetrySuccessParallel", "RetryFailFailSucceed", "BreakerSuccess", "BreakerSuccessParallel",
	"BreakerOpenRefusal", "Bulkhead", "Timeout", "TimeoutChild", "Composed", "ComposedParallel", "ComposedChild",
	"ComposedChildParallel", "HedgeFast", "FallbackSuccess", "BatchPerItem", "ObservedRetrySuccess", "ObservedRetryFailFailSucceed", "ObserveEvent",
	"RateLimitAllow", "RateLimitAllowParallel", "RateLimitGuarded", "RateLimitKeyed",
	"AdaptiveLimiter", "AdaptiveLimiterParallel", "AdaptiveThrottler", "AdaptiveThrottlerParallel",
	"RedisRateLimit", "RedisRateLimitParallel", "RedisRateLimitDefaultOptions", "RedisRateLimitDefaultOptionsParallel", "GRPCUnary", "HTTPSuccess", "HTTPSuccessParallel"}

func rank(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// median is the median of v, sorted.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ours reports whether a library column is this project's.
func ours(lib string) bool { return strings.HasPrefix(lib, "resilience") }

// baselines are columns that are neither ours nor a peer library: the
// floors and yardsticks the targets compare ours with.
var baselines = map[string]bool{"direct": true, "channel": true, "context.WithTimeout": true, "context.WithTimeout+goroutine": true, "net-http": true,
	"clock-read": true, "clock+CAS": true, "handoff": true, "timeout-cooperative": true,
	"context.WithTimeoutCause": true, "context.WithTimeoutCause+handoff": true, "policy-floor": true, "policy-refusal-floor": true, "cancellable-floor": true}

// count formats a whole count, such as allocations or bytes.
func count(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func format(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// formatSpread formats a result's spread as a percentage of its median,
// or "–" for a single sample.
func formatSpread(r result) string {
	if r.n < 2 {
		return "–"
	}
	p := 100 * r.spread()
	if p < 10 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// bestPeer returns the fastest peer library's result in rw, or nil.
func bestPeer(rw row) *result {
	var best *result
	for i, r := range rw.results {
		if ours(r.lib) || baselines[r.lib] {
			continue
		}
		if best == nil || r.ns < best.ns {
			best = &rw.results[i]
		}
	}
	return best
}

// summaryCells returns the summary table's cells for our column r of rw:
// its name, ns, allocs, and the best peer's name, ns and our speed-up.
func summaryCells(rw row, r result, best *result) []string {
	name := rw.name
	if r.lib != "resilience" {
		name += " (" + strings.TrimPrefix(r.lib, "resilience-") + ")"
	}
	peer, peerNs, speed := "–", "–", "–"
	if best != nil {
		peer, peerNs = best.lib, format(best.ns)
		speed = format(best.ns/r.ns) + "×"
	}
	return []string{name, format(r.ns), count(r.allocs), peer, peerNs, speed}
}

// write prints the summary table and the full one; withTargets adds to
// the summary the project's targets for each row, met, within noise or
// missed, and a count of each.
func write(w io.Writer, rows []row, withTargets bool) {
	if withTargets {
		fmt.Fprintln(w, "| row | resilience ns/op | allocs | best peer | peer ns/op | speed-up | targets |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: | --- |")
	} else {
		fmt.Fprintln(w, "| row | resilience ns/op | allocs | best peer | peer ns/op | speed-up |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: |")
	}
	var tally [missed + 1]int
	for _, rw := range rows {
		best := bestPeer(rw)
		for _, r := range rw.results {
			if !ours(r.lib) {
				continue
			}
			cells := summaryCells(rw, r, best)
			if !withTargets {
				fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
				continue
			}
			var vs []string
			for _, v := range verdicts(rw, r.lib) {
				tally[v.state]++
				vs = append(vs, v.String())
			}
			fmt.Fprintf(w, "| %s | %s |\n", strings.Join(cells, " | "), strings.Join(vs, "; "))
		}
	}
	if withTargets {
		fmt.Fprintf(w, "\nTargets: %d met, %d within noise, %d missed.\n", tally[met], tally[withinNoise], tally[missed])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| row | library | ns/op | spread | B/op | allocs/op |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: |")
	for _, rw := range rows {
		for _, r := range rw.results {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", rw.name, r.lib, format(r.ns), formatSpread(r), count(r.bytes), count(r.allocs))
		}
	}
}

func main() {
	withTargets := flag.Bool("targets", false, "add the project's targets, met, within noise or missed, to the summary table")
	flag.Parse()
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "table: no benchmark lines on standard input")
		os.Exit(1)
	}
	write(os.Stdout, rows, *withTargets)
}

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
	"context.WithTimeoutCause": true, "context.WithTimeoutCause+handoff": true, "policy-floor": true, "policy-refusal-floor": true}

// target is what the project promised for one of our columns in a row: at
// most maxAllocs allocations, and an ns/op within every bound.
type target struct {
	lib       string  // which of our columns; "" is "resilience"
	maxAllocs float64 // -1: none
	bounds    []bound
	text      string
}

// bound is the most a column may cost: col's ns × times ÷ speedup + plus,
// or, with or set, or's ns if that is larger.
type bound struct {
	col      string  // a column of the row; "": plus alone
	times    float64 // 0 is 1
	speedup  float64 // 0 is 1
	plus     float64 // ns
	or       string  // a column whose ns is allowed too
	ahead    bool    // strictly less than the bound: ahead of col
	optional bool    // a row without col is not judged by this bound
}

func atMost(ns float64) bound                 { return bound{plus: ns} }
func timesOf(col string, k float64) bound     { return bound{col: col, times: k} }
func plusOf(col string, ns float64) bound     { return bound{col: col, plus: ns} }
func speedupOver(col string, k float64) bound { return bound{col: col, speedup: k} }
func aheadOf(col string) bound                { return bound{col: col, ahead: true} }

// floorOrPeer is "at most the peer's cost or the floor's + plus, whichever
// is larger".
func floorOrPeer(floor string, plus float64, peer string) bound {
	return bound{col: floor, plus: plus, or: peer}
}

var (
	retryOrBreaker = []target{{maxAllocs: 0, bounds: []bound{floorOrPeer("policy-floor", 3, "go-resiliency")},
		text: "≤ max(go-resiliency, policy-floor + 3 ns), 0 allocs"}}
	retryOrBreakerParallel = []target{{maxAllocs: 0, bounds: []bound{floorOrPeer("policy-floor", 1.5, "go-resiliency")},
		text: "≤ max(go-resiliency, policy-floor + 1.5 ns), 0 allocs"}}
	timeouts = []target{
		{maxAllocs: -1, bounds: []bound{timesOf("context.WithTimeoutCause+handoff", 1.15), {col: "go-resiliency", ahead: true, optional: true}},
			text: "default ≤ 1.15× context.WithTimeoutCause+handoff, ahead of go-resiliency"},
		{maxAllocs: -1, lib: "resilience-cooperative", bounds: []bound{timesOf("context.WithTimeoutCause", 1.15), aheadOf("failsafe-go")},
			text: "cooperative ≤ 1.15× context.WithTimeoutCause, ahead of failsafe-go"},
	}
	redisTargets = []target{{maxAllocs: 21, bounds: []bound{timesOf("redis_rate", 1)}, text: "≤ redis_rate's latency, fewer allocs"}}
)

// composed is the targets of a composition row: the default mode ahead of
// failsafe-go, the cooperative one at least k× faster.
func composed(k float64) []target {
	return []target{
		{maxAllocs: -1, bounds: []bound{aheadOf("failsafe-go")}, text: "default ahead of failsafe-go"},
		{maxAllocs: -1, lib: "resilience-cooperative", bounds: []bound{speedupOver("failsafe-go", k)},
			text: "cooperative ≥ " + strconv.FormatFloat(k, 'g', -1, 64) + "× failsafe-go"},
	}
}

var targets = map[string][]target{
	"RetrySuccess":           retryOrBreaker,
	"RetrySuccessParallel":   retryOrBreakerParallel,
	"RetryFailFailSucceed":   {{maxAllocs: -1, bounds: []bound{atMost(150), speedupOver("failsafe-go", 10)}, text: "≤ 150 ns, ≥ 10× failsafe-go"}},
	"BreakerSuccess":         retryOrBreaker,
	"BreakerSuccessParallel": retryOrBreakerParallel,
	"BreakerOpenRefusal": {{maxAllocs: 0, bounds: []bound{plusOf("policy-refusal-floor", 1.5)},
		text: "≤ policy-refusal-floor + 1.5 ns, 0 allocs"}},
	"Bulkhead":                             {{maxAllocs: 0, bounds: []bound{atMost(25), speedupOver("failsafe-go", 10)}, text: "≤ 25 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"Timeout":                              timeouts,
	"TimeoutChild":                         timeouts,
	"Composed":                             composed(2),
	"ComposedParallel":                     composed(2),
	"ComposedChild":                        composed(1.7),
	"ComposedChildParallel":                composed(1.7),
	"BatchPerItem":                         {{maxAllocs: 2, bounds: []bound{atMost(300)}, text: "≤ 300 ns, ≤ 2 allocs per item"}},
	"RateLimitAllow":                       {{maxAllocs: 0, bounds: []bound{atMost(25)}, text: "≤ 25 ns, 0 allocs"}},
	"RateLimitAllowParallel":               {{maxAllocs: 0, bounds: []bound{atMost(25)}, text: "≤ 25 ns, 0 allocs"}},
	"RateLimitGuarded":                     {{maxAllocs: 0, bounds: []bound{atMost(30)}, text: "≤ 30 ns, 0 allocs"}},
	"RateLimitKeyed":                       {{maxAllocs: 0, bounds: []bound{atMost(60)}, text: "≤ 60 ns, 0 allocs"}},
	"RedisRateLimit":                       redisTargets,
	"RedisRateLimitParallel":               redisTargets,
	"RedisRateLimitDefaultOptions":         redisTargets,
	"RedisRateLimitDefaultOptionsParallel": redisTargets,
	"HedgeFast": {
		{maxAllocs: -1, bounds: []bound{plusOf("timeout-cooperative", 50)}, text: "≤ cooperative Timeout + 50 ns"},
		{maxAllocs: -1, bounds: []bound{plusOf("timeout-cooperative", 50)}, lib: "resilience-fixed", text: "fixed delay ≤ cooperative Timeout + 50 ns"},
	},
	"FallbackSuccess": {{maxAllocs: 0, bounds: []bound{plusOf("direct", 3)}, text: "≤ the bare call + 3 ns, 0 allocs"}},
	"ObservedRetrySuccess": {
		{maxAllocs: 0, bounds: []bound{plusOf("resilience", 5)}, lib: "resilience-counting", text: "counting ≤ unobserved + 5 ns, 0 allocs"},
		{maxAllocs: 0, bounds: []bound{plusOf("resilience", 5)}, lib: "resilience-slog", text: "slog (disabled) ≤ unobserved + 5 ns, 0 allocs"},
		{maxAllocs: 0, bounds: []bound{plusOf("resilience", 5)}, lib: "resilience-otel", text: "otel ≤ unobserved + 5 ns, 0 allocs"},
	},
	"ObservedRetryFailFailSucceed": {
		{maxAllocs: 0, lib: "resilience-counting", text: "counting: 0 allocs"},
		{maxAllocs: 0, lib: "resilience-slog", text: "slog (disabled): 0 allocs"},
	},
}

func find(rw row, lib string) (result, bool) {
	for _, r := range rw.results {
		if r.lib == lib {
			return r, true
		}
	}
	return result{}, false
}

// end says which figures of the results a target is judged on: the
// medians, or the worse end of each spread (ours at its slowest round, the
// columns it is compared with at their fastest).
type end int

const (
	medians end = iota
	worseEnds
)

// limit is the bound's ns in rw at end e; missing names a column the bound
// needs and rw lacks, and skip is true when the bound does not apply.
func (b bound) limit(rw row, e end) (lim float64, missing string, skip bool) {
	lim = b.plus
	at := func(r result) float64 {
		if e == worseEnds {
			return r.nsLo
		}
		return r.ns
	}
	if b.col != "" {
		c, ok := find(rw, b.col)
		if !ok {
			if b.optional {
				return 0, "", true
			}
			return 0, b.col, false
		}
		v := at(c)
		if b.times != 0 {
			v *= b.times
		}
		if b.speedup != 0 {
			v /= b.speedup
		}
		lim += v
	}
	if b.or != "" {
		o, ok := find(rw, b.or)
		if !ok {
			return 0, b.or, false
		}
		lim = max(lim, at(o))
	}
	return lim, "", false
}

// holds reports whether r meets t in rw at end e, or names a column t
// needs and rw lacks.
func (t target) holds(rw row, r result, e end) (ok bool, missing string) {
	ns, allocs := r.ns, r.allocs
	if e == worseEnds {
		ns, allocs = r.nsHi, r.allocsHi
	}
	ok = t.maxAllocs < 0 || allocs <= t.maxAllocs
	for _, b := range t.bounds {
		lim, missing, skip := b.limit(rw, e)
		switch {
		case missing != "":
			return false, missing
		case skip:
		case b.ahead && ns >= lim, !b.ahead && ns > lim:
			ok = false
		}
	}
	return ok, ""
}

// state is a target's verdict.
type state int

const (
	met state = iota
	withinNoise
	missed
)

// verdict is a target and its state in one run.
type verdict struct {
	target
	state
	missing string // a column the target needs and the run lacks
}

func (v verdict) String() string {
	switch {
	case v.missing != "":
		return fmt.Sprintf("%s: **missed** (no %s column)", v.text, v.missing)
	case v.state == met:
		return v.text + ": met"
	case v.state == withinNoise:
		return v.text + ": within noise"
	}
	return v.text + ": **missed**"
}

// verdicts judges a row's targets for one of our columns. A target is met
// when it holds at the worse ends of the spreads, within noise when it
// holds at the medians only, and missed otherwise.
func verdicts(rw row, lib string) []verdict {
	var out []verdict
	for _, t := range targets[rw.name] {
		if t.lib == "" && lib != "resilience" || t.lib != "" && t.lib != lib {
			continue
		}
		r, ok := find(rw, lib)
		if !ok {
			continue
		}
		v := verdict{target: t, state: missed}
		atMedians, missing := t.holds(rw, r, medians)
		atEnds, _ := t.holds(rw, r, worseEnds)
		switch {
		case missing != "":
			v.missing = missing
		case atEnds:
			v.state = met
		case atMedians:
			v.state = withinNoise
		}
		out = append(out, v)
	}
	return out
}

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

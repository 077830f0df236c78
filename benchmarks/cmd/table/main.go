// Command table reads the output of go test -bench (several -count runs)
// and prints a markdown table: the median ns/op, B/op and allocs/op of each
// library in each row and resilience's speed-up over the best peer; with
// -targets, whether the project's targets for that row are met.
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

// result is the medians of one library in one row.
type result struct {
	lib               string
	ns, bytes, allocs float64
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
			ss := samples[name][lib]
			rw.results = append(rw.results, result{
				lib:    lib,
				ns:     median(ss, func(s sample) float64 { return s.ns }),
				bytes:  median(ss, func(s sample) float64 { return s.bytes }),
				allocs: median(ss, func(s sample) float64 { return s.allocs }),
			})
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// order is the order rows are printed in, whatever order they ran in;
// rows it does not name come after, as they came.
var order = []string{"Bare", "RetrySuccess", "RetryFailFailSucceed", "BreakerSuccess", "BreakerSuccessParallel",
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

func median(ss []sample, f func(sample) float64) float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ours reports whether a library column is this project's.
func ours(lib string) bool { return strings.HasPrefix(lib, "resilience") }

// baselines are columns that are neither ours nor a peer library.
var baselines = map[string]bool{"direct": true, "channel": true, "context.WithTimeout": true, "context.WithTimeout+goroutine": true, "net-http": true,
	"clock-read": true, "clock+CAS": true, "handoff": true, "timeout-cooperative": true}

// target is what the project promised for a row.
type target struct {
	maxNs     float64 // 0: none
	maxAllocs float64 // -1: none
	minSpeed  float64 // over failsafe-go; 0: none
	maxOverTo string  // a baseline column the ns must stay within maxOver times of
	maxOver   float64
	maxPlusNs float64 // with maxOverTo: the ns may exceed the column's by at most this; 0: none
	lib       string  // which of our columns; "" is "resilience"
	text      string
}

var targets = map[string][]target{
	"RetrySuccess":           {{maxNs: 15, maxAllocs: 0, minSpeed: 10, text: "≤ 15 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"RetryFailFailSucceed":   {{maxNs: 150, maxAllocs: -1, minSpeed: 10, text: "≤ 150 ns, ≥ 10× failsafe-go"}},
	"BreakerSuccess":         {{maxNs: 15, maxAllocs: 0, minSpeed: 10, text: "≤ 15 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"BreakerSuccessParallel": {{maxNs: 15, maxAllocs: 0, minSpeed: 10, text: "≤ 15 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"BreakerOpenRefusal":     {{maxNs: 15, maxAllocs: 0, minSpeed: 10, text: "≤ 15 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"Bulkhead":               {{maxNs: 25, maxAllocs: 0, minSpeed: 10, text: "≤ 25 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"Timeout": {
		{maxAllocs: 1, maxOverTo: "context.WithTimeout", maxOver: 1.4, text: "default ≤ 1.4× context.WithTimeout, 1 alloc"},
		{maxAllocs: 1, maxOverTo: "context.WithTimeout", maxOver: 0.3, lib: "resilience-cooperative", text: "cooperative ≤ 0.3× context.WithTimeout, 1 alloc"},
	},
	"TimeoutChild": {
		{maxAllocs: -1, maxOverTo: "context.WithTimeout", maxOver: 1.6, text: "default ≤ 1.6× context.WithTimeout"},
		{maxAllocs: -1, maxOverTo: "context.WithTimeout", maxOver: 1.0, lib: "resilience-cooperative", text: "cooperative ≤ 1.0× context.WithTimeout"},
	},
	"Composed": {
		{maxAllocs: -1, minSpeed: 2.2, text: "default ≥ 2.2× failsafe-go"},
		{maxAllocs: -1, minSpeed: 3, lib: "resilience-cooperative", text: "cooperative ≥ 3× failsafe-go"},
	},
	"ComposedParallel": {
		{maxAllocs: -1, minSpeed: 2.5, text: "default ≥ 2.5× failsafe-go"},
		{maxAllocs: -1, minSpeed: 3, lib: "resilience-cooperative", text: "cooperative ≥ 3× failsafe-go"},
	},
	"ComposedChild":                        {{maxAllocs: -1, minSpeed: 1.3, text: "default ≥ 1.3× failsafe-go"}},
	"ComposedChildParallel":                {{maxAllocs: -1, minSpeed: 1.3, text: "default ≥ 1.3× failsafe-go"}},
	"BatchPerItem":                         {{maxNs: 300, maxAllocs: 2, text: "≤ 300 ns, ≤ 2 allocs per item"}},
	"RateLimitAllow":                       {{maxNs: 25, maxAllocs: 0, text: "≤ 25 ns, 0 allocs"}},
	"RateLimitAllowParallel":               {{maxNs: 25, maxAllocs: 0, text: "≤ 25 ns, 0 allocs"}},
	"RateLimitGuarded":                     {{maxNs: 30, maxAllocs: 0, text: "≤ 30 ns, 0 allocs"}},
	"RateLimitKeyed":                       {{maxNs: 60, maxAllocs: 0, text: "≤ 60 ns, 0 allocs"}},
	"RedisRateLimit":                       {{maxAllocs: 21, maxOverTo: "redis_rate", maxOver: 1.0, text: "≤ redis_rate's latency, fewer allocs"}},
	"RedisRateLimitParallel":               {{maxAllocs: 21, maxOverTo: "redis_rate", maxOver: 1.0, text: "≤ redis_rate's latency, fewer allocs"}},
	"RedisRateLimitDefaultOptions":         {{maxAllocs: 21, maxOverTo: "redis_rate", maxOver: 1.0, text: "≤ redis_rate's latency, fewer allocs"}},
	"RedisRateLimitDefaultOptionsParallel": {{maxAllocs: 21, maxOverTo: "redis_rate", maxOver: 1.0, text: "≤ redis_rate's latency, fewer allocs"}},
	"HedgeFast": {
		{maxAllocs: -1, maxOverTo: "timeout-cooperative", maxPlusNs: 50, text: "≤ cooperative Timeout + 50 ns"},
		{maxAllocs: -1, maxOverTo: "timeout-cooperative", maxPlusNs: 50, lib: "resilience-fixed", text: "fixed delay ≤ cooperative Timeout + 50 ns"},
	},
	"FallbackSuccess": {{maxAllocs: 0, maxOverTo: "direct", maxPlusNs: 3, text: "≤ the bare call + 3 ns, 0 allocs"}},
	"ObservedRetrySuccess": {
		{maxAllocs: 0, maxOverTo: "resilience", maxPlusNs: 5, lib: "resilience-counting", text: "counting ≤ unobserved + 5 ns, 0 allocs"},
		{maxAllocs: 0, maxOverTo: "resilience", maxPlusNs: 5, lib: "resilience-slog", text: "slog (disabled) ≤ unobserved + 5 ns, 0 allocs"},
		{maxAllocs: 0, maxOverTo: "resilience", maxPlusNs: 5, lib: "resilience-otel", text: "otel ≤ unobserved + 5 ns, 0 allocs"},
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

// verdicts checks a row's targets for one of our columns and says met or
// missed for each.
func verdicts(rw row, lib string) []string {
	var out []string
	for _, t := range targets[rw.name] {
		if t.lib == "" && lib != "resilience" || t.lib != "" && t.lib != lib {
			continue
		}
		r, ok := find(rw, lib)
		if !ok {
			continue
		}
		met := true
		if t.maxNs > 0 && r.ns > t.maxNs {
			met = false
		}
		if t.maxAllocs >= 0 && r.allocs > t.maxAllocs {
			met = false
		}
		if t.minSpeed > 0 {
			if fs, ok := find(rw, "failsafe-go"); ok && fs.ns/r.ns < t.minSpeed {
				met = false
			}
		}
		if t.maxOverTo != "" {
			base, ok := find(rw, t.maxOverTo)
			if ok && t.maxOver > 0 && r.ns/base.ns > t.maxOver {
				met = false
			}
			if ok && t.maxPlusNs > 0 && r.ns-base.ns > t.maxPlusNs {
				met = false
			}
		}
		word := "met"
		if !met {
			word = "**missed**"
		}
		out = append(out, fmt.Sprintf("%s: %s", t.text, word))
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

// write prints the summary table and the full one; withTargets adds to
// the summary the project's targets for each row, met or missed.
func write(w io.Writer, rows []row, withTargets bool) {
	if withTargets {
		fmt.Fprintln(w, "| row | resilience ns/op | allocs | best peer | peer ns/op | speed-up | targets |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: | --- |")
	} else {
		fmt.Fprintln(w, "| row | resilience ns/op | allocs | best peer | peer ns/op | speed-up |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: |")
	}
	for _, rw := range rows {
		var best *result
		for i, r := range rw.results {
			if ours(r.lib) || baselines[r.lib] {
				continue
			}
			if best == nil || r.ns < best.ns {
				best = &rw.results[i]
			}
		}
		for _, r := range rw.results {
			if !ours(r.lib) {
				continue
			}
			name := rw.name
			if r.lib != "resilience" {
				name += " (" + strings.TrimPrefix(r.lib, "resilience-") + ")"
			}
			peer, peerNs, speed := "–", "–", "–"
			if best != nil {
				peer, peerNs = best.lib, format(best.ns)
				speed = format(best.ns/r.ns) + "×"
			}
			vs := verdicts(rw, r.lib)
			if withTargets {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", name, format(r.ns), count(r.allocs), peer, peerNs, speed, strings.Join(vs, "; "))
			} else {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, format(r.ns), count(r.allocs), peer, peerNs, speed)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| row | library | ns/op | B/op | allocs/op |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: |")
	for _, rw := range rows {
		for _, r := range rw.results {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", rw.name, r.lib, format(r.ns), count(r.bytes), count(r.allocs))
		}
	}
}

func main() {
	withTargets := flag.Bool("targets", false, "add the project's targets, met or missed, to the summary table")
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

package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
BenchmarkBatchPerItem/resilience-2   	100	 210 ns/op	 2 B/op	 0 allocs/op
BenchmarkRetrySuccess/resilience-2   	100	 5.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/resilience-2   	100	 7.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/resilience-2   	100	 6.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/policy-floor-2 	100	 4.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/failsafe-go-2  	100	 500 ns/op	 416 B/op	 14 allocs/op
BenchmarkRetrySuccess/go-resiliency-2	100	 5.5 ns/op	 0 B/op	 0 allocs/op
BenchmarkTimeout/handoff-2	100	 350 ns/op	 0 B/op	 0 allocs/op
BenchmarkTimeout/context.WithTimeoutCause-2	100	 450 ns/op	 272 B/op	 4 allocs/op
BenchmarkTimeout/resilience-2        	100	 1000 ns/op	 448 B/op	 6 allocs/op
BenchmarkTimeout/resilience-cooperative-2	100	 420 ns/op	 272 B/op	 4 allocs/op
BenchmarkObservedRetrySuccess/resilience-2	100	 6.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkObservedRetrySuccess/resilience-counting-2	100	 8.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkObservedRetrySuccess/resilience-otel-2	100	 12.0 ns/op	 0 B/op	 0 allocs/op
PASS
`

func TestParse(t *testing.T) {
	rows, err := parse(strings.NewReader(sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rw := range rows {
		names = append(names, rw.name)
	}
	if want := []string{"RetrySuccess", "Timeout", "BatchPerItem", "ObservedRetrySuccess"}; !slices.Equal(names, want) {
		t.Fatalf("parse() rows = %v, want %v (the table's order)", names, want)
	}
	got := rows[0].results[0]
	want := result{lib: "resilience", ns: 6, nsLo: 5, nsHi: 7, n: 3}
	if got != want {
		t.Errorf("parse() RetrySuccess/resilience = %+v, want %+v", got, want)
	}
	if got, want := got.spread(), 2.0/6; got != want {
		t.Errorf("spread() = %v, want (7 − 5) / 6 = %v", got, want)
	}
	if got := rows[1].results[0].lib; got != "handoff" {
		t.Errorf("parse() Timeout's first column = %q, want handoff", got)
	}
}

func TestWrite(t *testing.T) {
	rows, err := parse(strings.NewReader(sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	write(&out, rows, true)
	for _, want := range []string{
		"| RetrySuccess | 6.00 | 0 | go-resiliency | 5.50 | 0.92× | ≤ max(go-resiliency, policy-floor + 3 ns), 0 allocs: met |",
		"| Timeout | 1000 | 6 | – | – | – | default ≤ 1.15× (context.WithTimeoutCause + handoff), ahead of go-resiliency: **missed** |",
		"| Timeout (cooperative) | 420 | 4 | – | – | – | cooperative ≤ 1.15× context.WithTimeoutCause, ahead of failsafe-go: **missed** (no failsafe-go column) |",
		"| BatchPerItem | 210 | 0 | – | – | – | ≤ 300 ns, ≤ 2 allocs per item: met |",
		"| ObservedRetrySuccess | 6.00 | 0 | – | – | – |  |",
		"| ObservedRetrySuccess (counting) | 8.00 | 0 | – | – | – | counting ≤ unobserved + 5 ns, 0 allocs: met |",
		"| ObservedRetrySuccess (otel) | 12.0 | 0 | – | – | – | otel ≤ unobserved + 5 ns, 0 allocs: **missed** |",
		"\nTargets: 3 met, 0 within noise, 3 missed.\n",
		"| row | library | ns/op | spread | B/op | allocs/op |",
		"| RetrySuccess | resilience | 6.00 | 33% | 0 | 0 |",
		"| RetrySuccess | failsafe-go | 500 | – | 416 | 14 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	write(&out, rows, false)
	if s := out.String(); strings.Contains(s, "targets") || strings.Contains(s, "Targets:") {
		t.Errorf("table without -targets names targets:\n%s", s)
	}
}

func TestFormatSpread(t *testing.T) {
	for _, tc := range []struct {
		r    result
		want string
	}{
		{result{ns: 100, nsLo: 100, nsHi: 100, n: 1}, "–"},
		{result{ns: 100, nsLo: 100, nsHi: 100, n: 5}, "0.0%"},
		{result{ns: 100, nsLo: 98, nsHi: 103.5, n: 5}, "5.5%"},
		{result{ns: 100, nsLo: 90, nsHi: 125, n: 5}, "35%"},
	} {
		if got := formatSpread(tc.r); got != tc.want {
			t.Errorf("formatSpread(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// col is one column's samples, one a round: ns/op, with allocs/op 0
// unless allocs gives them.
type col struct {
	lib    string
	ns     []float64
	allocs []float64
}

// output is the go test output of rounds of row's columns.
func output(row string, cols []col) string {
	var b strings.Builder
	for _, c := range cols {
		for i, ns := range c.ns {
			allocs := 0.0
			if i < len(c.allocs) {
				allocs = c.allocs[i]
			}
			fmt.Fprintf(&b, "Benchmark%s/%s-2\t100\t%g ns/op\t0 B/op\t%g allocs/op\n", row, c.lib, ns, allocs)
		}
	}
	return b.String()
}

func TestVerdicts(t *testing.T) {
	const (
		coop    = "cooperative ≤ 1.15× context.WithTimeoutCause, ahead of failsafe-go"
		hard    = "default ≤ 1.15× (context.WithTimeoutCause + handoff), ahead of go-resiliency"
		serial  = "≤ max(go-resiliency, policy-floor + 3 ns), 0 allocs"
		par     = "≤ max(go-resiliency, policy-floor + 1.5 ns), 0 allocs"
		refusal = "≤ policy-refusal-floor + 1.5 ns, 0 allocs"
	)
	ns := func(v ...float64) []float64 { return v }
	for _, tc := range []struct {
		name string
		row  string
		lib  string
		cols []col
		want []string
	}{
		{"cooperative within 1.15× at the worse ends", "Timeout", "resilience-cooperative", []col{
			{lib: "context.WithTimeoutCause", ns: ns(100, 98, 102)},
			{lib: "resilience-cooperative", ns: ns(110, 111, 112)},
			{lib: "failsafe-go", ns: ns(1500, 1600, 1400)},
		}, []string{coop + ": met"}},
		{"cooperative within 1.15× at the medians only", "Timeout", "resilience-cooperative", []col{
			{lib: "context.WithTimeoutCause", ns: ns(100, 95, 105)},
			{lib: "resilience-cooperative", ns: ns(110, 105, 120)},
			{lib: "failsafe-go", ns: ns(1500, 1600, 1400)},
		}, []string{coop + ": within noise"}},
		{"cooperative over 1.15×", "TimeoutChild", "resilience-cooperative", []col{
			{lib: "context.WithTimeoutCause", ns: ns(100, 100, 100)},
			{lib: "resilience-cooperative", ns: ns(116, 116, 116)},
			{lib: "failsafe-go", ns: ns(1500, 1600, 1400)},
		}, []string{coop + ": **missed**"}},
		{"cooperative level with failsafe-go is not ahead", "Timeout", "resilience-cooperative", []col{
			{lib: "context.WithTimeoutCause", ns: ns(100)},
			{lib: "resilience-cooperative", ns: ns(110)},
			{lib: "failsafe-go", ns: ns(110)},
		}, []string{coop + ": **missed**"}},
		{"cooperative ahead of failsafe-go at the medians only", "Timeout", "resilience-cooperative", []col{
			{lib: "context.WithTimeoutCause", ns: ns(100, 100, 100)},
			{lib: "resilience-cooperative", ns: ns(105, 110, 112)},
			{lib: "failsafe-go", ns: ns(111, 120, 130)},
		}, []string{coop + ": within noise"}},
		{"default without a go-resiliency column", "TimeoutChild", "resilience", []col{
			{lib: "context.WithTimeoutCause", ns: ns(600, 600, 600)},
			{lib: "handoff", ns: ns(400, 400, 400)},
			{lib: "resilience", ns: ns(1100, 1140, 1120)},
			{lib: "resilience-cooperative", ns: ns(500, 500, 500)},
		}, []string{hard + ": met"}},
		{"default over 1.15× its floor", "Timeout", "resilience", []col{
			{lib: "context.WithTimeoutCause", ns: ns(600)},
			{lib: "handoff", ns: ns(400)},
			{lib: "resilience", ns: ns(1160)},
			{lib: "go-resiliency", ns: ns(2000)},
		}, []string{hard + ": **missed**"}},
		{"default behind go-resiliency", "Timeout", "resilience", []col{
			{lib: "context.WithTimeoutCause", ns: ns(600)},
			{lib: "handoff", ns: ns(400)},
			{lib: "resilience", ns: ns(1100)},
			{lib: "go-resiliency", ns: ns(1050)},
		}, []string{hard + ": **missed**"}},
		{"default without its floor", "Timeout", "resilience", []col{
			{lib: "resilience", ns: ns(1100)},
			{lib: "go-resiliency", ns: ns(2000)},
		}, []string{hard + ": **missed** (no context.WithTimeoutCause column)"}},
		{"default without its hand-off", "Timeout", "resilience", []col{
			{lib: "context.WithTimeoutCause", ns: ns(600)},
			{lib: "resilience", ns: ns(1100)},
			{lib: "go-resiliency", ns: ns(2000)},
		}, []string{hard + ": **missed** (no handoff column)"}},
		{"cancellable leader within 2× its floor", "SingleflightLeader", "resilience-cancellable", []col{
			{lib: "cancellable-floor", ns: ns(600)},
			{lib: "resilience-cancellable", ns: ns(1100)},
		}, []string{"cancellable ≤ 2× cancellable-floor: met"}},
		{"cancellable leader over 2× its floor", "SingleflightLeader", "resilience-cancellable", []col{
			{lib: "cancellable-floor", ns: ns(600)},
			{lib: "resilience-cancellable", ns: ns(1300)},
		}, []string{"cancellable ≤ 2× cancellable-floor: **missed**"}},
		{"composed default ahead of failsafe-go", "ComposedParallel", "resilience", []col{
			{lib: "resilience", ns: ns(900, 950, 1000)},
			{lib: "failsafe-go", ns: ns(1001, 1100, 1200)},
		}, []string{"default ahead of failsafe-go: met"}},
		{"composed cooperative 2× failsafe-go", "Composed", "resilience-cooperative", []col{
			{lib: "resilience-cooperative", ns: ns(490, 500, 510)},
			{lib: "failsafe-go", ns: ns(1020, 1100, 1200)},
		}, []string{"cooperative ≥ 2× failsafe-go: met"}},
		{"composed cooperative 2× failsafe-go at the medians only", "Composed", "resilience-cooperative", []col{
			{lib: "resilience-cooperative", ns: ns(490, 500, 510)},
			{lib: "failsafe-go", ns: ns(1000, 1010, 1200)},
		}, []string{"cooperative ≥ 2× failsafe-go: within noise"}},
		{"composed child cooperative 1.7× failsafe-go", "ComposedChildParallel", "resilience-cooperative", []col{
			{lib: "resilience-cooperative", ns: ns(1000)},
			{lib: "failsafe-go", ns: ns(1710)},
		}, []string{"cooperative ≥ 1.7× failsafe-go: met"}},
		{"composed child cooperative under 1.7× failsafe-go", "ComposedChild", "resilience-cooperative", []col{
			{lib: "resilience-cooperative", ns: ns(1000)},
			{lib: "failsafe-go", ns: ns(1690)},
		}, []string{"cooperative ≥ 1.7× failsafe-go: **missed**"}},
		{"retry within the leaner peer, above the floor + 3 ns", "RetrySuccess", "resilience", []col{
			{lib: "resilience", ns: ns(9, 9.2, 9.4)},
			{lib: "policy-floor", ns: ns(5, 5, 5)},
			{lib: "go-resiliency", ns: ns(9.5, 9.6, 9.7)},
		}, []string{serial + ": met"}},
		{"retry within the floor + 3 ns, above the peer", "RetrySuccess", "resilience", []col{
			{lib: "resilience", ns: ns(7.5, 7.8, 7.9)},
			{lib: "policy-floor", ns: ns(5, 5, 5)},
			{lib: "go-resiliency", ns: ns(4, 4, 4)},
		}, []string{serial + ": met"}},
		{"breaker over both", "BreakerSuccess", "resilience", []col{
			{lib: "resilience", ns: ns(9)},
			{lib: "policy-floor", ns: ns(5)},
			{lib: "go-resiliency", ns: ns(8.5)},
		}, []string{serial + ": **missed**"}},
		{"breaker within the floor + 3 ns at the medians only", "BreakerSuccess", "resilience", []col{
			{lib: "resilience", ns: ns(7.5, 7.9, 8.5)},
			{lib: "policy-floor", ns: ns(4.6, 5, 5.4)},
			{lib: "go-resiliency", ns: ns(4, 4, 4)},
		}, []string{serial + ": within noise"}},
		{"breaker allocating in one round", "BreakerSuccess", "resilience", []col{
			{lib: "resilience", ns: ns(7, 7, 7), allocs: []float64{0, 1, 0}},
			{lib: "policy-floor", ns: ns(5, 5, 5)},
			{lib: "go-resiliency", ns: ns(4, 4, 4)},
		}, []string{serial + ": within noise"}},
		{"breaker allocating", "BreakerSuccess", "resilience", []col{
			{lib: "resilience", ns: ns(7), allocs: []float64{1}},
			{lib: "policy-floor", ns: ns(5)},
			{lib: "go-resiliency", ns: ns(4)},
		}, []string{serial + ": **missed**"}},
		{"parallel retry within the floor + 1.5 ns", "RetrySuccessParallel", "resilience", []col{
			{lib: "resilience", ns: ns(6)},
			{lib: "policy-floor", ns: ns(5)},
			{lib: "go-resiliency", ns: ns(3)},
		}, []string{par + ": met"}},
		{"parallel breaker over the floor + 1.5 ns", "BreakerSuccessParallel", "resilience", []col{
			{lib: "resilience", ns: ns(7)},
			{lib: "policy-floor", ns: ns(5)},
			{lib: "go-resiliency", ns: ns(3)},
		}, []string{par + ": **missed**"}},
		{"refusal within the floor + 1.5 ns", "BreakerOpenRefusal", "resilience", []col{
			{lib: "resilience", ns: ns(3.9, 3.95, 4)},
			{lib: "policy-refusal-floor", ns: ns(2.5, 2.5, 2.6)},
			{lib: "go-resiliency", ns: ns(2, 2, 2)},
		}, []string{refusal + ": met"}},
		{"refusal over the floor + 1.5 ns", "BreakerOpenRefusal", "resilience", []col{
			{lib: "resilience", ns: ns(5)},
			{lib: "policy-refusal-floor", ns: ns(2.5)},
		}, []string{refusal + ": **missed**"}},
		{"an absolute bound kept", "RetryFailFailSucceed", "resilience", []col{
			{lib: "resilience", ns: ns(140, 145, 160)},
			{lib: "failsafe-go", ns: ns(3000, 3000, 3000)},
		}, []string{"≤ 150 ns, ≥ 10× failsafe-go: within noise"}},
		{"a column with no targets", "ObservedRetrySuccess", "resilience", []col{
			{lib: "resilience", ns: ns(6)},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := parse(strings.NewReader(output(tc.row, tc.cols)))
			if err != nil || len(rows) != 1 {
				t.Fatalf("parse() = %v, %v, want one row", rows, err)
			}
			var got []string
			for _, v := range verdicts(rows[0], tc.lib) {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("verdicts(%s, %s) = %q, want %q", tc.row, tc.lib, got, tc.want)
			}
		})
	}
}

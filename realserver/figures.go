package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// phaseFigures are one phase's, from its settling time to its end.
type phaseFigures struct {
	offered  float64 // requests per second
	goodput  float64 // answered 200 within the deadline, per second
	capacity float64 // what the server could serve, per second
	refused  float64 // share of the offered
	timedOut float64 // share of the offered
	failed   float64 // share of the offered: other errors
	p50, p99 time.Duration
	limit    float64 // median
	recovery time.Duration
}

const defaultSettle = 5 * time.Second

// figures returns the figures of each phase of a run.
func figures(sc scenario, bs []bucket) []phaseFigures {
	var fs []phaseFigures
	from := 0
	for k, p := range sc.phases {
		to := from + int(p.d/time.Second)
		skip := int(cmp.Or(p.settle, defaultSettle) / time.Second)
		if p.settle < 0 {
			skip = 0
		}
		var f phaseFigures
		var good, offered, refused, late, failed int
		var capSum float64
		var lat []time.Duration
		var limits []float64
		for _, b := range bs[from+skip : to] {
			good += b.good
			offered += b.offered
			refused += b.refused
			late += b.timedOut
			failed += b.failed
			capSum += b.capacity
			lat = append(lat, b.latencies...)
			limits = append(limits, b.limit)
		}
		secs := float64(to - from - skip)
		f.offered, f.goodput, f.capacity = float64(offered)/secs, float64(good)/secs, capSum/secs
		n := float64(max(offered, 1))
		f.refused, f.timedOut, f.failed = float64(refused)/n, float64(late)/n, float64(failed)/n
		f.p50, f.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
		slices.Sort(limits)
		f.limit = limits[len(limits)/2]
		if p.want == recovery && k >= 2 {
			// Back within 10% of the goodput settled before the spike: the
			// last second short of it, counted from the phase's start.
			settled := fs[k-2].goodput
			for i := to - 1; i >= from; i-- {
				if float64(bs[i].good) < 0.9*settled {
					f.recovery = time.Duration(i+1-from) * time.Second
					break
				}
			}
		}
		fs = append(fs, f)
		from = to
	}
	return fs
}

// unloadedP99 returns the p99 latency of the first phase, which offers
// half the capacity: the server's own, with no queue to speak of.
func unloadedP99(fs []phaseFigures) time.Duration { return fs[0].p99 }

// misses returns the targets a run of the scenario missed, in words.
func misses(sc scenario, fs []phaseFigures) []string {
	var out []string
	unloaded := unloadedP99(fs)
	for k, p := range sc.phases {
		f := fs[k]
		switch p.want {
		case overloaded:
			if f.goodput < 0.9*f.capacity {
				out = append(out, fmt.Sprintf("%s / %s: goodput %.0f/s, %.1f%% of the capacity %.0f/s, want at least 90%%", sc.name, p.name, f.goodput, 100*f.goodput/f.capacity, f.capacity))
			}
			slow := max(cmp.Or(p.slow, 1), p.rampTo)
			if f.p99 > time.Duration(2*slow*float64(unloaded)) {
				out = append(out, fmt.Sprintf("%s / %s: p99 %v, want at most twice the unloaded %v×%.2g", sc.name, p.name, f.p99.Round(time.Millisecond), unloaded.Round(time.Millisecond), slow))
			}
		case light:
			if f.refused > 0.01 {
				out = append(out, fmt.Sprintf("%s / %s: %.2f%% refused, want at most 1%%", sc.name, p.name, 100*f.refused))
			}
		case recovery:
			if f.recovery > 5*time.Second {
				out = append(out, fmt.Sprintf("%s / %s: goodput back within 10%% after %v, want within 5s", sc.name, p.name, f.recovery))
			}
		}
	}
	return out
}

// writeTable writes the phases' figures of each contender's run.
func writeTable(w io.Writer, sc scenario, names []string, runs [][]phaseFigures) {
	fmt.Fprintf(w, "| phase | capacity/s | offered/s |")
	for _, n := range names {
		fmt.Fprintf(w, " %s: goodput · refused · timed out · p50 / p99 · limit |", n)
	}
	fmt.Fprintln(w, "\n| --- | ---: | ---: |"+strings.Repeat(" ---: |", len(names)))
	for k, p := range sc.phases {
		fmt.Fprintf(w, "| %s | %.0f | %.0f |", p.name, runs[0][k].capacity, runs[0][k].offered)
		for _, fs := range runs {
			f := fs[k]
			fmt.Fprintf(w, " %.1f%% · %.1f%% · %.1f%% · %v / %v", 100*f.goodput/f.capacity, 100*f.refused, 100*f.timedOut,
				f.p50.Round(time.Millisecond), f.p99.Round(time.Millisecond))
			if f.limit > 0 {
				fmt.Fprintf(w, " · %.0f", f.limit)
			}
			if p.want == recovery {
				fmt.Fprintf(w, " · back in %v", f.recovery)
			}
			fmt.Fprint(w, " |")
		}
		fmt.Fprintln(w)
	}
}

// Command realserver offers load to a real net/http server on 127.0.0.1
// behind an adaptive limiter, a bulkhead and failsafe-go's adaptive
// limiter, and prints what each kept of the server's capacity as it lost
// it in the ways real servers do (see README.md).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "", "write tables.md and the charts of the limit (SVG) to this folder")
	phase := flag.Duration("phase", 20*time.Second, "length of a phase")
	settle := flag.Duration("settle", 5*time.Second, "how long after a phase's start its figures begin")
	withDrift := flag.Bool("drift", false, "also run 1.5× for 11 minutes (ours only)")
	only := flag.String("only", "", "run only the scenarios whose name contains this")
	oursOnly := flag.Bool("ours", false, "run the library's AdaptiveLimiter alone, and print each second")
	tenants := flag.Bool("tenants", false, "run the noisy-neighbour check alone: ten tenants, one sending ten times its share")
	flag.Parse()
	if *tenants {
		var names []string
		var fs []tenantFigures
		for _, g := range tenantGuards {
			names = append(names, g.name)
			fs = append(fs, runTenants(g))
		}
		writeTenants(os.Stdout, names, fs)
		return
	}
	var md strings.Builder
	fmt.Fprintf(&md, "Measured %s with %s on %d cores: %d worker slots, service time log-normal of mean %v (σ %.1f), deadline %v; phases of %v, figures from %v into each.\n\n",
		time.Now().Format("2006-01-02"), runtime.Version(), runtime.NumCPU(), workers, service, sigma, deadline, *phase, *settle)
	fmt.Print(md.String())
	for _, sc := range scenarios(*phase, *settle) {
		if !strings.Contains(sc.name, *only) {
			continue
		}
		var names []string
		var runs [][]phaseFigures
		var limits [][]float64
		cts := contenders
		if *oursOnly {
			cts = []contender{ours}
		}
		for _, ct := range cts {
			bs := run(sc, ct)
			if *oursOnly {
				for i, b := range bs {
					fmt.Printf("%3d offered %4d good %4d refused %4d late %3d limit %3.0f capacity %3.0f\n", i, b.offered, b.good, b.refused, b.timedOut, b.limit, b.capacity)
				}
			}
			names = append(names, ct.name)
			runs = append(runs, figures(sc, bs))
			var l []float64
			for _, b := range bs {
				l = append(l, b.limit)
			}
			limits = append(limits, l)
			if ct.name == ours.name {
				for _, m := range misses(sc, runs[len(runs)-1]) {
					fmt.Fprintln(os.Stderr, "missed:", m)
				}
			}
		}
		var t strings.Builder
		fmt.Fprintf(&t, "### %s\n\n", sc.name)
		writeTable(&t, sc, names, runs)
		fmt.Fprintln(&t)
		fmt.Print(t.String())
		md.WriteString(t.String())
		if *out != "" {
			file := "realserver-" + strings.ReplaceAll(sc.name, " ", "-") + ".svg"
			if err := os.WriteFile(filepath.Join(*out, file), chart(sc, names, limits), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintf(&md, "![the limit over time, %s](%s)\n\n", sc.name, file)
		}
	}
	if *withDrift {
		bs := run(drift(), ours)
		first, tenth := driftOf(bs)
		t := fmt.Sprintf("### 1.5× for 11 minutes\n\nthe limit after 1 minute %.0f, after 10 %.0f (%+.1f%%)\n\n", first, tenth, 100*(tenth-first)/first)
		fmt.Print(t)
		md.WriteString(t)
	}
	if *out != "" {
		if err := os.WriteFile(filepath.Join(*out, "realserver-tables.md"), []byte(md.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// medianOf returns the median of v, sorted in place.
func medianOf(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

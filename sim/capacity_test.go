package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// The capacity scenarios: the load scenario's server (20 workers at 10 ms
// a call) losing capacity in the ways a real server does, not only by
// losing workers: a service that gets slower (a slower database, a cold
// cache), at once or gradually, a short spike of slowness, and a mix of
// fast and slow endpoints; and the same slowdowns when the server is not
// overloaded, where a limiter must refuse nothing. realserver/ runs the
// same scenarios against a real net/http server.
//
//	go test -run 'TestCapacity$' -v   # the tables for seed 1

// capacityScenario is one scenario: its load, and what to check.
type capacityScenario struct {
	name string
	cfg  loadConfig
}

// capacityScenarios returns the scenarios for seed. A phase's load is a
// multiple of the full capacity at the first phase's service time: with
// the service twice as slow, 2× is four times what the server then
// serves, and 0.4× is 0.8 of it.
func capacityScenarios(seed uint64) []capacityScenario {
	base := defaultLoad(seed)
	with := func(phases ...loadPhase) loadConfig {
		c := base
		c.phases = phases
		return c
	}
	const ph = 20 * time.Second
	gradual := []loadPhase{{name: "0.5×", d: ph, load: 0.5}, {name: "2×", d: ph, load: 2}}
	for i := 1; i <= 6; i++ {
		f := 1 + float64(i)/3
		gradual = append(gradual, loadPhase{name: fmt.Sprintf("2×, service ×%.2f", f), d: 5 * time.Second, load: 2, slow: f, settle: time.Nanosecond})
	}
	gradual = append(gradual, loadPhase{name: "2×, service ×3", d: ph, load: 2, slow: 3},
		loadPhase{name: "2×, service back", d: ph, load: 2})
	mix := with(
		loadPhase{name: "0.5×", d: ph, load: 0.5},
		loadPhase{name: "2×", d: ph, load: 2},
		loadPhase{name: "3×", d: ph, load: 3},
		loadPhase{name: "0.8×", d: ph, load: 0.8},
		loadPhase{name: "0.5× again", d: ph, load: 0.5})
	mix.slowShare, mix.slowFactor, mix.deadline = 0.1, 15, 500*time.Millisecond
	return []capacityScenario{
		{"slower service", with(
			loadPhase{name: "0.5×", d: ph, load: 0.5},
			loadPhase{name: "2×", d: ph, load: 2},
			loadPhase{name: "2×, service ×2", d: ph, load: 2, slow: 2},
			loadPhase{name: "2×, service ×3", d: ph, load: 2, slow: 3},
			loadPhase{name: "2×, service back", d: ph, load: 2},
			loadPhase{name: "0.5× again", d: ph, load: 0.5})},
		{"gradually slower", with(gradual...)},
		{"spike", with(
			loadPhase{name: "0.5×", d: ph, load: 0.5},
			loadPhase{name: "2×", d: ph, load: 2},
			loadPhase{name: "2×, service ×5", d: 3 * time.Second, load: 2, slow: 5, settle: time.Nanosecond},
			loadPhase{name: "2× after the spike", d: ph, load: 2, settle: 5 * time.Second},
			loadPhase{name: "0.5× again", d: ph, load: 0.5})},
		{"not overloaded", with(
			loadPhase{name: "0.8×", d: ph, load: 0.8},
			loadPhase{name: "0.8×, service ×2", d: 30 * time.Second, load: 0.4, slow: 2},
			loadPhase{name: "0.8×, service ×3", d: 30 * time.Second, load: 0.8 / 3, slow: 3},
			loadPhase{name: "0.8×, service back", d: ph, load: 0.8},
			loadPhase{name: "0.5×, service ×2", d: ph, load: 0.25, slow: 2})},
		{"mix of endpoints", mix},
	}
}

// capacityContenders are the limiters of the capacity scenarios: ours,
// a bulkhead right for the full capacity, and failsafe-go's.
var capacityContenders = []loadContender{oursContender, bulkheadContender("Bulkhead(20)", 20), failsafeContender}

// TestCapacity runs the capacity scenarios for seed 1 and logs their
// tables.
func TestCapacity(t *testing.T) {
	if raceEnabled {
		t.Skip("a report of every contender's run: TestCapacityTargets checks ours under the race detector")
	}
	for _, sc := range capacityScenarios(1) {
		unloaded := unloadedOf(t, sc.cfg)
		var rs []loadResult
		for _, ct := range capacityContenders {
			rs = append(rs, runLoad(t, sc.cfg, ct))
		}
		var b strings.Builder
		writeCapacityTable(&b, sc, rs, unloaded)
		t.Log("\n" + b.String())
	}
}

// writeCapacityTable writes, for each phase and limiter, the goodput as a
// share of the capacity of the phase, the share refused, the p99 over the
// unloaded p99 at the phase's service time, and the median limit.
func writeCapacityTable(w io.Writer, sc capacityScenario, rs []loadResult, unloaded time.Duration) {
	fmt.Fprintf(w, "%s (unloaded p99 %v)\n\n| phase | capacity/s |", sc.name, unloaded.Round(100*time.Microsecond))
	for _, r := range rs {
		fmt.Fprintf(w, " %s: goodput, refused, p99, limit |", r.name)
	}
	fmt.Fprintln(w, "\n| --- | ---: |"+strings.Repeat(" ---: |", len(rs)))
	fs := make([]loadFigures, len(rs))
	for i, r := range rs {
		fs[i] = figures(sc.cfg, r, unloaded)
	}
	for k, p := range sc.cfg.phases {
		fmt.Fprintf(w, "| %s | %.0f |", p.name, fs[0].phases[k].capacity)
		for _, f := range fs {
			pf := f.phases[k]
			fmt.Fprintf(w, " %.1f%%, %.1f%%, %.2f×, %.0f |", 100*pf.goodput/pf.capacity, 100*pf.refused,
				float64(pf.p99)/(cmp.Or(p.slow, 1)*float64(unloaded)), pf.limit)
		}
		fmt.Fprintln(w)
	}
	// The limit, second by second, for ours.
	var lim []string
	for _, b := range rs[0].buckets {
		lim = append(lim, fmt.Sprintf("%.0f", b.limit))
	}
	fmt.Fprintf(w, "\nlimit by second: %s\n", strings.Join(lim, " "))
}

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRealServer is the short form of the real-server check: the adaptive
// limiter with its defaults in front of a real net/http server on
// 127.0.0.1, through every scenario with phases of 7 s, measured from 3 s
// into each. It takes about two minutes of real time and sends at most
// about 800 requests a second, to 127.0.0.1 only. It does not run under
// the race detector, whose cost would be the server's and not the
// limiter's, nor with -short.
//
// It fails when the limiter collapses as it did before its baseline came
// from probes alone: an overloaded phase of a single endpoint under 60% of
// the capacity of the moment (it was 15–57% with the service twice as
// slow), or goodput not back within 5 s of a spike. The targets
// (90% overloaded, at most 1% refused when not, the mix of endpoints
// included) are logged, each miss on a line of its own: on this server
// they are not yet met in every run (docs/load-control.md has the figures).
func TestRealServer(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("real time and real load: run without -race and -short")
	}
	var collapsed, missed []string
	for _, sc := range scenarios(7*time.Second, 3*time.Second) {
		fs := figures(sc, run(sc, ours))
		var b strings.Builder
		writeTable(&b, sc, []string{ours.name}, [][]phaseFigures{fs})
		t.Logf("%s\n%s", sc.name, b.String())
		collapsed = append(collapsed, collapses(sc, fs)...)
		missed = append(missed, misses(sc, fs)...)
	}
	for _, m := range missed {
		t.Log("target missed:", m)
	}
	for _, c := range collapsed {
		t.Error(c)
	}
}

// collapses returns, in words, the phases of a run where the limiter
// collapsed: an overloaded phase of a single endpoint under 60% of the
// capacity, or a spike not recovered from within 5 s.
func collapses(sc scenario, fs []phaseFigures) []string {
	var out []string
	for k, p := range sc.phases {
		f := fs[k]
		switch {
		case p.want == overloaded && sc.slowShare == 0 && f.goodput < 0.6*f.capacity:
			out = append(out, fmt.Sprintf("%s / %s: goodput %.1f%% of the capacity, want at least 60%%", sc.name, p.name, 100*f.goodput/f.capacity))
		case p.want == recovery && f.recovery > 5*time.Second:
			out = append(out, fmt.Sprintf("%s / %s: goodput back within 10%% after %v, want within 5s", sc.name, p.name, f.recovery))
		}
	}
	return out
}

// TestNoisyNeighbour: ten tenants on one real server, one of them sending
// ten times its share (tenants.go). A bulkhead per tenant, a
// resilience.Keyed given to resiliencehttp.Handler by ByRequest, keeps the
// nine quiet tenants' goodput at 95% or more; one bulkhead for every
// tenant, logged beside it, lets the noisy one take a third of it. About
// 26 s of real time, to 127.0.0.1 only; not under the race detector nor
// with -short.
func TestNoisyNeighbour(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("real time and real load: run without -race and -short")
	}
	var names []string
	var fs []tenantFigures
	for _, g := range tenantGuards[1:] {
		names = append(names, g.name)
		fs = append(fs, runTenants(g))
	}
	var b strings.Builder
	writeTenants(&b, names, fs)
	t.Log("\n" + b.String())
	if keyed := fs[len(fs)-1]; keyed.quiet < 0.95 {
		t.Errorf("with a bulkhead per tenant the quiet tenants' goodput is %.1f%%, want at least 95%%", 100*keyed.quiet)
	}
}

package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// defaultOptions returns the options as the flags' defaults set them.
func defaultOptions(t *testing.T) *options {
	t.Helper()
	var o options
	if err := newFlagSet(&o, io.Discard).Parse(nil); err != nil {
		t.Fatal(err)
	}
	return &o
}

// small keeps a whole run of the command quick.
var small = []string{"-n-min", "10", "-n-max", "30", "-runs", "3", "-clients", "20", "-duration", "12s", "-outage-start", "2s", "-outage", "4s", "-capacity", "240",
	"-brownout", "6s", "-room-capacity", "400"}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run(-h) = %d, want 0", code)
	}
	var o options
	newFlagSet(&o, io.Discard).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(stderr.String(), "-"+f.Name) {
			t.Errorf("-h does not mention -%s", f.Name)
		}
		if f.Usage == "" {
			t.Errorf("-%s has no usage text", f.Name)
		}
	})
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined: -nope"},
		{"not a number", []string{"-runs", "many"}, `invalid value "many" for flag -runs`},
		{"not a duration", []string{"-cap", "2"}, `invalid value "2" for flag -cap`},
		{"zero runs", []string{"-runs", "0"}, "-runs: must be at least 1, got 0"},
		{"n-max below n-min", []string{"-n-min", "50", "-n-max", "10"}, "-n-max: must be at least -n-min"},
		{"cap below base", []string{"-base", "1s", "-cap", "10ms"}, "-cap: must be at least -base"},
		{"negative rate", []string{"-rate", "-1"}, "-rate: must be in (0, 1e6], got -1"},
		{"NaN capacity", []string{"-capacity", "NaN"}, "-capacity: must be in (0, 1e9], got NaN"},
		{"transient above 1", []string{"-transient", "1.5"}, "-transient: must be in [0, 1], got 1.5"},
		{"outage past the end", []string{"-outage", "1h"}, "-outage: must not be negative and must end before -duration"},
		{"scenario", []string{"-scenario", "storm"}, `-scenario: must be all, contention, outage or defaults, got "storm"`},
		{"format", []string{"-format", "gif"}, `-format: must be png or svg, got "gif"`},
		{"zero attempts", []string{"-attempts", "0"}, "-attempts: must be at least 1, got 0"},
		{"refuse none", []string{"-refuse", "0"}, "-refuse: must be in (0, 1], got 0"},
		{"brownout past the end", []string{"-brownout", "1h"}, "-brownout: must be positive and must end before -duration, got 1h0m0s"},
		{"brownout refuse above 1", []string{"-brownout-refuse", "2"}, "-brownout-refuse: must be in (0, 1], got 2"},
		{"zero room", []string{"-room-capacity", "0"}, "-room-capacity: must be in (0, 1e9], got 0"},
		{"zero cool-down", []string{"-breaker-cooldown", "0s"}, "-breaker-cooldown: must be positive, got 0s"},
		{"zero bucket", []string{"-bucket", "0s"}, "-bucket: must be in (0, -duration], got 0s"},
		{"two bad flags", []string{"-runs", "0", "-clients", "0"}, "-clients: must be at least 1, got 0"},
		{"stray argument", []string{"outage"}, `unexpected argument "outage"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 {
				t.Errorf("run(%q) = %d, want 2", tc.args, code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("run(%q) stderr = %q, want it to contain %q", tc.args, stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("run(%q) wrote %q to stdout, want nothing", tc.args, stdout.String())
			}
		})
	}
}

func TestRunReproducible(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"both scenarios", small},
		{"contention, one worker", append([]string{"-scenario", "contention", "-workers", "1"}, small...)},
		{"outage, other seed", append([]string{"-scenario", "outage", "-seed", "9"}, small...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, b bytes.Buffer
			if code := run(tc.args, &a, io.Discard); code != 0 {
				t.Fatalf("run(%q) = %d, want 0", tc.args, code)
			}
			workers := append([]string{"-workers", "3"}, tc.args...)
			if code := run(workers, &b, io.Discard); code != 0 {
				t.Fatalf("run(%q) = %d, want 0", workers, code)
			}
			if a.String() != b.String() {
				t.Errorf("two runs differ:\n%s\n---\n%s", a.String(), b.String())
			}
		})
	}
}

func TestCharts(t *testing.T) {
	for _, format := range []string{"png", "svg"} {
		t.Run(format, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "charts")
			args := append([]string{"-charts", dir, "-format", format}, small...)
			if code := run(args, io.Discard, io.Discard); code != 0 {
				t.Fatalf("run(%q) = %d, want 0", args, code)
			}
			for _, name := range []string{"contention-calls", "contention-time", "outage-load", "defaults-failures", "defaults-brownout"} {
				fi, err := os.Stat(filepath.Join(dir, name+"."+format))
				if err != nil || fi.Size() < 1000 {
					t.Errorf("chart %s.%s: %v, want a drawing", name, format, err)
				}
			}
		})
	}
}

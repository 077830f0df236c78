// Command quickstart calls a simulated flaky, slow service through the
// library's policies and prints, line by line, what each call did.
//
//	go run ./examples/quickstart            # every scenario
//	go run ./examples/quickstart -only timeout
//
// Each scenario lives in a file of its own and registers itself with
// register; main runs them in their order. The policies log what they do
// through log/slog, to the same output. The service is seeded, so a run
// prints the same story every time (only the measured times may vary).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/faf87a20/resilience"
)

// scenario is one part of the tour.
type scenario struct {
	order int    // position in the tour
	name  string // for -only
	title string // printed as the heading
	run   func(ctx context.Context, w io.Writer) error
}

var scenarios []scenario

// logs makes a component log what it does through slog, to the tour's
// output; tour sets it, and the scenarios pass it where they build their
// policies.
var logs resilience.Option

// logObserver is the observer logs gives, to combine with others.
var logObserver resilience.Observer

// onRetry is an observer that hands f each retry Retry makes: the attempt
// that failed, its error and the wait chosen before the next.
func onRetry(f func(attempt int, err error, wait time.Duration)) resilience.Observer {
	return resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
		if e.Kind == resilience.EventRetry {
			f(e.Attempt, e.Err, e.Wait)
		}
	})
}

// newLogs returns the observer option that logs to w, without the time, so
// that the tour prints the same story every run, and indented, as the
// details of the call printed after them.
func newLogs(w io.Writer) resilience.Option {
	logObserver = resilience.NewSlogObserver(newLogger(w, slog.LevelInfo))
	return resilience.WithObserver(logObserver)
}

// newLogger returns a logger that writes to w at level and above, as
// newLogs's does.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	noTime := func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}
	return slog.New(slog.NewTextHandler(indented{w}, &slog.HandlerOptions{Level: level, ReplaceAttr: noTime}))
}

// indented writes each record of a slog handler, which writes one line at
// a time, after two spaces.
type indented struct{ w io.Writer }

func (i indented) Write(p []byte) (int, error) {
	if _, err := io.WriteString(i.w, "  "); err != nil {
		return 0, err
	}
	return i.w.Write(p)
}

// register adds a scenario to the tour; scenario files call it from init.
func register(s scenario) { scenarios = append(scenarios, s) }

func main() {
	only := flag.String("only", "", "run only the named scenario ("+names()+")")
	flag.Parse()
	if err := tour(context.Background(), os.Stdout, *only); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func names() string {
	var ns []string
	for _, s := range sorted() {
		ns = append(ns, s.name)
	}
	return strings.Join(ns, ", ")
}

func sorted() []scenario {
	s := append([]scenario(nil), scenarios...)
	sort.Slice(s, func(i, j int) bool { return s[i].order < s[j].order })
	return s
}

// tour runs the scenarios in order, or only the one named.
func tour(ctx context.Context, w io.Writer, only string) error {
	logs = newLogs(w)
	ran := false
	for _, s := range sorted() {
		if only != "" && s.name != only {
			continue
		}
		ran = true
		fmt.Fprintf(w, "== %s\n", s.title)
		if err := s.run(ctx, w); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintln(w)
	}
	if !ran {
		return fmt.Errorf("no scenario named %q (have: %s)", only, names())
	}
	return nil
}

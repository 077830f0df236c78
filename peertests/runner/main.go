// Command runner runs the test suites of the libraries resilience is
// measured against over this module's adapters, which offer each peer's
// public API on top of resilience.
//
// For each peer it fetches the peer's module at a pinned version with the go
// command (from the module proxy, or the module cache when it holds it),
// copies the chosen test files into a temporary copy of the adapter
// package, takes out the tests that the peer's DEVIATIONS.txt lists, and
// the tests that reach into the peer's unexported internals (they do not
// compile against an adapter: the compiler names the identifier), then runs
// the rest with go test -race and prints what ran, passed, failed and was
// left out, and why.
//
// Usage, from the peertests directory:
//
//	go run ./runner [-v] [peer ...]
//
// With no peer named, every peer runs. The exit status is 1 when a test
// failed, a listed deviation names no test of the suite, or an adapter does
// not compile.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// peer is one package of a peer library whose tests run over an adapter.
type peer struct {
	name    string   // the name the summary uses, and the argument that selects it
	module  string   // the peer's module path
	version string   // the pinned version
	dir     string   // the package's directory in the module ("" for the root)
	files   []string // the test files run
	adapter string   // the adapter's directory in this module
	redis   bool     // the tests need a redis-server; its address replaces ":6379"
}

// importPath is the package's import path, which test files of an external
// test package import.
func (p peer) importPath() string {
	if p.dir == "" {
		return p.module
	}
	return p.module + "/" + p.dir
}

var peers = []peer{
	{name: "x/time/rate", module: "golang.org/x/time", version: "v0.16.0", dir: "rate",
		files: []string{"rate_test.go"}, adapter: "rate"},
	{name: "jpillora/backoff", module: "github.com/jpillora/backoff", version: "v1.0.0",
		files: []string{"backoff_test.go"}, adapter: "backoff"},
	{name: "go-resiliency/breaker", module: "github.com/eapache/go-resiliency", version: "v1.7.0", dir: "breaker",
		files: []string{"breaker_test.go"}, adapter: "goresiliency/breaker"},
	{name: "go-resiliency/retrier", module: "github.com/eapache/go-resiliency", version: "v1.7.0", dir: "retrier",
		files: []string{"backoffs_test.go", "classifier_test.go", "retrier_test.go"}, adapter: "goresiliency/retrier"},
	{name: "go-resiliency/deadline", module: "github.com/eapache/go-resiliency", version: "v1.7.0", dir: "deadline",
		files: []string{"deadline_test.go"}, adapter: "goresiliency/deadline"},
	{name: "go-resiliency/semaphore", module: "github.com/eapache/go-resiliency", version: "v1.7.0", dir: "semaphore",
		files: []string{"semaphore_test.go"}, adapter: "goresiliency/semaphore"},
	{name: "go-resiliency/batcher", module: "github.com/eapache/go-resiliency", version: "v1.7.0", dir: "batcher",
		files: []string{"batcher_test.go"}, adapter: "goresiliency/batcher"},
	{name: "k8s wait", module: "k8s.io/apimachinery", version: "v0.37.2", dir: "pkg/util/wait",
		files: []string{"wait_test.go"}, adapter: "wait"},
	{name: "go-retryablehttp", module: "github.com/hashicorp/go-retryablehttp", version: "v0.7.8",
		files: []string{"client_test.go", "roundtripper_test.go"}, adapter: "retryablehttp"},
	{name: "redis_rate", module: "github.com/go-redis/redis_rate/v10", version: "v10.0.1",
		files: []string{"rate_test.go", "example_test.go"}, adapter: "redis_rate", redis: true},
}

// thisModule is the module path of peertests; the temporary copies live in
// its directory _run, which the go command leaves out of ./... patterns.
const thisModule = "github.com/faf87a20/resilience/peertests"

// excluded is a test left out, and why.
type excluded struct{ test, reason string }

// result is what one peer's run came to.
type result struct {
	peer     peer
	passed   []string
	failed   []string
	excluded []excluded
	bubbled  []string // tests run in a testing/synctest bubble, on its fake clock
	problems []string // what stops the run from being trusted: stale deviations, a broken adapter
	elapsed  time.Duration
}

func main() {
	verbose := flag.Bool("v", false, "print the output of every test, not only of those that fail")
	flag.Parse()
	selected := peers
	if flag.NArg() > 0 {
		selected = nil
		for _, name := range flag.Args() {
			p, ok := find(name)
			if !ok {
				fmt.Fprintf(os.Stderr, "runner: no peer %q\n", name)
				os.Exit(2)
			}
			selected = append(selected, p)
		}
	}
	if _, err := os.Stat("go.mod"); err != nil {
		fmt.Fprintln(os.Stderr, "runner: run me from the peertests directory")
		os.Exit(2)
	}
	var results []result
	bad := false
	for _, p := range selected {
		r := run(p, *verbose)
		results = append(results, r)
		if len(r.failed) > 0 || len(r.problems) > 0 {
			bad = true
		}
	}
	if os.Getenv("PEERTESTS_DEBUG") == "" {
		os.RemoveAll("_run")
	}
	summary(os.Stdout, results)
	if bad {
		os.Exit(1)
	}
}

func find(name string) (peer, bool) {
	for _, p := range peers {
		if p.name == name || p.adapter == name {
			return p, true
		}
	}
	return peer{}, false
}

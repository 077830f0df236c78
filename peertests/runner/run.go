package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// peerRun is one peer's run: the state its steps share, in the order run
// takes them.
type peerRun struct {
	peer    peer
	verbose bool
	r       *result // what the run came to so far

	src      string               // the peer's module, in the module cache
	devs     []excluded           // the tests DEVIATIONS.txt leaves out
	bubbled  []excluded           // the tests SYNCTEST.txt runs in a bubble
	work     string               // the temporary copy of the adapter
	fset     *token.FileSet       // the positions of suite
	suite    map[string]*ast.File // the test files, by name
	seen     map[string]bool      // the suite's tests, as fetched
	redis    *redisServer         // the server the suite talks to, if it needs one
	takenOut map[string]string    // the suite's declarations (not tests) taken out as not compiling, and why; "!" first when not for the peer's internals
}

// run runs one peer's tests over its adapter.
func run(p peer, verbose bool) (r result) {
	start := time.Now()
	r.peer = p
	defer func() { r.elapsed = time.Since(start) }()
	fmt.Printf("=== %s %s@%s\n", p.name, p.module, p.version)
	x := &peerRun{peer: p, verbose: verbose, r: &r}
	defer x.close()
	steps := []func() error{x.fetch, x.prepare, x.parseSuite, x.checkLists, x.serveRedis, x.build, x.test}
	for _, step := range steps {
		if err := step(); err != nil {
			// A step that fails stops the run: what it would have
			// checked cannot be trusted.
			x.problem("%v", err)
			break
		}
	}
	return r
}

// problem records what stops the run from being trusted, and prints it.
func (x *peerRun) problem(format string, args ...any) {
	x.r.problems = append(x.r.problems, fmt.Sprintf(format, args...))
	fmt.Println("    " + x.r.problems[len(x.r.problems)-1])
}

// close stops what the run started.
func (x *peerRun) close() {
	if x.redis != nil {
		x.redis.stop()
	}
}

// fetch fetches the peer's module.
func (x *peerRun) fetch() error {
	src, err := download(x.peer.module, x.peer.version)
	if err != nil {
		return fmt.Errorf("fetching the module: %v", err)
	}
	x.src = src
	return nil
}

// prepare reads the adapter's lists of deviations and of bubbled tests, and
// copies the adapter to a clean work directory.
func (x *peerRun) prepare() error {
	var err error
	if x.devs, err = readDeviations(filepath.Join(x.peer.adapter, "DEVIATIONS.txt")); err != nil {
		return err
	}
	if x.bubbled, err = readDeviations(filepath.Join(x.peer.adapter, "SYNCTEST.txt")); err != nil {
		return err
	}
	x.work = filepath.Join("_run", filepath.FromSlash(x.peer.adapter))
	os.RemoveAll(x.work)
	if err := os.MkdirAll(x.work, 0o755); err != nil {
		return err
	}
	if err := copyAdapter(x.peer.adapter, x.work); err != nil {
		return fmt.Errorf("copying the adapter: %v", err)
	}
	return nil
}

// parseSuite parses the peer's test files, points their imports of the
// peer at the adapter, takes out the deviations and puts the tests
// SYNCTEST.txt lists in a bubble.
func (x *peerRun) parseSuite() error {
	x.suite = map[string]*ast.File{}
	x.fset = token.NewFileSet()
	x.seen = map[string]bool{}
	for _, name := range x.peer.files {
		f, err := parser.ParseFile(x.fset, filepath.Join(x.src, filepath.FromSlash(x.peer.dir), name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rewriteImports(f, x.peer.importPath(), thisModule+"/_run/"+x.peer.adapter)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && isTest(fn) {
				x.seen[fn.Name.Name] = true
			}
		}
		for _, d := range x.devs {
			if removeDecl(f, d.test) {
				x.r.excluded = append(x.r.excluded, d)
			}
		}
		for _, b := range x.bubbled {
			if bubble(f, b.test) {
				x.r.bubbled = append(x.r.bubbled, b.test)
			}
		}
		x.suite[name] = f
	}
	return nil
}

// checkLists reports a problem for each test DEVIATIONS.txt or
// SYNCTEST.txt lists that the suite does not have; the run goes on.
func (x *peerRun) checkLists() error {
	for _, d := range x.devs {
		if !x.seen[d.test] {
			x.problem("DEVIATIONS.txt lists %s, which the suite does not have", d.test)
		}
	}
	for _, b := range x.bubbled {
		if !slices.Contains(x.r.bubbled, b.test) {
			x.problem("SYNCTEST.txt lists %s, which the suite does not have (or DEVIATIONS.txt leaves out)", b.test)
		}
	}
	return nil
}

// serveRedis starts a redis-server for a peer that needs one, and points
// the suite at it.
func (x *peerRun) serveRedis() error {
	if !x.peer.redis {
		return nil
	}
	srv, err := startRedis()
	if err != nil {
		return err
	}
	x.redis = srv
	for _, f := range x.suite {
		replaceRedisAddr(f, srv.addr)
	}
	return nil
}

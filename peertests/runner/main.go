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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
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

// run runs one peer's tests over its adapter.
func run(p peer, verbose bool) (r result) {
	start := time.Now()
	r.peer = p
	defer func() { r.elapsed = time.Since(start) }()
	fmt.Printf("=== %s %s@%s\n", p.name, p.module, p.version)
	fail := func(format string, args ...any) result {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
		fmt.Println("    " + r.problems[len(r.problems)-1])
		return r
	}
	src, err := download(p.module, p.version)
	if err != nil {
		return fail("fetching the module: %v", err)
	}
	devs, err := readDeviations(filepath.Join(p.adapter, "DEVIATIONS.txt"))
	if err != nil {
		return fail("%v", err)
	}
	bubbled, err := readDeviations(filepath.Join(p.adapter, "SYNCTEST.txt"))
	if err != nil {
		return fail("%v", err)
	}
	work := filepath.Join("_run", filepath.FromSlash(p.adapter))
	os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fail("%v", err)
	}
	if err := copyAdapter(p.adapter, work); err != nil {
		return fail("copying the adapter: %v", err)
	}
	suite := map[string]*ast.File{}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, name := range p.files {
		f, err := parser.ParseFile(fset, filepath.Join(src, filepath.FromSlash(p.dir), name), nil, parser.ParseComments)
		if err != nil {
			return fail("%v", err)
		}
		rewriteImports(f, p.importPath(), thisModule+"/_run/"+p.adapter)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && isTest(fn) {
				seen[fn.Name.Name] = true
			}
		}
		for _, d := range devs {
			if removeDecl(f, d.test) {
				r.excluded = append(r.excluded, d)
			}
		}
		for _, b := range bubbled {
			if bubble(f, b.test) {
				r.bubbled = append(r.bubbled, b.test)
			}
		}
		suite[name] = f
	}
	for _, d := range devs {
		if !seen[d.test] {
			fail("DEVIATIONS.txt lists %s, which the suite does not have", d.test)
		}
	}
	for _, b := range bubbled {
		if !slices.Contains(r.bubbled, b.test) {
			fail("SYNCTEST.txt lists %s, which the suite does not have (or DEVIATIONS.txt leaves out)", b.test)
		}
	}
	var addr string
	if p.redis {
		srv, err := startRedis()
		if err != nil {
			return fail("%v", err)
		}
		defer srv.stop()
		addr = srv.addr
		for _, f := range suite {
			replaceRedisAddr(f, addr)
		}
	}
	// Compile, and take out what does not compile against the adapter,
	// until the rest does.
	takenOut := map[string]string{} // declarations taken out, and why
	for round := 0; ; round++ {
		if err := writeSuite(fset, suite, work); err != nil {
			return fail("%v", err)
		}
		// Read back what was written, so that positions are the compiler's.
		fset = token.NewFileSet()
		for name := range suite {
			f, err := parser.ParseFile(fset, filepath.Join(work, name), nil, parser.ParseComments)
			if err != nil {
				return fail("%v", err)
			}
			suite[name] = f
		}
		errs, err := compile(work)
		if err != nil {
			return fail("%v", err)
		}
		if len(errs) == 0 {
			break
		}
		if os.Getenv("PEERTESTS_DEBUG") != "" {
			fmt.Println("    round", round, errs)
		}
		if round > 50 {
			return fail("still not compiling after 50 rounds: %v", errs)
		}
		progress := false
		type span struct {
			file     string
			from, to int
		}
		var removed []span // declarations taken out this round
		for _, ce := range errs {
			f := suite[filepath.Base(ce.file)]
			if f == nil {
				return fail("the adapter does not compile: %s", ce)
			}
			if removeImport(fset, f, ce.line, ce.msg) {
				progress = true
				continue
			}
			if slices.ContainsFunc(removed, func(s span) bool {
				return s.file == filepath.Base(ce.file) && s.from <= ce.line && ce.line <= s.to
			}) {
				continue
			}
			d := declAt(fset, f, ce.line)
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
				return fail("an import does not compile: %s", ce)
			}
			if d == nil {
				return fail("does not compile outside any declaration: %s", ce)
			}
			name := declName(d)
			why, internal := classify(ce.msg, takenOut)
			if fn, ok := d.(*ast.FuncDecl); ok && isTest(fn) {
				if !internal {
					r.failed = append(r.failed, name)
					fmt.Printf("    --- FAIL %s: does not compile against the adapter: %s\n", name, why)
				} else {
					r.excluded = append(r.excluded, excluded{name, "internal, not applicable: " + why})
				}
			} else {
				for _, n := range declNames(d) {
					takenOut[n] = why
					if !internal {
						takenOut[n] = "!" + why
					}
				}
			}
			removeDecls(f, d)
			removed = append(removed, span{filepath.Base(ce.file), fset.Position(d.Pos()).Line, fset.Position(d.End()).Line})
			progress = true
		}
		if !progress {
			return fail("compile errors the runner cannot place: %v", errs)
		}
	}
	// Run what compiles.
	cmd := exec.Command("go", "test", "-race", "-count=1", "-json", "-timeout=2m", "./"+filepath.ToSlash(work))
	cmd.Env = os.Environ()
	if addr != "" {
		cmd.Env = append(cmd.Env, "PEERTESTS_REDIS_ADDR="+addr)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	outputs := map[string]*strings.Builder{}
	status := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		top := ev.Test
		if i := strings.IndexByte(top, '/'); i >= 0 {
			top = top[:i]
		}
		if outputs[top] == nil {
			outputs[top] = &strings.Builder{}
		}
		switch ev.Action {
		case "output":
			outputs[top].WriteString(ev.Output)
		case "pass", "fail", "skip":
			if ev.Test == top {
				status[top] = ev.Action
			}
		}
	}
	var names []string
	for n := range outputs {
		if status[n] == "" {
			// Output but no verdict: the test was running when the binary
			// died (a panic elsewhere, the timeout).
			status[n] = "fail"
			outputs[n].WriteString("    (did not finish)\n")
		}
	}
	for n := range status {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch status[n] {
		case "pass":
			r.passed = append(r.passed, n)
			if verbose {
				fmt.Print(outputs[n].String())
			}
		case "skip":
			r.excluded = append(r.excluded, excluded{n, "skipped by the suite itself"})
		default:
			r.failed = append(r.failed, n)
			fmt.Printf("    --- FAIL %s\n", n)
			fmt.Print(indent(outputs[n].String()))
		}
	}
	if len(names) == 0 || cmd.ProcessState == nil || !cmd.ProcessState.Success() && len(r.failed) == 0 {
		// The binary died before a test ended (a panic, a race report in
		// TestMain, a timeout): show why.
		fail("go test did not finish: %s", lastLines(stderr.String(), 30))
	}
	return r
}

// download fetches module@version into the module cache and returns its
// directory.
func download(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: nothing to edit
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if info.Error != "" {
		return "", errors.New(info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v", module, version, err)
	}
	return info.Dir, nil
}

// readDeviations reads a DEVIATIONS.txt: one test a line, "TestName:
// reason"; blank lines and lines starting with # are comments.
func readDeviations(path string) ([]excluded, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var devs []excluded
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want \"TestName: reason\", got %q", path, i+1, line)
		}
		devs = append(devs, excluded{strings.TrimSpace(name), strings.TrimSpace(reason)})
	}
	return devs, nil
}

// copyAdapter copies the adapter's Go files, not its tests, to work.
func copyAdapter(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, n), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func isTest(fn *ast.FuncDecl) bool {
	if fn.Recv != nil {
		return false
	}
	n := fn.Name.Name
	return strings.HasPrefix(n, "Test") && n != "TestMain" || strings.HasPrefix(n, "Example")
}

// rewriteImports points imports of the peer's package at the adapter.
func rewriteImports(f *ast.File, from, to string) {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == from {
			im.Path.Value = strconv.Quote(to)
			if im.Name == nil {
				// The adapter's package has the peer's name, as the last
				// element of the peer's path (without a major version).
				im.Name = ast.NewIdent(pkgName(from))
			}
		}
	}
}

// pkgName guesses a package's name from its import path, as goimports does.
func pkgName(path string) string {
	parts := strings.Split(path, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(last) {
		last = parts[len(parts)-2]
	}
	return strings.ReplaceAll(last, "-", "_")
}

// removeDecl takes the function name out of f, and reports whether f had
// it.
func removeDecl(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
			removeDecls(f, d)
			return true
		}
	}
	return false
}

func removeDecls(f *ast.File, d ast.Decl) {
	for i, x := range f.Decls {
		if x == d {
			f.Decls = append(f.Decls[:i], f.Decls[i+1:]...)
			break
		}
	}
	// Comments inside a removed declaration would be printed out of place.
	keep := f.Comments[:0]
	for _, c := range f.Comments {
		if c.Pos() < d.Pos() || c.End() > d.End() {
			keep = append(keep, c)
		}
	}
	f.Comments = keep
	if fn, ok := d.(*ast.FuncDecl); ok && fn.Doc != nil {
		keep := f.Comments[:0]
		for _, c := range f.Comments {
			if c != fn.Doc {
				keep = append(keep, c)
			}
		}
		f.Comments = keep
	}
	if gd, ok := d.(*ast.GenDecl); ok && gd.Doc != nil {
		keep := f.Comments[:0]
		for _, c := range f.Comments {
			if c != gd.Doc {
				keep = append(keep, c)
			}
		}
		f.Comments = keep
	}
}

// bubble makes the test name run inside a testing/synctest bubble, where
// time is fake and moves only when every goroutine of the bubble waits:
// its sleeps then take no real time, and its verdict does not depend on
// the machine's speed. It reports whether f has the test.
func bubble(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
			continue
		}
		param := fn.Type.Params.List[0]
		t := "t"
		if len(param.Names) == 1 && param.Names[0].Name != "_" {
			t = param.Names[0].Name
		} else {
			param.Names = []*ast.Ident{ast.NewIdent(t)}
		}
		// The new nodes take positions inside the old body, so that the
		// printer leaves the file's comments where they were.
		open, end := fn.Body.Lbrace, fn.Body.Rbrace
		id := func(name string) *ast.Ident { return &ast.Ident{NamePos: open, Name: name} }
		inner := &ast.FuncLit{
			Type: &ast.FuncType{Func: open, Params: &ast.FieldList{Opening: open, Closing: open, List: []*ast.Field{{
				Names: []*ast.Ident{id(t)},
				Type:  &ast.StarExpr{Star: open, X: &ast.SelectorExpr{X: id("testing"), Sel: id("T")}},
			}}}},
			Body: fn.Body,
		}
		call := &ast.CallExpr{
			Fun:    &ast.SelectorExpr{X: id("synctest"), Sel: id("Test")},
			Lparen: open,
			Args:   []ast.Expr{id(t), inner},
			Rparen: end,
		}
		fn.Body = &ast.BlockStmt{Lbrace: open, List: []ast.Stmt{&ast.ExprStmt{X: call}}, Rbrace: end}
		addImport(f, "testing/synctest")
		return true
	}
	return false
}

// addImport adds path to f's imports if it is not there.
func addImport(f *ast.File, path string) {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			return
		}
	}
	spec := &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(path)}}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			gd.Specs = append(gd.Specs, spec)
			if !gd.Lparen.IsValid() {
				gd.Lparen = gd.Pos()
			}
			f.Imports = append(f.Imports, spec)
			return
		}
	}
	f.Decls = append([]ast.Decl{&ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{spec}}}, f.Decls...)
	f.Imports = append(f.Imports, spec)
}

// removeImport takes out the import a compiler error at line says is not
// used, and reports whether it did.
func removeImport(fset *token.FileSet, f *ast.File, line int, msg string) bool {
	if !unusedImportRe.MatchString(msg) {
		return false
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		for i, s := range gd.Specs {
			if fset.Position(s.Pos()).Line == line {
				gd.Specs = append(gd.Specs[:i], gd.Specs[i+1:]...)
				for j, im := range f.Imports {
					if im == s {
						f.Imports = append(f.Imports[:j], f.Imports[j+1:]...)
						break
					}
				}
				return true
			}
		}
	}
	return false
}

// declAt returns f's top-level declaration that holds line.
func declAt(fset *token.FileSet, f *ast.File, line int) ast.Decl {
	for _, d := range f.Decls {
		from, to := fset.Position(d.Pos()).Line, fset.Position(d.End()).Line
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Doc != nil {
			from = fset.Position(fn.Doc.Pos()).Line
		}
		if from <= line && line <= to {
			return d
		}
	}
	return nil
}

func declName(d ast.Decl) string {
	if n := declNames(d); len(n) > 0 {
		return n[0]
	}
	return "?"
}

// declNames returns the names d declares; a method is named Type.Method.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			t := d.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if id, ok := t.(*ast.Ident); ok {
				return []string{id.Name + "." + d.Name.Name}
			}
		}
		return []string{d.Name.Name}
	case *ast.GenDecl:
		var names []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
		return names
	}
	return nil
}

var (
	unusedImportRe = regexp.MustCompile(`imported (as \w+ )?and not used`)
	undefinedRe    = regexp.MustCompile(`undefined: ([\w.]+)`)
	memberRe       = regexp.MustCompile(`has no field or method (\w+)|unknown field (\w+)|cannot refer to unexported (?:field|method|name) (\w+)`)
)

// classify says why a compile error took a declaration out, and whether
// that is because the test reaches into the peer's internals (an
// unexported name, directly or through a declaration of the suite taken out for that) rather
// than because the adapter lacks part of the peer's API.
func classify(msg string, takenOut map[string]string) (string, bool) {
	name := ""
	if m := undefinedRe.FindStringSubmatch(msg); m != nil {
		name = m[1]
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
	} else if m := memberRe.FindStringSubmatch(msg); m != nil {
		name = m[1] + m[2] + m[3]
	}
	if name == "" {
		return msg, false
	}
	if why, ok := takenOut[name]; ok {
		if strings.HasPrefix(why, "!") {
			return "through " + name + " (" + why[1:] + ")", false
		}
		return "through " + name + " (" + why + ")", true
	}
	r := []rune(name)
	if unicode.IsLower(r[0]) || r[0] == '_' {
		return "uses the peer's unexported " + name, true
	}
	return msg, false
}

func writeSuite(fset *token.FileSet, suite map[string]*ast.File, work string) error {
	for name, f := range suite {
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, f); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

type compileError struct {
	file string
	line int
	msg  string
}

func (e compileError) String() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

var errLineRe = regexp.MustCompile(`^(?:\./)?(\S+\.go):(\d+):(?:\d+:)? (.*)$`)

// compile compiles the package's tests, and returns the errors of the
// compiler, all of them (-e).
func compile(work string) ([]compileError, error) {
	cmd := exec.Command("go", "test", "-count=1", "-run=^$", "-gcflags=-e", "-vet=off", "./"+filepath.ToSlash(work))
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil, nil
	}
	var errs []compileError
	for _, line := range strings.Split(string(out), "\n") {
		m := errLineRe.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		errs = append(errs, compileError{file: m[1], line: n, msg: m[3]})
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("go test: %v\n%s", err, out)
	}
	return errs, nil
}

// replaceRedisAddr points the suite's Redis address, port 6379 on any host,
// at the server the runner started.
func replaceRedisAddr(f *ast.File, addr string) {
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasSuffix(s, ":6379") {
				lit.Value = strconv.Quote(addr)
			}
		}
		return true
	})
}

type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free port of 127.0.0.1, saving
// nothing, and waits until it accepts connections.
func startRedis() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found on PATH (Debian/Ubuntu: apt-get install -y redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "peertests-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &redisServer{addr: addr, dir: dir, cmd: cmd}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not start: %v", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *redisServer) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("        " + l)
		}
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// summary prints a table of the runs and the reasons for what was left
// out.
func summary(w *os.File, results []result) {
	fmt.Fprintln(w, "\n--- peers' test suites over the adapters")
	fmt.Fprintf(w, "%-24s %6s %7s %7s %9s %9s %8s\n", "peer", "ran", "passed", "failed", "excluded", "fake time", "time")
	for _, r := range results {
		ran := len(r.passed) + len(r.failed)
		fmt.Fprintf(w, "%-24s %6d %7d %7d %9d %9d %7.1fs\n", r.peer.name, ran, len(r.passed), len(r.failed), len(r.excluded), len(r.bubbled), r.elapsed.Seconds())
	}
	for _, r := range results {
		if len(r.excluded) == 0 && len(r.failed) == 0 && len(r.problems) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", r.peer.name)
		sort.Slice(r.excluded, func(i, j int) bool { return r.excluded[i].test < r.excluded[j].test })
		for _, e := range r.excluded {
			fmt.Fprintf(w, "  excluded %s: %s\n", e.test, e.reason)
		}
		for _, f := range r.failed {
			fmt.Fprintf(w, "  FAILED %s\n", f)
		}
		for _, p := range r.problems {
			fmt.Fprintf(w, "  PROBLEM %s\n", p)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

var (
	undefinedRe = regexp.MustCompile(`undefined: ([\w.]+)`)
	memberRe    = regexp.MustCompile(`has no field or method (\w+)|unknown field (\w+)|cannot refer to unexported (?:field|method|name) (\w+)`)
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

// build compiles the suite, and takes out what does not compile against
// the adapter, until the rest does.
func (x *peerRun) build() error {
	x.takenOut = map[string]string{}
	for round := 0; ; round++ {
		if err := x.writeSuite(); err != nil {
			return err
		}
		errs, err := compile(x.work)
		if err != nil {
			return err
		}
		if len(errs) == 0 {
			return nil
		}
		if os.Getenv("PEERTESTS_DEBUG") != "" {
			fmt.Println("    round", round, errs)
		}
		if round > 50 {
			return fmt.Errorf("still not compiling after 50 rounds: %v", errs)
		}
		progress, err := x.takeOut(errs)
		if err != nil {
			return err
		}
		if !progress {
			return fmt.Errorf("compile errors the runner cannot place: %v", errs)
		}
	}
}

// writeSuite writes the suite to the work directory and reads it back, so
// that positions are the compiler's.
func (x *peerRun) writeSuite() error {
	if err := writeSuite(x.fset, x.suite, x.work); err != nil {
		return err
	}
	x.fset = token.NewFileSet()
	for name := range x.suite {
		f, err := parser.ParseFile(x.fset, filepath.Join(x.work, name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		x.suite[name] = f
	}
	return nil
}

// span is the lines of a declaration taken out.
type span struct {
	file     string
	from, to int
}

// takeOut takes out of the suite the unused imports and the declarations
// that the compiler errors errs name, one declaration for all its errors,
// and reports whether it took out anything.
func (x *peerRun) takeOut(errs []compileError) (progress bool, err error) {
	var removed []span // declarations taken out this round
	for _, ce := range errs {
		file := filepath.Base(ce.file)
		f := x.suite[file]
		if f == nil {
			return progress, fmt.Errorf("the adapter does not compile: %s", ce)
		}
		if removeImport(x.fset, f, ce.line, ce.msg) {
			progress = true
			continue
		}
		if slices.ContainsFunc(removed, func(s span) bool {
			return s.file == file && s.from <= ce.line && ce.line <= s.to
		}) {
			continue
		}
		d := declAt(x.fset, f, ce.line)
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			return progress, fmt.Errorf("an import does not compile: %s", ce)
		}
		if d == nil {
			return progress, fmt.Errorf("does not compile outside any declaration: %s", ce)
		}
		x.takeOutDecl(f, d, ce.msg)
		removed = append(removed, span{file, x.fset.Position(d.Pos()).Line, x.fset.Position(d.End()).Line})
		progress = true
	}
	return progress, nil
}

// takeOutDecl takes d out of f, as the compiler error msg says it does not
// compile: a test is a failure, or left out when it reaches into the
// peer's internals; another declaration is remembered, with why, for the
// tests that use it.
func (x *peerRun) takeOutDecl(f *ast.File, d ast.Decl, msg string) {
	name := declName(d)
	why, internal := classify(msg, x.takenOut)
	if fn, ok := d.(*ast.FuncDecl); ok && isTest(fn) {
		if !internal {
			x.r.failed = append(x.r.failed, name)
			fmt.Printf("    --- FAIL %s: does not compile against the adapter: %s\n", name, why)
		} else {
			x.r.excluded = append(x.r.excluded, excluded{name, "internal, not applicable: " + why})
		}
	} else {
		for _, n := range declNames(d) {
			x.takenOut[n] = why
			if !internal {
				x.takenOut[n] = "!" + why
			}
		}
	}
	removeDecls(f, d)
}

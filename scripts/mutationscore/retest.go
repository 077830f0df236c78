package main

import (
	"context"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Gremlins tests only the mutants on a line a coverage block of the tests
// spans, and Go's coverage puts no block around the expressions of a
// switch's cases: gremlins reports every mutant there as not covered,
// whatever the tests run; and it times a mutant out at three times the
// duration of its coverage run, which the build of a mutant on a busy
// machine can take; and it counts a mutant that does not compile as
// killed. retest tests each mutant reported not covered or timed out
// itself: in a copy of the module, with the mutation applied, it builds
// the package's tests and runs them, as gremlins does for the others. It
// builds the package with each mutant reported killed.

// mutations is gremlins' table: the token each mutator puts in place of
// another.
var mutations = map[string]map[token.Token]token.Token{
	"ARITHMETIC_BASE": {token.ADD: token.SUB, token.MUL: token.QUO, token.QUO: token.MUL,
		token.REM: token.MUL, token.SUB: token.ADD},
	"CONDITIONALS_BOUNDARY": {token.GEQ: token.GTR, token.GTR: token.GEQ, token.LEQ: token.LSS,
		token.LSS: token.LEQ},
	"CONDITIONALS_NEGATION": {token.EQL: token.NEQ, token.GEQ: token.LSS, token.GTR: token.LEQ,
		token.LEQ: token.GTR, token.LSS: token.GEQ, token.NEQ: token.EQL},
	"INCREMENT_DECREMENT": {token.DEC: token.INC, token.INC: token.DEC},
	"INVERT_ASSIGNMENTS": {token.ADD_ASSIGN: token.SUB_ASSIGN, token.MUL_ASSIGN: token.QUO_ASSIGN,
		token.QUO_ASSIGN: token.MUL_ASSIGN, token.SUB_ASSIGN: token.ADD_ASSIGN},
	"INVERT_BITWISE": {token.AND: token.OR, token.OR: token.AND, token.XOR: token.AND,
		token.AND_NOT: token.AND, token.SHL: token.SHR, token.SHR: token.SHL},
	"INVERT_BWASSIGN": {token.AND_ASSIGN: token.OR_ASSIGN, token.OR_ASSIGN: token.AND_ASSIGN,
		token.XOR_ASSIGN: token.AND_ASSIGN, token.AND_NOT_ASSIGN: token.AND_ASSIGN,
		token.SHL_ASSIGN: token.SHR_ASSIGN, token.SHR_ASSIGN: token.SHL_ASSIGN},
	"INVERT_LOGICAL":   {token.LAND: token.LOR, token.LOR: token.LAND},
	"INVERT_LOOPCTRL":  {token.BREAK: token.CONTINUE, token.CONTINUE: token.BREAK},
	"INVERT_NEGATIVES": {token.SUB: token.ADD},
	"REMOVE_SELF_ASSIGNMENTS": {token.ADD_ASSIGN: token.ASSIGN, token.AND_ASSIGN: token.ASSIGN,
		token.AND_NOT_ASSIGN: token.ASSIGN, token.MUL_ASSIGN: token.ASSIGN, token.OR_ASSIGN: token.ASSIGN,
		token.QUO_ASSIGN: token.ASSIGN, token.REM_ASSIGN: token.ASSIGN, token.SHL_ASSIGN: token.ASSIGN,
		token.SHR_ASSIGN: token.ASSIGN, token.SUB_ASSIGN: token.ASSIGN, token.XOR_ASSIGN: token.ASSIGN},
}

// mutate returns src with the operator at line and column (counted from 1,
// in bytes) changed as mutator changes it.
func mutate(src []byte, line, col int, mutator string) ([]byte, error) {
	table, ok := mutations[mutator]
	if !ok {
		return nil, fmt.Errorf("unknown mutator %s", mutator)
	}
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	for {
		pos, tok, _ := s.Scan()
		if tok == token.EOF {
			return nil, fmt.Errorf("no operator at %d:%d", line, col)
		}
		if p := fset.Position(pos); p.Line != line || p.Column != col {
			continue
		}
		to, ok := table[tok]
		if !ok {
			return nil, fmt.Errorf("%s does not change the %s at %d:%d", mutator, tok, line, col)
		}
		off := file.Offset(pos)
		out := append([]byte(nil), src[:off]...)
		out = append(out, to.String()...)
		return append(out, src[off+len(tok.String()):]...), nil
	}
}

// retester runs a package's tests in a copy of its module.
type retester struct {
	tmp     string // holds the copy and the test binary
	root    string // the module's root, as given
	pkg     string // the package's folder, relative to root
	timeout time.Duration
	log     io.Writer
}

// newRetester copies the module that holds the folder dir and runs the
// tests of dir's package there once without a mutant: they must pass, and
// three times their duration, and ten seconds, is a mutant's time limit.
func newRetester(dir string, log io.Writer) (*retester, error) {
	root, err := moduleRoot(dir)
	if err != nil {
		return nil, err
	}
	pkg, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "mutation-")
	if err != nil {
		return nil, err
	}
	r := &retester{tmp: tmp, root: root, pkg: pkg, timeout: time.Hour, log: log}
	if err := copyTree(root, r.copy("")); err != nil {
		r.close()
		return nil, err
	}
	start := time.Now()
	if status := r.test(); status != "LIVED" {
		r.close()
		return nil, fmt.Errorf("the tests of %s do not pass without a mutant (%s)", dir, status)
	}
	r.timeout = 3*time.Since(start) + 10*time.Second
	return r, nil
}

func (r *retester) close() { _ = os.RemoveAll(r.tmp) }

// copy returns the path in the copy of the module of path, relative to its
// root.
func (r *retester) copy(path string) string { return filepath.Join(r.tmp, "module", path) }

// status tests mutant m, whose file is relative to the folder the command
// runs in, and returns its status as gremlins names them: with test, its
// tests' verdict, and without, KILLED if the package builds (gremlins
// counts a mutant that does not build as killed) and NOT VIABLE if not.
func (r *retester) status(m mutant, test bool) (string, error) {
	rel, err := filepath.Rel(r.root, m.file)
	if err != nil {
		return "", err
	}
	file := r.copy(rel)
	src, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	mutated, err := mutate(src, m.line, m.col, m.mutator)
	if err != nil {
		return "", fmt.Errorf("%v: %w", m, err)
	}
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return "", err
	}
	status := "KILLED"
	switch {
	case test:
		status = r.test()
	case !r.builds():
		status = "NOT VIABLE"
	}
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return "", err
	}
	return status, nil
}

// builds reports whether the package builds in the copy.
func (r *retester) builds() bool {
	build := exec.Command("go", "build", "./"+filepath.ToSlash(r.pkg))
	build.Dir = r.copy("")
	return build.Run() == nil
}

// test builds the package's tests in the copy and runs them: NOT VIABLE
// when they do not build, TIMED OUT past the time limit, KILLED when they
// fail and LIVED when they pass.
func (r *retester) test() string {
	bin := filepath.Join(r.tmp, "pkg.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./"+filepath.ToSlash(r.pkg))
	build.Dir = r.copy("")
	if err := build.Run(); err != nil {
		return "NOT VIABLE" // as a string made "a" - "b"
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "-test.failfast", "-test.timeout", (r.timeout + 2*time.Second).String())
	run.Dir = r.copy(r.pkg)
	err := run.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return "TIMED OUT"
	case errors.As(err, &exit):
		return "KILLED"
	case err != nil:
		fmt.Fprintln(r.log, err)
		return "NOT VIABLE"
	}
	return "LIVED"
}

// moduleRoot returns the folder of the go.mod nearest above dir.
func moduleRoot(dir string) (string, error) {
	for d := filepath.Clean(dir); ; d = filepath.Join(d, "..") {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", err
		}
		if filepath.Dir(abs) == abs {
			return "", fmt.Errorf("%s is in no Go module", dir)
		}
	}
}

// copyTree copies the regular files and folders under src to dst, but
// not .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		switch {
		case d.Name() == ".git":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
}

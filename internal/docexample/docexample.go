// Package docexample checks that a module's README and package doc start
// with the code of one of its examples, so that the first code a reader
// sees is code that go test compiles.
package docexample

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// Check fails t unless the first Go code block of README.md and the first
// code block of the package doc in doc.go, both in the current directory,
// are the body of the example function named example in file, up to its
// "// Output:" comment if it has one.
func Check(t testing.TB, file, example string) {
	t.Helper()
	want := exampleBody(t, file, example)
	if want == "" {
		t.Fatalf("%s: %s has an empty body", file, example)
	}
	if got := readmeBlock(t, "README.md"); got != want {
		t.Errorf("README.md's first Go block is not the body of %s in %s:\n%s\nwant:\n%s", example, file, got, want)
	}
	if got := docBlock(t, "doc.go"); got != want {
		t.Errorf("doc.go's first code block is not the body of %s in %s:\n%s\nwant:\n%s", example, file, got, want)
	}
}

// exampleBody returns the lines of the function's body, less one tab of
// indentation, up to an "// Output:" line.
func exampleBody(t testing.TB, file, name string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name || fn.Recv != nil {
			continue
		}
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		var lines []string
		for _, l := range strings.Split(strings.Trim(body, "\n"), "\n") {
			if strings.TrimSpace(l) == "// Output:" {
				break
			}
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		return strings.Join(lines, "\n")
	}
	t.Fatalf("%s: no function %s", file, name)
	return ""
}

// readmeBlock returns the first block fenced as ```go in a Markdown file.
func readmeBlock(t testing.TB, file string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "\n```go\n")
	if !ok {
		return ""
	}
	block, _, _ := strings.Cut(rest, "\n```\n")
	return block
}

// docBlock returns the first code block of a file's package doc: the
// first run of comment lines indented by a tab.
func docBlock(t testing.TB, file string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		code, ok := strings.CutPrefix(l, "//\t")
		if ok {
			lines = append(lines, code)
			continue
		}
		if len(lines) > 0 || strings.HasPrefix(l, "package ") {
			break
		}
	}
	return strings.Join(lines, "\n")
}

package main

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const suiteSrc = `package p

import (
	"testing"
	"time"
)

// util reaches into the peer.
func util() int { return unexported }

func TestA(t *testing.T) { time.Sleep(time.Second) }

// TestB says something.
func TestB(t *testing.T) { _ = util() }

func TestC(_ *testing.T) {}
`

func parse(t *testing.T, src string) (*token.FileSet, *parsed) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return fset, &parsed{f}
}

// parsed is a parsed file that the tests print.
type parsed struct{ f *ast.File }

func (a *parsed) String(t *testing.T, fset *token.FileSet) string {
	t.Helper()
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, a.f); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestRemoveDecl(t *testing.T) {
	tests := []struct {
		name    string
		remove  string
		found   bool
		gone    []string
		present []string
	}{
		{"a test", "TestA", true, []string{"func TestA"}, []string{"func TestB", "// TestB says"}},
		{"a test and its doc", "TestB", true, []string{"func TestB", "TestB says"}, []string{"func TestA"}},
		{"no such test", "TestZ", false, nil, []string{"func TestA", "func TestB", "func TestC"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset, a := parse(t, suiteSrc)
			if got := removeDecl(a.f, tc.remove); got != tc.found {
				t.Errorf("removeDecl(%q) = %v, want %v", tc.remove, got, tc.found)
			}
			out := a.String(t, fset)
			for _, s := range tc.gone {
				if strings.Contains(out, s) {
					t.Errorf("after removeDecl(%q) the file still has %q:\n%s", tc.remove, s, out)
				}
			}
			for _, s := range tc.present {
				if !strings.Contains(out, s) {
					t.Errorf("after removeDecl(%q) the file lost %q:\n%s", tc.remove, s, out)
				}
			}
		})
	}
}

func TestBubble(t *testing.T) {
	tests := []struct {
		name  string
		test  string
		found bool
		want  string
	}{
		{"named parameter", "TestA", true, "func TestA(t *testing.T) { synctest.Test(t, func(t *testing.T) { time.Sleep(time.Second) }) }"},
		{"blank parameter", "TestC", true, "func TestC(t *testing.T) { synctest.Test(t, func(t *testing.T) {}) }"},
		{"no such test", "TestZ", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset, a := parse(t, suiteSrc)
			if got := bubble(a.f, tc.test); got != tc.found {
				t.Fatalf("bubble(%q) = %v, want %v", tc.test, got, tc.found)
			}
			out := a.String(t, fset)
			if !tc.found {
				if strings.Contains(out, "synctest") {
					t.Errorf("bubble(%q) changed the file:\n%s", tc.test, out)
				}
				return
			}
			if !strings.Contains(out, tc.want) || !strings.Contains(out, `"testing/synctest"`) ||
				!strings.Contains(out, "// TestB says something.\nfunc TestB") {
				t.Errorf("bubble(%q) gave\n%s\nwant it to hold\n%s\nimport testing/synctest, and keep TestB's comment", tc.test, out, tc.want)
			}
			if _, err := parser.ParseFile(token.NewFileSet(), "out.go", out, 0); err != nil {
				t.Errorf("bubble(%q) gave a file that does not parse: %v", tc.test, err)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	takenOut := map[string]string{
		"runWait":  "uses the peer's unexported wait",
		"newThing": "!undefined: Thing",
	}
	tests := []struct {
		msg      string
		why      string
		internal bool
	}{
		{"undefined: timeNow", "uses the peer's unexported timeNow", true},
		{"lim.reserveN undefined (type *Limiter has no field or method reserveN)", "uses the peer's unexported reserveN", true},
		{"unknown field tokens in struct literal of type Limiter", "uses the peer's unexported tokens", true},
		{"undefined: runWait", "through runWait (uses the peer's unexported wait)", true},
		{"undefined: newThing", "through newThing (undefined: Thing)", false},
		{"lim.SetLimit undefined (type *Limiter has no field or method SetLimit)", "lim.SetLimit undefined (type *Limiter has no field or method SetLimit)", false},
		{"cannot use x (variable of type int) as string value", "cannot use x (variable of type int) as string value", false},
	}
	for _, tc := range tests {
		why, internal := classify(tc.msg, takenOut)
		if why != tc.why || internal != tc.internal {
			t.Errorf("classify(%q) = %q, %v, want %q, %v", tc.msg, why, internal, tc.why, tc.internal)
		}
	}
}

func TestReadDeviations(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []excluded
		wantErr bool
	}{
		{"comments and blank lines", "# why\n\nTestA: a reason: with a colon\n  TestB :  spaced  \n", []excluded{{"TestA", "a reason: with a colon"}, {"TestB", "spaced"}}, false},
		{"no reason", "TestA\n", nil, true},
		{"empty reason", "TestA:  \n", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "DEVIATIONS.txt")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readDeviations(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("readDeviations() error = %v, want error %v", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("readDeviations() = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("readDeviations()[%d] = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
	if got, err := readDeviations(filepath.Join(t.TempDir(), "none.txt")); got != nil || err != nil {
		t.Errorf("readDeviations(missing file) = %v, %v, want nil, nil", got, err)
	}
}

func TestRewriteImports(t *testing.T) {
	tests := []struct {
		name, src, from, to, want string
	}{
		{"versioned path gets the package's name", "package x_test\n\nimport \"github.com/go-redis/redis_rate/v10\"\n",
			"github.com/go-redis/redis_rate/v10", "example.com/run/redis_rate", `import redis_rate "example.com/run/redis_rate"`},
		{"a name given is kept", "package x_test\n\nimport rl \"golang.org/x/time/rate\"\n",
			"golang.org/x/time/rate", "example.com/run/rate", `import rl "example.com/run/rate"`},
		{"other imports untouched", "package x_test\n\nimport \"fmt\"\n", "golang.org/x/time/rate", "example.com/run/rate", `import "fmt"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset, a := parse(t, tc.src)
			rewriteImports(a.f, tc.from, tc.to)
			if out := a.String(t, fset); !strings.Contains(out, tc.want) {
				t.Errorf("rewriteImports gave\n%s\nwant %s", out, tc.want)
			}
		})
	}
}

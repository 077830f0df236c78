package resilience_test

// This file keeps facts that the README and the doc comments state true.

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faf87a20/resilience"
)

// TestStandardLibraryOnlyAtRunTime: the README and doc.go say the library
// needs only the standard library at run time. Every Go file of the module
// that is not a test (the package, resiliencehttp, internal packages and
// the examples) imports only the standard library and the module itself.
func TestStandardLibraryOnlyAtRunTime(t *testing.T) {
	const module = "github.com/faf87a20/resilience"
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			if strings.Contains(first, ".") && p != module && !strings.HasPrefix(p, module+"/") {
				t.Errorf("%s imports %s, which is not in the standard library", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("read %d files, want the whole module", files)
	}
}

// TestTestDependencies: the README names the library's test dependencies;
// go.mod requires those directly and nothing else.
func TestTestDependencies(t *testing.T) {
	want := []string{"github.com/benbjohnson/clock", "github.com/stretchr/testify", "go.uber.org/goleak"}
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var direct []string
	inRequire := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			inRequire = true
			continue
		case line == ")":
			inRequire = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inRequire:
			continue
		}
		if fields := strings.Fields(line); len(fields) >= 2 && !strings.Contains(line, "// indirect") {
			direct = append(direct, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(direct)
	if !slices.Equal(direct, want) {
		t.Errorf("go.mod requires %v directly, want %v (the README names them)", direct, want)
	}
}

// TestOptionAccepted: Option's doc says which constructors accept it, and
// that NewSlogObserver does not. Every option interface of the package is
// in the table below, so that a new one is decided here.
func TestOptionAccepted(t *testing.T) {
	accepts := map[string]reflect.Type{
		"TimeoutOption":        reflect.TypeFor[resilience.TimeoutOption](),
		"RetryOption":          reflect.TypeFor[resilience.RetryOption](),
		"HedgeOption":          reflect.TypeFor[resilience.HedgeOption](),
		"FallbackOption":       reflect.TypeFor[resilience.FallbackOption](),
		"BreakerOption":        reflect.TypeFor[resilience.BreakerOption](),
		"BulkheadOption":       reflect.TypeFor[resilience.BulkheadOption](),
		"RateLimitOption":      reflect.TypeFor[resilience.RateLimitOption](),
		"KeyedRateLimitOption": reflect.TypeFor[resilience.KeyedRateLimitOption](),
		"BatchOption":          reflect.TypeFor[resilience.BatchOption](),
		"RetryBudgetOption":    reflect.TypeFor[resilience.RetryBudgetOption](),
		"RetryQuotaOption":     reflect.TypeFor[resilience.RetryQuotaOption](),
		"CursorOption":         reflect.TypeFor[resilience.CursorOption](),
		"RepeatOption":         reflect.TypeFor[resilience.RepeatOption](),

		"AdaptiveLimiterOption":   reflect.TypeFor[resilience.AdaptiveLimiterOption](),
		"AdaptiveThrottlerOption": reflect.TypeFor[resilience.AdaptiveThrottlerOption](),
		"ChaosOption":             reflect.TypeFor[resilience.ChaosOption](),
		"SingleflightOption":      reflect.TypeFor[resilience.SingleflightOption](),
		"RegistryOption":          reflect.TypeFor[resilience.RegistryOption](),
		"KeyedOption":             reflect.TypeFor[resilience.KeyedOption](),
	}
	refuses := map[string]reflect.Type{
		"SlogOption": reflect.TypeFor[resilience.SlogOption](),
	}
	option := reflect.TypeFor[resilience.Option]()
	for name, typ := range accepts {
		if !option.Implements(typ) {
			t.Errorf("Option is not a %s", name)
		}
	}
	for name, typ := range refuses {
		if option.Implements(typ) {
			t.Errorf("Option is a %s; its doc says it is not", name)
		}
	}

	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isInterface := ts.Type.(*ast.InterfaceType); !isInterface || !ts.Name.IsExported() || !strings.HasSuffix(ts.Name.Name, "Option") {
					continue
				}
				if accepts[ts.Name.Name] == nil && refuses[ts.Name.Name] == nil {
					t.Errorf("%s: option interface %s is not in this test's tables: does Option satisfy it? Say so in Option's doc and here", path, ts.Name.Name)
				}
			}
		}
	}
}

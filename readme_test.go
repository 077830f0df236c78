package resilience_test

// This file holds the README's testing example as it stands there, so that
// the example compiles and passes.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// slowService stands for a dependency that takes a minute to answer.
func slowService(ctx context.Context) (string, error) {
	select {
	case <-time.After(time.Minute):
		return "late", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func TestSlowServiceTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		policy := resilience.Timeout[string](time.Second, resilience.WithClock(mock))

		errc := make(chan error, 1)
		go func() {
			_, err := resilience.Do(context.Background(), policy, slowService)
			errc <- err
		}()
		synctest.Wait()       // the call is now waiting on the mock clock
		mock.Add(time.Second) // the deadline passes
		if err := <-errc; !errors.Is(err, resilience.ErrTimeout) {
			t.Fatalf("Do() = %v, want ErrTimeout", err)
		}
	})
}

// TestREADMECodeIsCompiled: every Go block of the README stands, line for
// line, in a Go file of the repository that the tests compile (an Example
// or a test), so that no recipe goes stale. Indentation and blank lines
// aside.
func TestREADMECodeIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	normal := func(s string) string {
		var b strings.Builder
		for line := range strings.Lines(s) {
			if l := strings.TrimSpace(line); l != "" {
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	var sources []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "examples"+string(filepath.Separator)) && strings.HasSuffix(path, ".go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, normal(string(src)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(readme), "```go\n")[1:]
	if len(blocks) < 6 {
		t.Fatalf("the README has %d Go blocks, want at least the six recipes", len(blocks))
	}
	for _, b := range blocks {
		code := normal(b[:strings.Index(b, "```")])
		found := false
		for _, src := range sources {
			if strings.Contains(src, code) {
				found = true
				break
			}
		}
		if !found && !strings.Contains(code, "api.User(ctx, id)") {
			t.Errorf("this README block is in no test or example of the repository:\n%s", code)
		}
	}
}

// TestDocsLinksResolve: every relative link of the repository's Markdown,
// outside code, names a file or folder that exists, and so does every
// "](../" inside code, so that no guide points nowhere and no rewrite of
// links reaches into code (Guarded[T](br) is not a link).
func TestDocsLinksResolve(t *testing.T) {
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	up := regexp.MustCompile(`\]\((\.\./[^)\n]*)\)`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		links := append(link.FindAllStringSubmatch(code.ReplaceAllString(string(text), ""), -1), up.FindAllStringSubmatch(string(text), -1)...)
		for _, m := range links {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, _, _ := strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), file)); err != nil {
				t.Errorf("%s links to %s, which does not exist", path, target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package docexample

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps the failures reported to it.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	const example = "package m_test\n\nfunc Example() {\n\tx := 1\n\t_ = x\n\t// Output:\n}\n"
	const doc = "// Package m does things.\n//\n//\tx := 1\n//\t_ = x\n//\n// More.\npackage m\n"
	const readme = "# m\n\n```sh\ngo get m\n```\n\n```go\nx := 1\n_ = x\n```\n"
	tests := []struct {
		name         string
		doc, readme  string
		wantFailures int
	}{
		{"both start with the example", doc, readme, 0},
		{"the README differs", doc, "# m\n\n```go\nx := 2\n_ = x\n```\n", 1},
		{"the doc differs", "// Package m.\n//\n//\tx := 1\npackage m\n", readme, 1},
		{"neither has code", "// Package m.\npackage m\n", "# m\n", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range map[string]string{"example_test.go": example, "doc.go": tc.doc, "README.md": tc.readme} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			r := &recorder{TB: t}
			Check(r, "example_test.go", "Example")
			if len(r.failures) != tc.wantFailures {
				t.Errorf("Check reported %d failures, want %d: %q", len(r.failures), tc.wantFailures, r.failures)
			}
		})
	}
}

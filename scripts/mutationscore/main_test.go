package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const sampleReport = `{"files": [
 {"file_name": "call.go", "mutations": [
  {"line": 10, "column": 3, "type": "CONDITIONALS_NEGATION", "status": "KILLED"},
  {"line": 12, "column": 8, "type": "ARITHMETIC_BASE", "status": "LIVED"},
  {"line": 14, "column": 2, "type": "CONDITIONALS_BOUNDARY", "status": "LIVED"},
  {"line": 16, "column": 5, "type": "INCREMENT_DECREMENT", "status": "TIMED OUT"},
  {"line": 18, "column": 5, "type": "INVERT_NEGATIVES", "status": "NOT VIABLE"},
  {"line": 20, "column": 9, "type": "CONDITIONALS_NEGATION", "status": "NOT COVERED"}
 ]}
]}`

func TestJudge(t *testing.T) {
	var rep report
	if err := json.Unmarshal([]byte(sampleReport), &rep); err != nil {
		t.Fatal(err)
	}
	equiv, err := parseEquivalent(strings.NewReader(`# a comment

resiliencehttp/call.go:14:2 CONDITIONALS_BOUNDARY — the two sides are never equal
resiliencehttp/call.go:99:1 ARITHMETIC_BASE — moved away
resiliencehttp/other.go:1:1 ARITHMETIC_BASE — another file, not in this run
`))
	if err != nil {
		t.Fatal(err)
	}
	res := judge(rep, "resiliencehttp", equiv)

	want := score{file: "resiliencehttp/call.go", killed: 1, lived: 2, timedOut: 1, notCovered: 1, notViable: 1, equivalent: 1}
	if len(res.scores) != 1 || res.scores[0] != want {
		t.Fatalf("judge(…).scores = %+v, want [%+v]", res.scores, want)
	}
	if n, of := want.detected(); n != 2 || of != 5 {
		t.Errorf("detected() = %d/%d, want 2/5", n, of)
	}
	if e := want.efficacy(); e < 33.3 || e > 33.4 {
		t.Errorf("efficacy() = %v, want 33.3", e)
	}
	var survivors []string
	for _, s := range res.new {
		survivors = append(survivors, s.String()+" "+s.status)
	}
	if got, want := strings.Join(survivors, "; "), "resiliencehttp/call.go:12:8 ARITHMETIC_BASE LIVED; resiliencehttp/call.go:20:9 CONDITIONALS_NEGATION NOT COVERED"; got != want {
		t.Errorf("judge(…).new = %s, want %s", got, want)
	}
	if len(res.stale) != 1 || res.stale[0].String() != "resiliencehttp/call.go:99:1 ARITHMETIC_BASE" {
		t.Errorf("judge(…).stale = %v, want the entry of call.go line 99 only", res.stale)
	}

	var out strings.Builder
	res.print(&out)
	for _, s := range []string{"2/5 40.0%", "33.3%", "2 surviving mutants not listed", "1 mutants listed as equivalent did not survive"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("print wrote\n%s\nwant it to contain %q", out.String(), s)
		}
	}
}

func TestParseEquivalentRejects(t *testing.T) {
	tests := []struct{ name, line string }{
		{"no reason", "call.go:1:2 ARITHMETIC_BASE"},
		{"an empty reason", "call.go:1:2 ARITHMETIC_BASE —  "},
		{"no mutator", "call.go:1:2 — why"},
		{"no column", "call.go:1 ARITHMETIC_BASE — why"},
		{"a line of zero", "call.go:0:2 ARITHMETIC_BASE — why"},
		{"listed twice", "call.go:1:2 ARITHMETIC_BASE — why\ncall.go:1:2 ARITHMETIC_BASE — again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseEquivalent(strings.NewReader(tc.line)); err == nil {
				t.Errorf("parseEquivalent(%q) = nil error, want one", tc.line)
			}
		})
	}
}

func TestMutate(t *testing.T) {
	const src = "package p\n\nfunc f(a, b int) bool { return a-b < 0 && -a <= b }\n"
	tests := []struct {
		col     int
		mutator string
		want    string // the changed line, or "" for an error
	}{
		{36, "CONDITIONALS_BOUNDARY", "func f(a, b int) bool { return a-b <= 0 && -a <= b }"},
		{36, "CONDITIONALS_NEGATION", "func f(a, b int) bool { return a-b >= 0 && -a <= b }"},
		{33, "ARITHMETIC_BASE", "func f(a, b int) bool { return a+b < 0 && -a <= b }"},
		{40, "INVERT_LOGICAL", "func f(a, b int) bool { return a-b < 0 || -a <= b }"},
		{43, "INVERT_NEGATIVES", "func f(a, b int) bool { return a-b < 0 && +a <= b }"},
		{46, "CONDITIONALS_BOUNDARY", "func f(a, b int) bool { return a-b < 0 && -a < b }"},
		{35, "CONDITIONALS_BOUNDARY", ""}, // a space
		{36, "INCREMENT_DECREMENT", ""},   // not a mutator of <
		{36, "NO_SUCH_MUTATOR", ""},
	}
	for _, tc := range tests {
		got, err := mutate([]byte(src), 3, tc.col, tc.mutator)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("mutate(3:%d %s) = %q, want an error", tc.col, tc.mutator, got)
		case tc.want != "" && err != nil:
			t.Errorf("mutate(3:%d %s) = %v", tc.col, tc.mutator, err)
		case tc.want != "" && strings.Split(string(got), "\n")[2] != tc.want:
			t.Errorf("mutate(3:%d %s) = %q, want %q", tc.col, tc.mutator, strings.Split(string(got), "\n")[2], tc.want)
		}
	}
}

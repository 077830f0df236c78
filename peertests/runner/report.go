package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// test runs what compiles with go test -race, and records each test's
// verdict.
func (x *peerRun) test() error {
	cmd := exec.Command("go", "test", "-race", "-count=1", "-json", "-timeout=2m", "./"+filepath.ToSlash(x.work))
	cmd.Env = os.Environ()
	if x.redis != nil {
		cmd.Env = append(cmd.Env, "PEERTESTS_REDIS_ADDR="+x.redis.addr)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	outputs, status := readTestEvents(out)
	ran := x.record(outputs, status)
	if ran == 0 || cmd.ProcessState == nil || !cmd.ProcessState.Success() && len(x.r.failed) == 0 {
		// The binary died before a test ended (a panic, a race report in
		// TestMain, a timeout): show why.
		x.problem("go test did not finish: %s", lastLines(stderr.String(), 30))
	}
	return nil
}

// readTestEvents reads go test -json's output: each top-level test's
// output (its subtests' included) and verdict, "pass", "fail" or "skip".
func readTestEvents(out []byte) (outputs map[string]*strings.Builder, status map[string]string) {
	outputs = map[string]*strings.Builder{}
	status = map[string]string{}
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
	for n := range outputs {
		if status[n] == "" {
			// Output but no verdict: the test was running when the binary
			// died (a panic elsewhere, the timeout).
			status[n] = "fail"
			outputs[n].WriteString("    (did not finish)\n")
		}
	}
	return outputs, status
}

// record records the tests' verdicts in the result, in the order of their
// names, prints the output of those that failed (of every test when
// verbose), and returns how many tests have a verdict.
func (x *peerRun) record(outputs map[string]*strings.Builder, status map[string]string) int {
	var names []string
	for n := range status {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch status[n] {
		case "pass":
			x.r.passed = append(x.r.passed, n)
			if x.verbose {
				fmt.Print(outputs[n].String())
			}
		case "skip":
			x.r.excluded = append(x.r.excluded, excluded{n, "skipped by the suite itself"})
		default:
			x.r.failed = append(x.r.failed, n)
			fmt.Printf("    --- FAIL %s\n", n)
			fmt.Print(indent(outputs[n].String()))
		}
	}
	return len(names)
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

package resilience

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTableIsExact checks that a tabled backoff returns, for every n, what
// the backoff it was made from returns, inside the table and beyond it.
func TestTableIsExact(t *testing.T) {
	exp := Exponential(time.Millisecond, 2)
	tests := []struct {
		name  string
		b     Backoff // built as a user would: tabled when fixed
		plain Backoff // the same, built without tables
	}{
		{"cap of exponential", Cap(exp, time.Second), &capped{b: exp, max: time.Second}},
		{"cap of a huge factor", Cap(Exponential(time.Second, 1e9), time.Hour), &capped{b: Exponential(time.Second, 1e9), max: time.Hour}},
		{"max retries of linear", MaxRetries(Linear(time.Second, time.Second), 5), &limited{b: Linear(time.Second, time.Second), n: 5}},
		{"max retries past the table", MaxRetries(Constant(time.Second), 100), &limited{b: Constant(time.Second), n: 100}},
		{"cap of a schedule", Cap(Schedule(1, 2, 3, 4), 3), &capped{b: Schedule(1, 2, 3, 4), max: 3}},
		{"nested", MaxRetries(Cap(Fibonacci(time.Millisecond), time.Minute), 70),
			&limited{b: &capped{b: Fibonacci(time.Millisecond), max: time.Minute}, n: 70}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.b.(*table); !ok {
				t.Fatalf("%T is not tabled", tc.b)
			}
			for _, n := range []int{math.MinInt, -1, 0, 1, 2, 3, 4, 5, 6, 63, 64, 65, 66, 70, 71, 100, 101, math.MaxInt} {
				d, ok := tc.b.Delay(n, time.Second)
				wd, wok := tc.plain.Delay(n, time.Second)
				if d != wd || ok != wok {
					t.Errorf("Delay(%d) = %v, %v; want %v, %v", n, d, ok, wd, wok)
				}
			}
		})
	}
}

// TestJitterSpreadIsExact checks that a jitter decorator reading the bounds
// it computed when built draws the same waits as one that computes them on
// each call.
func TestJitterSpreadIsExact(t *testing.T) {
	inner := Cap(Exponential(time.Millisecond, 3), time.Minute)
	plain := &capped{b: Exponential(time.Millisecond, 3), max: time.Minute}
	for _, kind := range []jitterKind{jitterFull, jitterEqual, jitterSymmetric, jitterUpward} {
		fast := newJitter("test", inner, kind, 0.3)
		slow := &jitter{b: plain, kind: kind, f: 0.3}
		if fast.spread == nil || slow.spread != nil {
			t.Fatalf("kind %d: spread %v and %v", kind, fast.spread != nil, slow.spread != nil)
		}
		a := fast.withRand(rand.New(rand.NewPCG(1, 2)))
		b := slow.withRand(rand.New(rand.NewPCG(1, 2)))
		for n := -1; n < 80; n++ {
			d, ok := a.Delay(n, 0)
			wd, wok := b.Delay(n, 0)
			if d != wd || ok != wok {
				t.Errorf("kind %d: Delay(%d) = %v, %v; want %v, %v", kind, n, d, ok, wd, wok)
			}
		}
	}
}

// TestBackoffTablesAreLazy checks, in a fresh run of the test binary with
// nothing else run, that starting the package built no backoff table:
// SmoothJitter's steps and KubernetesBackoff's waits are computed by their
// first use, Fibonacci's numbers are part of the program's data. The child
// runs under GODEBUG=inittrace=1, and its line for this package is logged.
func TestBackoffTablesAreLazy(t *testing.T) {
	if os.Getenv("RESILIENCE_LAZY_CHILD") == "1" {
		if smoothTable != nil {
			t.Error("SmoothJitter's table was built when the package started")
		}
		for i := range kubeTables {
			if kubeTables[i].Load() != nil {
				t.Fatal("a KubernetesBackoff table was built when the package started")
			}
		}
		if fibonacci[92] != 7540113804746346429 || fibonacci[1] != 1 {
			t.Error("Fibonacci's numbers are not in the program's data")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBackoffTablesAreLazy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RESILIENCE_LAZY_CHILD=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child run: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "init github.com/faf87a20/resilience ") {
			// The line counts the test files' package variables too; none
			// allocates, so any allocation is the package's own, but for
			// the coverage counters' registration under -cover.
			t.Log(strings.TrimSpace(line))
			if testing.CoverMode() == "" && !strings.Contains(line, " 0 bytes, 0 allocs") {
				t.Errorf("importing the package allocates: %s", strings.TrimSpace(line))
			}
		}
	}
}

// TestFibonacciTable checks the written-out numbers against their
// recurrence.
func TestFibonacciTable(t *testing.T) {
	if fibonacci[0] != 0 || fibonacci[1] != 1 || fibonacci[2] != 1 {
		t.Fatalf("fibonacci starts %v", fibonacci[:3])
	}
	for i := 3; i < len(fibonacci); i++ {
		if fibonacci[i] != fibonacci[i-1]+fibonacci[i-2] {
			t.Fatalf("fibonacci[%d] = %d, want %d", i, fibonacci[i], fibonacci[i-1]+fibonacci[i-2])
		}
	}
	if fibonacci[len(fibonacci)-1] <= math.MaxInt64-fibonacci[len(fibonacci)-2] {
		t.Fatal("the table holds every Fibonacci number that fits in an int64")
	}
}

// TestKubeTableMatchesWalk checks the two ways KubernetesBackoff finds a
// wait, its table and the walk it falls back on when the cache has no room,
// against each other, inside the table and past it.
func TestKubeTableMatchesWalk(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 3, 10, time.Millisecond, 1<<53 + 1, math.MaxInt64} {
		for _, f := range []float64{0, 0.5, 1, 1.0000001, 1.1, 1.5, 2, 1e9} {
			for _, steps := range []int{-1, 0, 1, 5, 63, 64, 65, 100, math.MaxInt} {
				for _, c := range []time.Duration{0, 7, time.Second, math.MaxInt64} {
					key := kubeKey{d, f, steps, c}
					tab := newKubeTable(key)
					for n := 1; n <= 200; n++ {
						if got, want := tab.wait(n), key.walk(d, steps, n-1); got != want {
							t.Fatalf("%+v: table gives %v for retry %d, the walk %v", key, got, n, want)
						}
					}
				}
			}
		}
	}
}

// TestKubeCacheFull: with every slot of the cache taken by other values, a
// KubernetesBackoff walks its steps, allocating nothing and evicting
// nothing.
func TestKubeCacheFull(t *testing.T) {
	var saved [len(kubeTables)]*kubeTable
	other := newKubeTable(kubeKey{d: 1, f: 7, steps: 7, cap: 7})
	for i := range kubeTables {
		saved[i] = kubeTables[i].Swap(other)
	}
	defer func() {
		for i := range kubeTables {
			kubeTables[i].Store(saved[i])
		}
	}()
	k := KubernetesBackoff{Duration: 10 * time.Millisecond, Factor: 1.5, Steps: 20, Cap: time.Hour}
	var d time.Duration
	allocs := testing.AllocsPerRun(100, func() { d, _ = k.Delay(11, 0) })
	if allocs != 0 || d != 576650389 {
		t.Errorf("Delay(11) = %v with %v allocations, want 576.650389ms and none", d, allocs)
	}
	for i := range kubeTables {
		if kubeTables[i].Load() != other {
			t.Fatalf("slot %d was evicted", i)
		}
	}
}

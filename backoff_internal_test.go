package resilience

import (
	"math"
	"math/rand/v2"
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

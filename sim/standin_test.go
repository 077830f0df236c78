package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

func TestStandinBudget(t *testing.T) {
	tests := []struct {
		name      string
		ratio     float64
		perSecond float64
		requests  int
		wait      time.Duration
		want      int // retries allowed
	}{
		{"nothing deposited", 0.1, 0, 5, 0, 0},
		{"ratio of requests", 0.1, 0, 50, 0, 5},
		{"floor over time", 0, 2, 0, 3 * time.Second, 6},
		{"both", 0.5, 1, 4, 2 * time.Second, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e engine
			b := newStandinBudget(virtualClock{&e}, tc.ratio, tc.perSecond)
			for range tc.requests {
				b.onRequest()
			}
			e.at(tc.wait, 0, 0)
			e.run(-1, func(uint8, int32) {})
			got := 0
			for b.allowRetry() {
				got++
			}
			if got != tc.want {
				t.Errorf("retries allowed = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestStandinBreaker(t *testing.T) {
	var e engine
	b := &standinBreaker{c: virtualClock{&e}, threshold: 2, coolDown: time.Second}
	ctx := context.Background()
	fail := errors.New("fail")
	step := func(at time.Duration, outcome error, wantOpen bool) {
		t.Helper()
		e.at(at, 0, 0)
		e.run(-1, func(uint8, int32) {})
		done, err := b.Enter(ctx)
		if (err != nil) != wantOpen {
			t.Fatalf("at %v: Enter() = %v, want refused %v", at, err, wantOpen)
		}
		if err != nil {
			if !errors.Is(err, resilience.ErrBreakerOpen) {
				t.Fatalf("at %v: Enter() = %v, want ErrBreakerOpen", at, err)
			}
			return
		}
		done(outcome)
	}
	step(0, fail, false)
	step(0, fail, false)                   // opens
	step(500*time.Millisecond, nil, true)  // cooling down
	step(time.Second, fail, false)         // probe fails: open again
	step(1500*time.Millisecond, nil, true) // cooling down
	step(2*time.Second, nil, false)        // probe succeeds: closed
	step(2*time.Second, fail, false)       // one failure is not enough
	step(2*time.Second, nil, false)
}

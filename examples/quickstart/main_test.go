package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
)

// TestTour runs the whole tour on fake time: every sleep and timer of the
// simulated service and of the policies is instant and exact, so the story
// it prints is the same on every machine.
func TestTour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		if err := tour(context.Background(), &out, ""); err != nil {
			t.Fatalf("tour() = %v", err)
		}
		for _, want := range []string{
			"call 2: resilience: timeout after 50ms (the service ignored its context and is still running)",
			"call 2: gave up after",
			"breaker closed -> open",
			"call 4: refused at once, the service is spared (probe in 80ms)",
			"breaker half-open -> closed",
			"caller 3: refused after 10ms: resilience: bulkhead full",
			"caller 5: served, done after 300ms",
			"backend call 1: ids [1 2 3 4]",
			"each caller got its own answer: user-1 user-2",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the tour's output lacks %q; it was:\n%s", want, out.String())
			}
		}
	})
}

func TestTourUnknownScenario(t *testing.T) {
	err := tour(context.Background(), &bytes.Buffer{}, "nope")
	if err == nil || !strings.Contains(err.Error(), `no scenario named "nope"`) {
		t.Errorf("tour(nope) = %v, want an error naming the scenario", err)
	}
}

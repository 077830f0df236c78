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
			"  level=INFO msg=timeout component=timeout name=service timeout=50ms\ncall 2: resilience: timeout after 50ms (the service ignored its context and is still running)",
			"attempt 1: service unavailable; Retry chose a wait of 15ms (full jitter in [0, 20ms])",
			"call 2: gave up after",
			"attempt 1: busy, try again in 150ms; Retry waits 150ms",
			"call: answer after 150ms",
			"20 calls reached the service 24 times: 20 first attempts and the 4 retries the budget allowed",
			"brownout (3 calls in 10 refused), the default quota: 100 requests, 143 calls, 0 failed",
			"brownout (3 calls in 10 refused), gRPC's throttle: 100 requests, 108 calls, 25 failed",
			"  level=WARN msg=exhausted component=retry-budget name=service attempt=1 error=\"resilience: retry budget exhausted\"\n" +
				"outage: 20 requests, 28 calls; the last one: resilience: retry budget exhausted after 1 attempt (WithBudget or WithoutBudget changes it): service unavailable",
			"  level=WARN msg=state-change component=breaker name=service from=closed to=open\ncall 3: service unavailable",
			"call 4: refused at once, the service is spared (a probe may go in 80ms)",
			"call 8 (probe): answer #5",
			"  level=WARN msg=state-change component=breaker name=service from=half-open to=closed\ncall 8 (probe): answer #5",
			"caller 3: arrived at 20ms, refused at 20ms: resilience: bulkhead full",
			"caller 5: arrived at 40ms, served, done at 300ms",
			"call 4: resilience: rate limited; a token comes in 100ms",
			"call 5: answer #8 at 200ms",
			"alice: allowed false\nbob: allowed true",
			"backend call 1: ids [1 2 3 4]",
			"each caller got its own answer: user-1 user-2",
			"6 keys, 1 backend call",
			"user 4: resilience: key 4 not found",
			"user 3: user-3, in 2 attempt(s); the breaker is closed",
			"call 1: answer from request #2 after 40ms",
			"3 calls made 5 requests: a hedge for each call that landed on the stalled replica",
			"call: cached answer, <nil>",
			"GET: 200 \"hello\" after 1s, 2 requests",
			"second request: 503 Service Unavailable",
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

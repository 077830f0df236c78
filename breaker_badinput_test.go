package resilience_test

import (
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

// TestBreakerBadInput sweeps NewBreaker and every option it takes with
// zero, negative, NaN, infinite, huge, nil and typed-nil values: each is
// refused at construction with a message that names the function, the
// option and the value, or has the meaning its documentation gives (want
// is empty, and the breaker is built).
func TestBreakerBadInput(t *testing.T) {
	const (
		maxD   = time.Duration(math.MaxInt64)
		minD   = time.Duration(math.MinInt64)
		maxInt = math.MaxInt
	)
	inf := math.Inf(1)
	rate := func(r float64, minCalls, calls int) func() resilience.BreakerOption {
		return func() resilience.BreakerOption { return resilience.WithBreakerFailureRate(r, minCalls, calls) }
	}
	window := func(r float64, minCalls int, span time.Duration) func() resilience.BreakerOption {
		return func() resilience.BreakerOption { return resilience.WithBreakerFailureRateWindow(r, minCalls, span) }
	}
	tests := []struct {
		name string
		opt  func() resilience.BreakerOption
		want string
	}{
		{"threshold 0: the rule is off", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(0) }, "resilience: NewBreaker: no rule can open the breaker (failure threshold 0 and no failure rate)"},
		{"threshold negative", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(-1) }, "resilience: WithBreakerThreshold: threshold must not be negative, got -1"},
		{"threshold most negative", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(math.MinInt) }, "resilience: WithBreakerThreshold: threshold must not be negative, got -9223372036854775808"},
		{"threshold huge", func() resilience.BreakerOption { return resilience.WithBreakerThreshold(maxInt) }, ""},

		{"expiry 0", func() resilience.BreakerOption { return resilience.WithBreakerFailureExpiry(0) }, "resilience: WithBreakerFailureExpiry: expiry must be positive, got 0s"},
		{"expiry negative", func() resilience.BreakerOption { return resilience.WithBreakerFailureExpiry(-1) }, "resilience: WithBreakerFailureExpiry: expiry must be positive, got -1ns"},
		{"expiry huge", func() resilience.BreakerOption { return resilience.WithBreakerFailureExpiry(maxD) }, ""},

		{"rate 0", rate(0, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got 0"},
		{"rate negative", rate(-0.5, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got -0.5"},
		{"rate above 1", rate(1.5, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got 1.5"},
		{"rate NaN", rate(nan(), 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got NaN"},
		{"rate +Inf", rate(inf, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got +Inf"},
		{"rate -Inf", rate(-inf, 1, 10), "resilience: WithBreakerFailureRate: rate must be in (0, 1], got -Inf"},
		{"rate 1", rate(1, 1, 10), ""},
		{"calls 0", rate(0.5, 1, 0), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got 0"},
		{"calls negative", rate(0.5, 1, -1), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got -1"},
		{"calls huge", rate(0.5, 1, maxInt), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got 9223372036854775807"},
		{"calls one too many", rate(0.5, 1, 1_000_001), "resilience: WithBreakerFailureRate: calls must be between 1 and 1000000, got 1000001"},
		{"calls at the most", rate(0.5, 1_000_000, 1_000_000), ""},
		{"minCalls 0", rate(0.5, 0, 10), "resilience: WithBreakerFailureRate: minCalls must be between 1 and calls (10), got 0"},
		{"minCalls negative", rate(0.5, -1, 10), "resilience: WithBreakerFailureRate: minCalls must be between 1 and calls (10), got -1"},
		{"minCalls above calls", rate(0.5, 11, 10), "resilience: WithBreakerFailureRate: minCalls must be between 1 and calls (10), got 11"},

		{"window rate NaN", window(nan(), 1, time.Second), "resilience: WithBreakerFailureRateWindow: rate must be in (0, 1], got NaN"},
		{"window rate +Inf", window(inf, 1, time.Second), "resilience: WithBreakerFailureRateWindow: rate must be in (0, 1], got +Inf"},
		{"window rate 0", window(0, 1, time.Second), "resilience: WithBreakerFailureRateWindow: rate must be in (0, 1], got 0"},
		{"window minCalls 0", window(0.5, 0, time.Second), "resilience: WithBreakerFailureRateWindow: minCalls must be at least 1, got 0"},
		{"window minCalls negative", window(0.5, -3, time.Second), "resilience: WithBreakerFailureRateWindow: minCalls must be at least 1, got -3"},
		{"window minCalls huge: that many outcomes first", window(0.5, maxInt, time.Second), ""},
		{"window span 0", window(0.5, 1, 0), "resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got 0s"},
		{"window span negative", window(0.5, 1, minD), "resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got -2562047h47m16.854775808s"},
		{"window span too short", window(0.5, 1, 9), "resilience: WithBreakerFailureRateWindow: span must be at least 10ns, got 9ns"},
		{"window span huge", window(0.5, 1, maxD), ""},

		{"slow 0", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(0) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got 0s"},
		{"slow negative", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(-time.Second) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got -1s"},
		{"slow beyond what is measured", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(144*time.Hour + 1) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got 144h0m0.000000001s"},
		{"slow huge", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(maxD) }, "resilience: WithBreakerSlowCallThreshold: threshold must be in (0, 144h0m0s], got 2562047h47m16.854775807s"},
		{"slow at the most", func() resilience.BreakerOption { return resilience.WithBreakerSlowCallThreshold(144 * time.Hour) }, ""},

		{"cool-down 0: a probe at once", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(0) }, ""},
		{"cool-down negative", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(-1) }, "resilience: WithBreakerCoolDown: d must not be negative, got -1ns"},
		{"cool-down most negative", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(minD) }, "resilience: WithBreakerCoolDown: d must not be negative, got -2562047h47m16.854775808s"},
		{"cool-down huge", func() resilience.BreakerOption { return resilience.WithBreakerCoolDown(maxD) }, ""},
		{"growth nil", func() resilience.BreakerOption { return resilience.WithBreakerCoolDownBackoff(nil) }, "resilience: WithBreakerCoolDownBackoff: backoff is nil"},
		{"growth typed nil", func() resilience.BreakerOption {
			return resilience.WithBreakerCoolDownBackoff(resilience.BackoffFunc(nil))
		}, "resilience: WithBreakerCoolDownBackoff: backoff is a nil resilience.BackoffFunc"},

		{"probes 0", func() resilience.BreakerOption { return resilience.WithBreakerProbes(0) }, "resilience: WithBreakerProbes: probes must be at least 1, got 0"},
		{"probes negative", func() resilience.BreakerOption { return resilience.WithBreakerProbes(-1) }, "resilience: WithBreakerProbes: probes must be at least 1, got -1"},
		{"probes huge", func() resilience.BreakerOption { return resilience.WithBreakerProbes(maxInt) }, ""},
		{"successes 0", func() resilience.BreakerOption { return resilience.WithBreakerSuccessThreshold(0) }, "resilience: WithBreakerSuccessThreshold: successes must be at least 1, got 0"},
		{"successes negative", func() resilience.BreakerOption { return resilience.WithBreakerSuccessThreshold(-1) }, "resilience: WithBreakerSuccessThreshold: successes must be at least 1, got -1"},
		{"successes huge", func() resilience.BreakerOption { return resilience.WithBreakerSuccessThreshold(maxInt) }, ""},

		{"jitter 0: no jitter", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(0) }, ""},
		{"jitter 1", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(1) }, ""},
		{"jitter negative", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(-0.1) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got -0.1"},
		{"jitter above 1", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(1.5) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got 1.5"},
		{"jitter NaN", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(nan()) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got NaN"},
		{"jitter +Inf", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(inf) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got +Inf"},
		{"jitter -Inf", func() resilience.BreakerOption { return resilience.WithBreakerHintJitter(-inf) }, "resilience: WithBreakerHintJitter: fraction must be in [0, 1], got -Inf"},

		{"predicate nil", func() resilience.BreakerOption { return resilience.WithBreakerFailureIf(nil) }, "resilience: WithBreakerFailureIf: predicate is nil"},
		{"clock nil", func() resilience.BreakerOption { return resilience.WithClock(nil) }, "resilience: WithClock: clock is nil"},
		{"clock typed nil", func() resilience.BreakerOption { return resilience.WithClock((*clock.Mock)(nil)) }, "resilience: WithClock: clock is a nil *clock.Mock"},
		{"observer nil", func() resilience.BreakerOption { return resilience.WithObserver(nil) }, "resilience: WithObserver: observer is nil"},
		{"observer typed nil", func() resilience.BreakerOption { return resilience.WithObserver(resilience.ObserverFunc(nil)) }, "resilience: WithObserver: observer is a nil resilience.ObserverFunc"},
		{"name empty: no name", func() resilience.BreakerOption { return resilience.WithName("") }, ""},
		{"option nil", func() resilience.BreakerOption { return nil }, "resilience: NewBreaker: option is nil"},
		{"the zero Option", func() resilience.BreakerOption { return resilience.Option{} }, "resilience: NewBreaker: option is a zero resilience.Option (make one with WithClock, WithObserver or WithName)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := func() { resilience.NewBreaker(resilience.WithClock(clock.NewMock()), tc.opt()) }
			if tc.want == "" {
				assert.NotPanics(t, build)
				return
			}
			assert.PanicsWithValue(t, tc.want, build)
		})
	}
	t.Run("expiry with threshold 0", func(t *testing.T) {
		assert.PanicsWithValue(t, "resilience: NewBreaker: WithBreakerFailureExpiry(1s) has no effect with WithBreakerThreshold(0)", func() {
			resilience.NewBreaker(resilience.WithBreakerThreshold(0), resilience.WithBreakerFailureRate(0.5, 1, 10), resilience.WithBreakerFailureExpiry(time.Second))
		})
	})
}

package resilience_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

// nilErr is an error type whose nil pointer would crash a classifier.
type nilErr struct{}

func (*nilErr) Error() string { return "nil error" }

// TestRetryOptionsSweep feeds every constructor and option of Retry and of
// its budgets zero, negative, NaN, infinite, huge, nil and typed-nil
// values: each is refused at construction with a message naming the
// function, the option and the value, or is accepted with the meaning its
// doc gives (want "").
func TestRetryOptionsSweep(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	inf := math.Inf(1)
	retry := func(opts ...resilience.RetryOption) func() {
		return func() { resilience.Retry[int](opts...) }
	}
	tests := []struct {
		name string
		f    func()
		want string // the panic; "" when the value is accepted
	}{
		{"Retry: nil option", retry(nil), "resilience: Retry: option is nil"},
		{"Retry: no options", retry(), ""},

		{"WithAttempts(0): no limit", retry(resilience.WithAttempts(0)), ""},
		{"WithAttempts(-1)", func() { resilience.WithAttempts(-1) }, "resilience: WithAttempts: attempts must not be negative, got -1"},
		{"WithAttempts(MinInt)", func() { resilience.WithAttempts(math.MinInt) }, "resilience: WithAttempts: attempts must not be negative, got -9223372036854775808"},
		{"WithAttempts(MaxInt)", retry(resilience.WithAttempts(math.MaxInt)), ""},

		{"WithBackoff(nil)", func() { resilience.WithBackoff(nil) }, "resilience: WithBackoff: backoff is nil"},
		{"WithBackoff(typed nil func)", func() { resilience.WithBackoff(resilience.BackoffFunc(nil)) }, "resilience: WithBackoff: backoff is a nil resilience.BackoffFunc"},
		{"WithBackoff(typed nil pointer)", func() { resilience.WithBackoff((*resilience.KubernetesBackoff)(nil)) }, "resilience: WithBackoff: backoff is a nil *resilience.KubernetesBackoff"},

		{"WithMaxElapsed(0): no bound", retry(resilience.WithMaxElapsed(0)), ""},
		{"WithMaxElapsed(-1)", func() { resilience.WithMaxElapsed(-1) }, "resilience: WithMaxElapsed: d must not be negative, got -1ns"},
		{"WithMaxElapsed(huge)", retry(resilience.WithMaxElapsed(huge)), ""},
		{"WithMaxRetryAfter(0): hints ignored", retry(resilience.WithMaxRetryAfter(0)), ""},
		{"WithMaxRetryAfter(-1s)", func() { resilience.WithMaxRetryAfter(-time.Second) }, "resilience: WithMaxRetryAfter: d must not be negative, got -1s"},
		{"WithMaxRetryAfter(huge)", retry(resilience.WithMaxRetryAfter(huge)), ""},

		{"WithOnRetry(nil)", func() { resilience.WithOnRetry(nil) }, "resilience: WithOnRetry: hook is nil"},
		{"WithBudget(nil)", func() { resilience.WithBudget(nil) }, "resilience: WithBudget: budget is nil"},
		{"WithBudget(zero budget)", func() { resilience.WithBudget(&resilience.RetryBudget{}) },
			"resilience: WithBudget: budget is a zero RetryBudget; make one with NewRetryQuota, NewRetryThrottle or NewRetryBudget"},
		{"WithoutBudget", retry(resilience.WithoutBudget()), ""},

		{"WithAbortOn(): changes nothing", retry(resilience.WithAbortOn()), ""},
		{"WithAbortOn(nil)", func() { resilience.WithAbortOn(errFatal, nil) }, "resilience: WithAbortOn: error 1 is nil"},
		{"WithAbortOn(typed nil)", func() { resilience.WithAbortOn((*nilErr)(nil)) }, "resilience: WithAbortOn: error 0 is a nil *resilience_test.nilErr"},
		{"WithRetryOn(): retries nothing", retry(resilience.WithRetryOn()), ""},
		{"WithRetryOn(nil)", func() { resilience.WithRetryOn(nil) }, "resilience: WithRetryOn: error 0 is nil"},
		{"WithRetryOn(typed nil)", func() { resilience.WithRetryOn((*nilErr)(nil)) }, "resilience: WithRetryOn: error 0 is a nil *resilience_test.nilErr"},
		{"WithRetryIf(nil)", func() { resilience.WithRetryIf(nil) }, "resilience: WithRetryIf: predicate is nil"},
		{"WithClassifier(nil)", func() { resilience.WithClassifier(nil) }, "resilience: WithClassifier: classifier is nil"},
		{"WithRetryIfResult(nil)", func() { resilience.WithRetryIfResult[int](nil) }, "resilience: WithRetryIfResult: predicate is nil"},
		{"WithRetryIfResult(other type)", retry(resilience.WithRetryIfResult(func(string) bool { return true })),
			"resilience: WithRetryIfResult: predicate is func(string) bool, but the policy's result type is int"},
		{"WithDiscard(nil)", func() { resilience.WithDiscard[int](nil) }, "resilience: WithDiscard: hook is nil"},
		{"WithDiscard(other type)", retry(resilience.WithDiscard(func(string) {})),
			"resilience: Retry: WithDiscard hook is func(string), but the policy's result type is int"},
		{"WithClock(nil)", func() { resilience.WithClock(nil) }, "resilience: WithClock: clock is nil"},
		{"WithClock(typed nil)", func() { resilience.WithClock((*clock.Mock)(nil)) }, "resilience: WithClock: clock is a nil *clock.Mock"},
		{"WithObserver(nil)", func() { resilience.WithObserver(nil) }, "resilience: WithObserver: observer is nil"},
		{"WithObserver(typed nil)", func() { resilience.WithObserver((*eventLog)(nil)) }, "resilience: WithObserver: observer is a nil *resilience_test.eventLog"},
		{"WithName(\"\")", retry(resilience.WithName("")), ""},

		{"NewRetryBudget(0, 0): never retries", func() { resilience.NewRetryBudget(0, 0) }, ""},
		{"NewRetryBudget(1e-6, 0)", func() { resilience.NewRetryBudget(1e-6, 0) }, ""},
		{"NewRetryBudget(1000, MaxInt)", func() { resilience.NewRetryBudget(1000, math.MaxInt) }, ""},
		{"NewRetryBudget(-0.1)", func() { resilience.NewRetryBudget(-0.1, 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got -0.1"},
		{"NewRetryBudget(1e-7)", func() { resilience.NewRetryBudget(1e-7, 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got 1e-07"},
		{"NewRetryBudget(1001)", func() { resilience.NewRetryBudget(1001, 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got 1001"},
		{"NewRetryBudget(NaN)", func() { resilience.NewRetryBudget(math.NaN(), 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got NaN"},
		{"NewRetryBudget(+Inf)", func() { resilience.NewRetryBudget(inf, 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got +Inf"},
		{"NewRetryBudget(-Inf)", func() { resilience.NewRetryBudget(-inf, 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got -Inf"},
		{"NewRetryBudget(0.1, -1)", func() { resilience.NewRetryBudget(0.1, -1) }, "resilience: NewRetryBudget: minPerSecond must not be negative, got -1"},
		{"NewRetryBudget: nil option", func() { resilience.NewRetryBudget(0.1, 0, nil) }, "resilience: NewRetryBudget: option is nil"},

		{"WithBudgetCapacity(0): only the floor", func() { resilience.NewRetryBudget(0.1, 1, resilience.WithBudgetCapacity(0)) }, ""},
		{"WithBudgetCapacity(1e9)", func() { resilience.NewRetryBudget(1000, 0, resilience.WithBudgetCapacity(1e9)) }, ""},
		{"WithBudgetCapacity(-1)", func() { resilience.WithBudgetCapacity(-1) }, "resilience: WithBudgetCapacity: capacity must be in [0, 1000000000], got -1"},
		{"WithBudgetCapacity(MaxInt)", func() { resilience.WithBudgetCapacity(math.MaxInt) }, "resilience: WithBudgetCapacity: capacity must be in [0, 1000000000], got 9223372036854775807"},

		{"NewRetryThrottle(3, 1e-6)", func() { resilience.NewRetryThrottle(3, 1e-6) }, ""},
		{"NewRetryThrottle(1e9, 1000)", func() { resilience.NewRetryThrottle(1e9, 1000) }, ""},
		{"NewRetryThrottle(2)", func() { resilience.NewRetryThrottle(2, 0.1) }, "resilience: NewRetryThrottle: tokens must be in [3, 1000000000] (fewer never allow a retry), got 2"},
		{"NewRetryThrottle(0)", func() { resilience.NewRetryThrottle(0, 0.1) }, "resilience: NewRetryThrottle: tokens must be in [3, 1000000000] (fewer never allow a retry), got 0"},
		{"NewRetryThrottle(-1)", func() { resilience.NewRetryThrottle(-1, 0.1) }, "resilience: NewRetryThrottle: tokens must be in [3, 1000000000] (fewer never allow a retry), got -1"},
		{"NewRetryThrottle(MaxInt)", func() { resilience.NewRetryThrottle(math.MaxInt, 0.1) }, "resilience: NewRetryThrottle: tokens must be in [3, 1000000000] (fewer never allow a retry), got 9223372036854775807"},
		{"NewRetryThrottle(10, 0)", func() { resilience.NewRetryThrottle(10, 0) }, "resilience: NewRetryThrottle: ratio must be in [1e-06, 1000], got 0"},
		{"NewRetryThrottle(10, -1)", func() { resilience.NewRetryThrottle(10, -1) }, "resilience: NewRetryThrottle: ratio must be in [1e-06, 1000], got -1"},
		{"NewRetryThrottle(10, NaN)", func() { resilience.NewRetryThrottle(10, math.NaN()) }, "resilience: NewRetryThrottle: ratio must be in [1e-06, 1000], got NaN"},
		{"NewRetryThrottle(10, +Inf)", func() { resilience.NewRetryThrottle(10, inf) }, "resilience: NewRetryThrottle: ratio must be in [1e-06, 1000], got +Inf"},
		{"NewRetryThrottle: capacity", func() { resilience.NewRetryThrottle(10, 0.2, resilience.WithBudgetCapacity(5)) },
			"resilience: NewRetryThrottle: WithBudgetCapacity does not apply to a throttle: tokens is its capacity"},
		{"NewRetryThrottle: nil option", func() { resilience.NewRetryThrottle(10, 0.2, nil) }, "resilience: NewRetryThrottle: option is nil"},
		{"NewRetryThrottle: a quota's option", func() { resilience.NewRetryThrottle(10, 0.2, resilience.WithQuotaCost(1)) },
			"resilience: NewRetryThrottle: WithQuotaCost, WithQuotaTimeoutCost and WithQuotaIncrement apply only to NewRetryQuota, not to a throttle"},
		{"NewRetryBudget: a quota's option", func() { resilience.NewRetryBudget(0.1, 0, resilience.WithQuotaIncrement(1)) },
			"resilience: NewRetryBudget: WithQuotaCost, WithQuotaTimeoutCost and WithQuotaIncrement apply only to NewRetryQuota, not to a budget"},

		{"NewRetryQuota(5): a timeout costs 10", func() { resilience.NewRetryQuota(5) },
			"resilience: NewRetryQuota: a retry's cost after a timeout, 10 (WithQuotaTimeoutCost), is more than the capacity, 5: no retry after a timeout would ever be made"},
		{"NewRetryQuota(10)", func() { resilience.NewRetryQuota(10) }, ""},
		{"NewRetryQuota(1e9)", func() {
			resilience.NewRetryQuota(1e9, resilience.WithQuotaCost(1e9), resilience.WithQuotaIncrement(1e9))
		}, ""},
		{"NewRetryQuota(0)", func() { resilience.NewRetryQuota(0) }, "resilience: NewRetryQuota: capacity must be in [1, 1000000000], got 0"},
		{"NewRetryQuota(-1)", func() { resilience.NewRetryQuota(-1) }, "resilience: NewRetryQuota: capacity must be in [1, 1000000000], got -1"},
		{"NewRetryQuota(1e9+1)", func() { resilience.NewRetryQuota(1e9 + 1) }, "resilience: NewRetryQuota: capacity must be in [1, 1000000000], got 1000000001"},
		{"NewRetryQuota: cost past the capacity", func() { resilience.NewRetryQuota(4, resilience.WithQuotaTimeoutCost(4)) },
			"resilience: NewRetryQuota: a retry's cost, 5 (WithQuotaCost), is more than the capacity, 4: no retry would ever be made"},
		{"NewRetryQuota: capacity", func() { resilience.NewRetryQuota(10, resilience.WithBudgetCapacity(5)) },
			"resilience: NewRetryQuota: WithBudgetCapacity does not apply to a quota: capacity is its argument"},
		{"NewRetryQuota: nil option", func() { resilience.NewRetryQuota(10, nil) }, "resilience: NewRetryQuota: option is nil"},
		{"WithQuotaCost(0)", func() { resilience.WithQuotaCost(0) }, "resilience: WithQuotaCost: cost must be in [1e-06, 1000000000] tokens, got 0"},
		{"WithQuotaCost(NaN)", func() { resilience.WithQuotaCost(math.NaN()) }, "resilience: WithQuotaCost: cost must be in [1e-06, 1000000000] tokens, got NaN"},
		{"WithQuotaCost(+Inf)", func() { resilience.WithQuotaCost(inf) }, "resilience: WithQuotaCost: cost must be in [1e-06, 1000000000] tokens, got +Inf"},
		{"WithQuotaTimeoutCost(-1)", func() { resilience.WithQuotaTimeoutCost(-1) }, "resilience: WithQuotaTimeoutCost: cost must be in [1e-06, 1000000000] tokens, got -1"},
		{"WithQuotaTimeoutCost(1e10)", func() { resilience.WithQuotaTimeoutCost(1e10) }, "resilience: WithQuotaTimeoutCost: cost must be in [1e-06, 1000000000] tokens, got 1e+10"},
		{"WithQuotaIncrement(1e-7)", func() { resilience.WithQuotaIncrement(1e-7) }, "resilience: WithQuotaIncrement: increment must be in [1e-06, 1000000000] tokens, got 1e-07"},
		{"WithQuotaIncrement(-Inf)", func() { resilience.WithQuotaIncrement(-inf) }, "resilience: WithQuotaIncrement: increment must be in [1e-06, 1000000000] tokens, got -Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				assert.NotPanics(t, tc.f)
			} else {
				assert.PanicsWithValue(t, tc.want, tc.f)
			}
		})
	}
}

// TestRetryUnknownVerdict: a classifier that returns something other than
// the three verdicts is a bug, named at the call.
func TestRetryUnknownVerdict(t *testing.T) {
	p := resilience.Retry[int](resilience.WithClassifier(func(error) resilience.Verdict { return 7 }))
	fn, calls := script(errFlaky, nil)
	assert.PanicsWithValue(t, "resilience: Retry: classifier returned Verdict(7), want VerdictSucceed, VerdictFail or VerdictRetry", func() {
		_, _ = p.Execute(context.Background(), fn)
	})
	assert.Equal(t, 1, *calls, "no retry on an unknown verdict")
}

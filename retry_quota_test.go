package resilience_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// attemptsOf runs one call of p per script, each attempt of a call
// returning the script's next error (the last one again past its end), and
// returns the attempts each call made.
func attemptsOf(p resilience.Policy[int], scripts ...[]error) []int {
	var got []int
	for _, results := range scripts {
		fn, calls := script(results...)
		_, _ = p.Execute(context.Background(), fn)
		got = append(got, *calls)
	}
	return got
}

// repeat returns n copies of results.
func repeat(n int, results ...error) [][]error {
	s := make([][]error, n)
	for i := range s {
		s[i] = results
	}
	return s
}

// TestRetryQuota: a quota's rule, call by call: a retry takes its cost (5
// by default, 10 after a timeout), a call that succeeds at once gives back
// the increment (1), a retry that succeeds gives back what it took, and the
// capacity bounds it all.
func TestRetryQuota(t *testing.T) {
	flaky := []error{errFlaky}
	ok := []error{nil}
	timedOut := fmt.Errorf("users: %w", resilience.ErrTimeout)
	deadline := fmt.Errorf("users: %w", context.DeadlineExceeded)
	tests := []struct {
		name          string
		quota         *resilience.RetryBudget
		calls         [][]error
		want          []int // attempts per call
		wantAvailable int
	}{
		{"full: capacity / cost", resilience.NewRetryQuota(20), nil, nil, 4},
		{"an outage: the retries 20 tokens pay for, then none", resilience.NewRetryQuota(20),
			repeat(4, flaky...), []int{3, 3, 1, 1}, 0},
		{"a retry that succeeds gives back its cost", resilience.NewRetryQuota(20),
			repeat(3, errFlaky, nil), []int{2, 2, 2}, 4},
		{"only the last retry's cost comes back", resilience.NewRetryQuota(20),
			[][]error{{errFlaky, errFlaky, nil}}, []int{3}, 3},
		{"a success at once gives back 1", resilience.NewRetryQuota(20),
			append(repeat(2, flaky...), repeat(5, ok...)...), []int{3, 3, 1, 1, 1, 1, 1}, 1},
		{"no more than the capacity", resilience.NewRetryQuota(20),
			append([][]error{{errFlaky, nil}}, repeat(10, ok...)...), []int{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 4},
		{"a retry after a timeout costs 10", resilience.NewRetryQuota(20),
			[][]error{{timedOut}, flaky}, []int{3, 1}, 0},
		{"context.DeadlineExceeded is a timeout", resilience.NewRetryQuota(20),
			[][]error{{deadline}, flaky}, []int{3, 1}, 0},
		{"a retry after a timeout that succeeds gives back 10", resilience.NewRetryQuota(20),
			[][]error{{timedOut, nil}, {errFlaky, errFlaky, errFlaky}}, []int{2, 3}, 2},
		{"a timeout needs 10 tokens", resilience.NewRetryQuota(20),
			[][]error{{errFlaky, errFlaky, errFlaky}, {errFlaky, timedOut, nil}}, []int{3, 2}, 1},
		{"other costs and increment", resilience.NewRetryQuota(20, resilience.WithQuotaCost(2), resilience.WithQuotaTimeoutCost(4), resilience.WithQuotaIncrement(0.5)),
			append([][]error{flaky, {timedOut}}, repeat(4, ok...)...), []int{3, 3, 1, 1, 1, 1}, 5},
		{"costs held to nine decimals", resilience.NewRetryQuota(1, resilience.WithQuotaCost(0.333333333), resilience.WithQuotaTimeoutCost(1), resilience.WithQuotaIncrement(0.000001)),
			append(repeat(2, flaky...), repeat(2, ok...)...), []int{3, 2, 1, 1}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := resilience.Retry[int](resilience.WithBudget(tc.quota), zeroWait)
			assert.Equal(t, tc.want, attemptsOf(p, tc.calls...))
			assert.Equal(t, tc.wantAvailable, tc.quota.Available())
		})
	}
	t.Run("errors not retried and the caller's cancellation take nothing", func(t *testing.T) {
		q := resilience.NewRetryQuota(10)
		p := resilience.Retry[int](resilience.WithBudget(q), zeroWait, resilience.WithAbortOn(errFatal))
		attemptsOf(p, repeat(20, errFatal)...)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for range 20 {
			_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) { return 0, ctx.Err() })
		}
		assert.Equal(t, 2, q.Available())
	})
	t.Run("a rejected result retried into an accepted one gives back the cost", func(t *testing.T) {
		q := resilience.NewRetryQuota(10)
		n := 0
		p := resilience.Retry[int](resilience.WithBudget(q), zeroWait, resilience.WithRetryIfResult(func(v int) bool { return v%2 == 1 }))
		for range 3 {
			_, err := p.Execute(context.Background(), func(context.Context) (int, error) { n++; return n, nil })
			require.NoError(t, err)
		}
		assert.Equal(t, 6, n, "each call retried once")
		assert.Equal(t, 2, q.Available())
	})
	t.Run("shared by policies of different types", func(t *testing.T) {
		q := resilience.NewRetryQuota(20)
		ints := resilience.Retry[int](resilience.WithBudget(q), zeroWait)
		strs := resilience.Retry[string](resilience.WithBudget(q), zeroWait)
		assert.Equal(t, []int{3}, attemptsOf(ints, flaky))
		assert.Equal(t, []int{3, 1}, attemptsPer(t, 2, strs, func(context.Context) (string, error) { return "", errFlaky }))
		assert.Equal(t, 0, q.Available())
	})
}

// TestRetryDefaultQuota: with no budget given, a Retry keeps a quota of its
// own, per policy value: NewRetryQuota(40).
func TestRetryDefaultQuota(t *testing.T) {
	t.Run("an outage: the retries of 40 tokens, then none", func(t *testing.T) {
		p := resilience.Retry[int](zeroWait)
		assert.Equal(t, []int{3, 3, 3, 3, 1, 1}, attemptsPer(t, 6, p, down))
	})
	t.Run("each policy value has its own", func(t *testing.T) {
		a, b := resilience.Retry[int](zeroWait), resilience.Retry[int](zeroWait)
		attemptsPer(t, 5, a, down)
		assert.Equal(t, []int{3, 3}, attemptsPer(t, 2, b, down))
		assert.Equal(t, []int{1}, attemptsPer(t, 1, a, down))
	})
	t.Run("a Retry built per call limits nothing", func(t *testing.T) {
		for range 6 {
			assert.Equal(t, []int{3}, attemptsPer(t, 1, resilience.Retry[int](zeroWait), down))
		}
	})
	t.Run("20% of calls failing: every failure retried", func(t *testing.T) {
		p := resilience.Retry[int](zeroWait)
		n := 0
		often := func(context.Context) (int, error) {
			if n++; n%5 == 0 {
				return 0, errFlaky
			}
			return n, nil
		}
		for i, a := range attemptsPer(t, 1000, p, often) {
			require.LessOrEqual(t, a, 2, "request %d", i)
		}
		assert.Equal(t, []int{3, 3, 3, 3, 1}, attemptsPer(t, 5, p, down), "full: 40 tokens")
	})
	t.Run("WithoutBudget turns it off", func(t *testing.T) {
		p := resilience.Retry[int](zeroWait, resilience.WithoutBudget())
		for i, a := range attemptsPer(t, 100, p, down) {
			require.Equal(t, 3, a, "request %d", i)
		}
	})
	t.Run("the refusal error says what changes it", func(t *testing.T) {
		p := resilience.Retry[int](zeroWait)
		attemptsPer(t, 4, p, down)
		_, err := p.Execute(context.Background(), down)
		assert.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
		assert.ErrorIs(t, err, errFlaky)
		assert.EqualError(t, err, "resilience: retry budget exhausted after 1 attempt (WithBudget or WithoutBudget changes it): flaky")
	})
	t.Run("an open breaker's refusal comes first", func(t *testing.T) {
		br := resilience.NewBreaker()
		p := resilience.Compose(resilience.Retry[int](zeroWait, resilience.WithMaxRetryAfter(0)), resilience.Guarded[int](br))
		attemptsPer(t, 2, p, down) // 5 failures open the breaker; 4 retries of 8 spent
		_, err := p.Execute(context.Background(), down)
		assert.EqualError(t, err, "resilience: circuit breaker open (gave up after 3 attempts: retries exhausted)")
		attemptsPer(t, 1, p, down) // the last 2 retries
		_, err = p.Execute(context.Background(), down)
		assert.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
		assert.ErrorIs(t, err, resilience.ErrBreakerOpen)
		assert.EqualError(t, err, "resilience: circuit breaker open (gave up after 1 attempt: retry budget exhausted; WithBudget or WithoutBudget changes it)")
	})
}

// TestRetryQuotaIndependentFailures: 10,000 calls through Retry() with
// WithAttempts(3), each attempt failing on its own with a fixed chance,
// drawn from a seeded source so that every policy meets the same failures,
// on synctest's fake clock. The default quota retries them as if it were
// not there: at most 0.2% of the calls fail at 10% failures, 1.5% at 20%,
// 5% at 30%, with no more attempts than without a budget; the throttle it
// replaced turns retries off above about 17%.
func TestRetryQuotaIndependentFailures(t *testing.T) {
	const calls = 10000
	tests := []struct {
		rate      float64
		maxFailed int
	}{{0.1, 20}, {0.2, 150}, {0.3, 500}}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%.0f%%", 100*tc.rate), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(100*tc.rate)))
			fails := make([][3]bool, calls)
			for i := range fails {
				for k := range fails[i] {
					fails[i][k] = r.Float64() < tc.rate
				}
			}
			run := func(opts ...resilience.RetryOption) (failed, attempts int) {
				synctest.Test(t, func(t *testing.T) {
					backoff := resilience.UseRand(resilience.FullJitter(resilience.Cap(resilience.Exponential(100*time.Millisecond, 2), 10*time.Second)),
						rand.New(rand.NewPCG(2, 3)))
					p := resilience.Retry[int](append([]resilience.RetryOption{resilience.WithAttempts(3), resilience.WithBackoff(backoff)}, opts...)...)
					for i := range fails {
						k := 0
						_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
							k++
							if fails[i][k-1] {
								return 0, errFlaky
							}
							return k, nil
						})
						attempts += k
						if err != nil {
							failed++
						}
					}
				})
				return failed, attempts
			}
			failed, attempts := run()
			freeFailed, freeAttempts := run(resilience.WithoutBudget())
			throttleFailed, throttleAttempts := run(resilience.WithBudget(resilience.NewRetryThrottle(10, 0.2)))
			t.Logf("%.0f%% failures, %d calls: failed %d (%.2f×) with the default quota, %d (%.2f×) without a budget, %d (%.2f×) with the throttle",
				100*tc.rate, calls, failed, float64(attempts)/calls, freeFailed, float64(freeAttempts)/calls, throttleFailed, float64(throttleAttempts)/calls)
			assert.LessOrEqual(t, failed, tc.maxFailed, "calls failed with the default quota")
			assert.LessOrEqual(t, attempts, freeAttempts, "attempts with the default quota, at most those without a budget")
			assert.Greater(t, throttleFailed, failed, "calls failed with the throttle, more than with the default quota")
			if tc.rate >= 0.2 {
				assert.LessOrEqual(t, throttleAttempts, calls+calls/50, "attempts with the throttle: retries about off")
			}
		})
	}
}

// TestRetryQuotaEvents: a quota reports each retry it refuses, and once
// each when it runs out and when it allows a retry again, with how long it
// refused.
func TestRetryQuotaEvents(t *testing.T) {
	type ev = resilience.Event
	const name = "users"
	exhausted := func(n int) ev {
		return ev{Kind: resilience.EventExhausted, Component: resilience.KindRetryBudget, Name: name, Attempt: n, Err: resilience.ErrRetryBudgetExhausted}
	}
	refused := func(n int) ev {
		return ev{Kind: resilience.EventRefused, Component: resilience.KindRetryBudget, Name: name, Attempt: n, Err: resilience.ErrRetryBudgetExhausted}
	}
	replenished := func(n int, d time.Duration) ev {
		return ev{Kind: resilience.EventReplenished, Component: resilience.KindRetryBudget, Name: name, Attempt: n, Duration: d}
	}
	t.Run("a shared quota, to its own observer", func(t *testing.T) {
		log, clk := &recorder{}, newManualClock()
		q := resilience.NewRetryQuota(10, resilience.WithObserver(log), resilience.WithName(name), resilience.WithClock(clk))
		p := resilience.Retry[int](resilience.WithBudget(q), zeroWait)
		attemptsPer(t, 3, p, down) // 2 retries, then refused twice
		clk.Add(3 * time.Second)
		attemptsPer(t, 5, p, up) // 5 tokens: one retry
		attemptsPer(t, 2, p, down)
		assert.Equal(t, []ev{exhausted(1), refused(1), refused(1), replenished(1, 3*time.Second), exhausted(2), refused(2), refused(1)}, log.events)
	})
	t.Run("a Retry's own, to the Retry's observer", func(t *testing.T) {
		log := &recorder{}
		p := resilience.Retry[int](resilience.WithObserver(log), resilience.WithName(name), zeroWait)
		attemptsPer(t, 6, p, down)
		var got []ev
		for _, e := range log.events {
			if e.Component == resilience.KindRetryBudget {
				got = append(got, e)
			}
		}
		assert.Equal(t, []ev{exhausted(1), refused(1), refused(1)}, got)
	})
}

// TestSlogObserverLogsQuotaOncePerChange: a SlogObserver logs a retry
// quota's running out once, at Warn, and its allowing retries again once,
// at Info, however many calls it refuses between; each refusal, and each
// give-up it caused, is Debug.
func TestSlogObserverLogsQuotaOncePerChange(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			var buf bytes.Buffer
			p := resilience.Retry[int](resilience.WithObserver(resilience.NewSlogObserver(textLogger(&buf, level))), resilience.WithName("users"), zeroWait)
			attemptsPer(t, 20, p, down) // 8 retries, then 16 calls refused
			attemptsPer(t, 50, p, up)   // full again
			attemptsPer(t, 20, p, down)
			count := func(s string) int { return strings.Count(buf.String(), s) }
			assert.Equal(t, 2, count("level=WARN msg=exhausted component=retry-budget name=users"), buf.String())
			assert.Equal(t, 1, count("level=INFO msg=replenished component=retry-budget name=users"))
			assert.Equal(t, 8, count("level=WARN msg=give-up"), "the calls whose attempts ran out")
			budgetGaveUp := `msg=give-up component=retry name=users attempt=1 error=flaky reason="resilience: retry budget exhausted"`
			refusals := 32 // 16 calls a round
			if level == slog.LevelInfo {
				refusals = 0
			}
			assert.Equal(t, refusals, count("level=DEBUG "+budgetGaveUp))
			assert.Equal(t, refusals, count("level=DEBUG msg=refused component=retry-budget"))
		})
	}
}

// TestRetryRefundsRetryNeverMade: a caller who leaves during the wait
// before a retry gets back what the retry took from a quota or a budget:
// the retry was never made. A throttle keeps its count of the failure,
// which happened. The wait is on the injected clock, which never ends it:
// the caller leaves as the retry is announced.
func TestRetryRefundsRetryNeverMade(t *testing.T) {
	timedOut := fmt.Errorf("users: %w", resilience.ErrTimeout)
	tests := []struct {
		name          string
		budget        func() *resilience.RetryBudget
		err           error
		wantAvailable int // after the call
	}{
		{"a quota", func() *resilience.RetryBudget { return resilience.NewRetryQuota(20) }, errFlaky, 4},
		{"a quota, after a timeout", func() *resilience.RetryBudget { return resilience.NewRetryQuota(20) }, timedOut, 4},
		{"a budget", func() *resilience.RetryBudget { return resilience.NewRetryBudget(1, 0) }, errFlaky, 1},
		{"a throttle keeps the failure", func() *resilience.RetryBudget { return resilience.NewRetryThrottle(10, 1) }, errFlaky, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.budget()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := resilience.Retry[int](resilience.WithBudget(b), resilience.WithClock(newManualClock()),
				onRetry(func(int, error, time.Duration) { cancel() }))
			fn, calls := script(tc.err)
			_, err := p.Execute(ctx, fn)
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, 1, *calls, "calls of fn")
			assert.Equal(t, tc.wantAvailable, b.Available(), "retries available after the call")
		})
	}
}

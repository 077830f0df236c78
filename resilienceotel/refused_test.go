package resilienceotel_test

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// alwaysRand draws 0: a throttle refuses whenever its ratio is above 0.
type alwaysRand struct{}

func (alwaysRand) Uint64() uint64 { return 0 }

// TestRefusalOutcomes: each guard kind's refusal of a call, observed with
// outcomes, is recorded as outcome refused (never failure), and counted in
// resilience.refusals under the guard's own reason.
func TestRefusalOutcomes(t *testing.T) {
	ctx := context.Background()
	up := func(context.Context) (int, error) { return 1, nil }
	tests := []struct {
		name      string
		component string
		// refusing returns a guard, observed by o, that refuses its next
		// call, and what frees what the test holds of it.
		refusing func(t *testing.T, o resilience.Option) (resilience.Guard, func())
		reason   string
	}{
		{"breaker open", "breaker", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			b := resilience.NewBreaker(o, resilience.WithName("g"), resilience.WithBreakerThreshold(1))
			b.Trip()
			return b, func() {}
		}, "breaker_open"},
		{"breaker half-open, probes busy", "breaker", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			b := resilience.NewBreaker(o, resilience.WithName("g"), resilience.WithBreakerThreshold(1),
				resilience.WithBreakerCoolDown(time.Second))
			b.Trip()
			time.Sleep(time.Second + time.Millisecond)
			probe, err := b.Enter(ctx)
			require.NoError(t, err)
			return b, func() { probe(nil) }
		}, "breaker_open"},
		{"bulkhead full", "bulkhead", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			b := resilience.NewBulkhead(1, o, resilience.WithName("g"))
			require.True(t, b.TryAcquire())
			return b, b.Release
		}, "bulkhead_full"},
		{"rate limiter", "rate-limiter", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			l := resilience.NewRateLimiter(1e-6, 1, o, resilience.WithName("g"))
			require.True(t, l.Allow())
			return l, func() {}
		}, "rate_limited"},
		{"keyed rate limiter", "keyed-rate-limiter", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			l := resilience.NewKeyedRateLimiter[string](1e-6, 1, o, resilience.WithName("g"))
			require.True(t, l.Allow("k"))
			return l.Guard(func(context.Context) string { return "k" }), func() {}
		}, "rate_limited"},
		{"adaptive limiter", "adaptive-limiter", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			l := resilience.NewAdaptiveLimiter(o, resilience.WithName("g"), resilience.WithAdaptiveLimits(1, 1), resilience.WithAdaptiveInitial(1))
			done, err := l.Enter(resilience.WithPriority(ctx, resilience.PriorityCritical))
			require.NoError(t, err)
			return l, func() { done(nil) }
		}, "limit_exceeded"},
		{"adaptive throttler", "adaptive-throttler", func(t *testing.T, o resilience.Option) (resilience.Guard, func()) {
			th := resilience.NewAdaptiveThrottler(o, resilience.WithName("g"), resilience.WithRand(alwaysRand{}))
			for range 19 { // the service accepts no call: the ratio rises above 0
				done, err := th.Enter(ctx)
				require.NoError(t, err)
				done(context.DeadlineExceeded)
			}
			return th, func() {}
		}, "throttled"},
	}
	// The layers around the guard: the outermost that reports outcomes
	// reports the call (the guards other than a bulkhead report none of a
	// refusal), with the refusal as its error.
	layers := []struct {
		name      string
		component string
		outer     func(o resilience.Option) resilience.Policy[int]
	}{
		{"under a Timeout", "timeout", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Timeout[int](time.Minute, o, resilience.WithName("call"))
		}},
		{"under a Retry", "retry", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Retry[int](o, resilience.WithName("call"), resilience.WithAttempts(2),
				resilience.WithBackoff(resilience.Constant(time.Millisecond)), resilience.WithWaitForBreaker())
		}},
	}
	for _, tc := range tests {
		for _, layer := range layers {
			t.Run(tc.name+"/"+layer.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newHarness(t)
					o := resilience.WithObserver(h.obs)
					g, release := tc.refusing(t, o)
					defer release()
					// Only what the refused call records: what making the
					// guard refuse recorded is left out.
					before := h.metrics(t)
					_, err := resilience.Compose(layer.outer(o), resilience.Guarded[int](g)).Execute(ctx, up)
					require.ErrorIs(t, err, resilience.ErrRefused)
					got := moved(before, h.metrics(t))
					for k := range got {
						assert.NotContains(t, k, "outcome=failure")
						assert.NotContains(t, k, "reason=other")
					}
					assert.Equal(t, 1.0, got["resilience.call.duration.count{component="+layer.component+",name=call,outcome=refused}"], "the call in %v", got)
					assert.GreaterOrEqual(t, got["resilience.refusals{component="+tc.component+",name=g,reason="+tc.reason+"}"], 1.0, "the refusals in %v", got)
					if layer.component == "retry" {
						assert.Equal(t, 2.0, got["resilience.attempts{component=retry,name=call,outcome=refused}"], "the attempts in %v", got)
					}
				})
			})
		}
	}
}

// moved returns the data points of after that are not in before, or whose
// value changed, by how much.
func moved(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// userRefusal is a refusal of a guard of the user's own: it matches
// resilience.ErrRefused and nothing else.
type userRefusal struct{}

func (userRefusal) Error() string        { return "quota: refused" }
func (userRefusal) Is(target error) bool { return target == resilience.ErrRefused }

// TestOutcomeOfErrors: the outcome and the reason each error gives a call
// and a refusal: a refusal is refused before anything else it matches (a
// rate limiter's for tokens past the deadline is no timeout), and a Retry
// that gave up on a refused attempt was refused.
func TestOutcomeOfErrors(t *testing.T) {
	// A rate limiter's refusal for a token that comes after the deadline.
	var pastDeadline error
	synctest.Test(t, func(t *testing.T) {
		lim := resilience.NewRateLimiter(1, 1, resilience.WithRateLimitWait(time.Hour))
		require.True(t, lim.Allow())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, pastDeadline = lim.Enter(ctx)
	})
	require.ErrorIs(t, pastDeadline, resilience.ErrRateLimited)
	require.ErrorIs(t, pastDeadline, context.DeadlineExceeded)

	tests := []struct {
		name    string
		err     error
		outcome string
		reason  string
	}{
		{"breaker open", resilience.ErrBreakerOpen, "refused", "breaker_open"},
		{"bulkhead full", resilience.ErrBulkheadFull, "refused", "bulkhead_full"},
		{"rate limited", resilience.ErrRateLimited, "refused", "rate_limited"},
		{"rate limited past the deadline", pastDeadline, "refused", "rate_limited"},
		{"adaptive limit", resilience.ErrLimitExceeded, "refused", "limit_exceeded"},
		{"throttled", resilience.ErrThrottled, "refused", "throttled"},
		{"a guard of the user's", userRefusal{}, "refused", "other"},
		{"a retry that gave up on a refusal",
			&resilience.RetryError{Attempts: 3, Last: resilience.ErrThrottled, Reason: resilience.ErrRetriesExhausted}, "refused", "retries_exhausted"},
		{"a retry budget's refusal", resilience.ErrRetryBudgetExhausted, "refused", "budget_exhausted"},
		{"a retry that gave up on failures",
			&resilience.RetryError{Attempts: 3, Last: io.EOF, Reason: resilience.ErrRetriesExhausted}, "failure", "retries_exhausted"},
		{"a timeout", resilience.ErrTimeout, "timeout", "timeout"},
		{"a deadline", context.DeadlineExceeded, "timeout", "deadline_exceeded"},
		{"cancelled", context.Canceled, "canceled", "canceled"},
		{"a failure", io.EOF, "failure", "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.obs.Observe(context.Background(), resilience.Event{Kind: resilience.EventCallEnded, Component: "c", Name: "n", Err: tc.err})
			h.obs.Observe(context.Background(), resilience.Event{Kind: resilience.EventRefused, Component: "c", Name: "n", Err: tc.err})
			got := h.metrics(t)
			assert.Equal(t, 1.0, got["resilience.call.duration.count{component=c,name=n,outcome="+tc.outcome+"}"], "%v", got)
			assert.Equal(t, 1.0, got["resilience.refusals{component=c,name=n,reason="+tc.reason+"}"], "%v", got)
		})
	}
}

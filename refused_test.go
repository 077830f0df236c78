package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// refusingGuard is a guard of each kind made to refuse its next call, the
// sentinel of its own that the refusal matches, and the message it has.
type refusingGuard struct {
	name string
	// guard returns a guard that refuses its next call, and what frees what
	// the test holds of it afterwards.
	guard    func(t *testing.T, mock *clock.Mock) (g resilience.Guard, release func())
	sentinel error
	msg      string
}

// refusingGuards has every guard kind of the package in a state to refuse.
func refusingGuards() []refusingGuard {
	ctx := context.Background()
	none := func() {}
	return []refusingGuard{
		{"breaker open", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1))
			b.Trip()
			return b, none
		}, resilience.ErrBreakerOpen, "resilience: circuit breaker open"},
		{"breaker half-open, probes busy", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(1),
				resilience.WithBreakerCoolDown(time.Second), resilience.WithBreakerProbes(1))
			done, err := b.Enter(ctx)
			require.NoError(t, err)
			done(io.EOF) // the threshold: open
			mock.Add(time.Second)
			probe, err := b.Enter(ctx)
			require.NoError(t, err, "the probe")
			require.Equal(t, resilience.BreakerHalfOpen, b.State())
			return b, func() { probe(nil) }
		}, resilience.ErrBreakerOpen, "resilience: circuit breaker half-open, probes busy"},
		{"bulkhead full", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			b := resilience.NewBulkhead(1, resilience.WithClock(mock))
			require.True(t, b.TryAcquire())
			return b, b.Release
		}, resilience.ErrBulkheadFull, "resilience: bulkhead full"},
		{"rate limiter", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			l := resilience.NewRateLimiter(1, 1, resilience.WithClock(mock))
			require.True(t, l.Allow())
			return l, none
		}, resilience.ErrRateLimited, "resilience: rate limited"},
		{"keyed rate limiter", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			l := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(mock))
			require.True(t, l.Allow("k"))
			return l.Guard(func(context.Context) string { return "k" }), none
		}, resilience.ErrRateLimited, "resilience: rate limited"},
		{"adaptive limiter", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(mock), resilience.WithAdaptiveLimits(1, 1), resilience.WithAdaptiveInitial(1))
			done, err := l.Enter(resilience.WithPriority(ctx, resilience.PriorityCritical))
			require.NoError(t, err)
			return l, func() { done(nil) }
		}, resilience.ErrLimitExceeded, "resilience: adaptive limit exceeded"},
		{"adaptive throttler", func(t *testing.T, mock *clock.Mock) (resilience.Guard, func()) {
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(mock), resilience.WithRand(alwaysRand{}))
			for range 19 { // the service accepts no call: the ratio rises above 0
				done, err := th.Enter(ctx)
				require.NoError(t, err)
				done(context.DeadlineExceeded)
			}
			return th, none
		}, resilience.ErrThrottled, "resilience: throttled"},
	}
}

// TestGuardRefusalsMatchErrRefused: every guard kind's refusal, through
// Guarded, never reaches fn and matches ErrRefused and its own sentinel,
// and no other guard's, with the message it always had.
func TestGuardRefusalsMatchErrRefused(t *testing.T) {
	sentinels := []error{resilience.ErrBreakerOpen, resilience.ErrBulkheadFull, resilience.ErrRateLimited,
		resilience.ErrLimitExceeded, resilience.ErrThrottled}
	for _, tc := range refusingGuards() {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			g, release := tc.guard(t, mock)
			defer release()
			called := false
			_, err := resilience.Do(context.Background(), resilience.Guarded[int](g), func(context.Context) (int, error) {
				called = true
				return 1, nil
			})
			require.Error(t, err)
			assert.False(t, called, "fn ran")
			assert.ErrorIs(t, err, resilience.ErrRefused)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.EqualError(t, err, tc.msg)
			for _, s := range sentinels {
				if s != tc.sentinel {
					assert.NotErrorIs(t, err, s)
				}
			}
			assert.ErrorIs(t, fmt.Errorf("users: %w", err), resilience.ErrRefused, "wrapped")
		})
	}
}

// TestErrRefusedSentinels: the guards' sentinels match ErrRefused and
// none another, keep their messages, and the other errors of the package
// and the context's are no refusals; ErrRefused matches no guard's.
func TestErrRefusedSentinels(t *testing.T) {
	refusals := []struct {
		err error
		msg string
	}{
		{resilience.ErrBreakerOpen, "resilience: circuit breaker open"},
		{resilience.ErrBulkheadFull, "resilience: bulkhead full"},
		{resilience.ErrRateLimited, "resilience: rate limited"},
		{resilience.ErrLimitExceeded, "resilience: adaptive limit exceeded"},
		{resilience.ErrThrottled, "resilience: throttled"},
	}
	for _, r := range refusals {
		t.Run(r.msg, func(t *testing.T) {
			assert.EqualError(t, r.err, r.msg)
			assert.ErrorIs(t, r.err, resilience.ErrRefused)
			assert.NotErrorIs(t, resilience.ErrRefused, r.err)
			for _, other := range refusals {
				if other.err != r.err {
					assert.False(t, errors.Is(r.err, other.err), "errors.Is(%v, %v)", r.err, other.err)
				}
			}
		})
	}
	notRefusals := []error{
		resilience.ErrTimeout, resilience.ErrRetriesExhausted, resilience.ErrRetryBudgetExhausted,
		resilience.ErrBatcherClosed, resilience.ErrBatchResults, resilience.ErrNotFound,
		context.Canceled, context.DeadlineExceeded, io.EOF,
		&resilience.RetryError{Attempts: 2, Last: io.EOF, Reason: resilience.ErrRetryBudgetExhausted},
		&resilience.PanicError{Value: "x"},
	}
	for _, err := range notRefusals {
		assert.False(t, errors.Is(err, resilience.ErrRefused), "errors.Is(%v, ErrRefused)", err)
	}
	assert.EqualError(t, resilience.ErrRefused, "resilience: refused")
}

// TestRefusalConsumers: the package's consumers of refusals ask
// ErrRefused, so every guard kind's refusal is one to each: a Retry that
// gave up on a refused attempt names the refusal first, and the
// throttler's default predicate counts it as not accepted.
func TestRefusalConsumers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range refusingGuards() {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			g, release := tc.guard(t, mock)
			defer release()
			_, refusal := g.Enter(ctx)
			require.ErrorIs(t, refusal, resilience.ErrRefused)

			re := &resilience.RetryError{Attempts: 3, Last: refusal, Reason: resilience.ErrRetriesExhausted}
			assert.ErrorIs(t, re, resilience.ErrRefused, "a give-up on a refused attempt")
			assert.True(t, strings.HasPrefix(re.Error(), tc.msg+" (gave up after 3 attempts"), "RetryError = %q", re.Error())

			// A throttle told of nothing but this refusal: with no call
			// accepted, its ratio is above 0 and it refuses (alwaysRand).
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clock.NewMock()), resilience.WithRand(alwaysRand{}))
			for range 19 {
				done, err := th.Enter(ctx)
				require.NoError(t, err)
				done(fmt.Errorf("attempt: %w", noHint{refusal}))
			}
			_, err := th.Enter(ctx)
			assert.ErrorIs(t, err, resilience.ErrThrottled, "the refusals counted as accepted")
		})
	}
}

// noHint hides the retry hint of the error it wraps, so that a test sees
// the throttler's predicate take it for a refusal by what it matches, not
// by its hint.
type noHint struct{ err error }

func (e noHint) Error() string        { return e.err.Error() }
func (e noHint) Is(target error) bool { return errors.Is(e.err, target) }

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

var (
	errFlaky = errors.New("flaky")
	errFatal = errors.New("fatal")
)

// script returns a fn whose attempt i (from 0) returns results[i] (the last
// one again past the end), and a pointer to the number of calls.
func script(results ...error) (resilience.Func[int], *int) {
	calls := 0
	return func(context.Context) (int, error) {
		err := results[min(calls, len(results)-1)]
		calls++
		return calls, err
	}, &calls
}

// linearWaits is a backoff of n·100ms, exact, for tests.
var linearWaits = resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
	return time.Duration(n) * 100 * time.Millisecond, true
})

// hinted is an error that asks for a wait, as an HTTP 429 would.
type hinted struct{ after time.Duration }

func (h hinted) Error() string             { return "slow down" }
func (h hinted) RetryAfter() time.Duration { return h.after }

func TestRetry(t *testing.T) {
	tests := []struct {
		name      string
		opts      []resilience.RetryOption
		results   []error
		wantCalls int
		wantWaits []time.Duration
		wantIs    []error // each must match the returned error
		wantNotIs []error
		wantErr   error // when set, the error must be exactly this
		wantOK    bool
	}{
		{name: "first attempt succeeds", results: []error{nil}, wantCalls: 1, wantOK: true},
		{name: "fail, fail, succeed", results: []error{errFlaky, errFlaky, nil}, wantCalls: 3,
			wantWaits: []time.Duration{100 * ms, 200 * ms}, wantOK: true},
		{name: "exhausted", results: []error{errFlaky, errFlaky, io.ErrUnexpectedEOF}, wantCalls: 3,
			wantWaits: []time.Duration{100 * ms, 200 * ms}, wantIs: []error{resilience.ErrRetriesExhausted, io.ErrUnexpectedEOF}},
		{name: "one attempt makes no retry", opts: []resilience.RetryOption{resilience.WithAttempts(1)},
			results: []error{errFlaky}, wantCalls: 1, wantIs: []error{resilience.ErrRetriesExhausted, errFlaky}},
		{name: "unlimited attempts, no throttle", opts: []resilience.RetryOption{resilience.WithAttempts(0), resilience.WithBackoff(resilience.Constant(ms)), resilience.WithoutBudget()},
			results: []error{errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, nil}, wantCalls: 7,
			wantWaits: []time.Duration{ms, ms, ms, ms, ms, ms}, wantOK: true},
		{name: "unlimited attempts: the default quota stops after eight retries", opts: []resilience.RetryOption{resilience.WithAttempts(0), resilience.WithBackoff(resilience.Constant(ms))},
			results: []error{errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, nil}, wantCalls: 9,
			wantWaits: []time.Duration{ms, ms, ms, ms, ms, ms, ms, ms}, wantIs: []error{resilience.ErrRetryBudgetExhausted, errFlaky}},
		{name: "abort-on list", opts: []resilience.RetryOption{resilience.WithAbortOn(errFatal)},
			results: []error{errFlaky, errFatal}, wantCalls: 2, wantWaits: []time.Duration{100 * ms}, wantErr: errFatal},
		{name: "retry-on list retries listed errors", opts: []resilience.RetryOption{resilience.WithRetryOn(errFlaky)},
			results: []error{errFlaky, nil}, wantCalls: 2, wantWaits: []time.Duration{100 * ms}, wantOK: true},
		{name: "retry-on list returns others", opts: []resilience.RetryOption{resilience.WithRetryOn(errFlaky)},
			results: []error{errFatal}, wantCalls: 1, wantErr: errFatal},
		{name: "predicate", opts: []resilience.RetryOption{resilience.WithRetryIf(func(err error) bool { return errors.Is(err, errFlaky) })},
			results: []error{errFlaky, errFatal}, wantCalls: 2, wantWaits: []time.Duration{100 * ms}, wantErr: errFatal},
		{name: "permanent error is returned unwrapped", results: []error{errFlaky, resilience.Permanent(errFatal)}, wantCalls: 2,
			wantWaits: []time.Duration{100 * ms}, wantErr: errFatal},
		{name: "backoff that stops ends the retries", opts: []resilience.RetryOption{resilience.WithAttempts(0), resilience.WithBackoff(resilience.Schedule(ms, 2*ms))},
			results: []error{errFlaky}, wantCalls: 3, wantWaits: []time.Duration{ms, 2 * ms}, wantIs: []error{resilience.ErrRetriesExhausted, errFlaky}},
		{name: "RetryAfter hint sets the wait", results: []error{hinted{3 * time.Second}, nil}, wantCalls: 2,
			wantWaits: []time.Duration{3 * time.Second}, wantOK: true},
		{name: "RetryAfter hint is capped", results: []error{hinted{time.Hour}, nil}, wantCalls: 2,
			wantWaits: []time.Duration{10 * time.Second}, wantOK: true},
		{name: "RetryAfter hint capped by option", opts: []resilience.RetryOption{resilience.WithMaxRetryAfter(time.Second)},
			results: []error{hinted{time.Hour}, nil}, wantCalls: 2, wantWaits: []time.Duration{time.Second}, wantOK: true},
		{name: "RetryAfter hints ignored", opts: []resilience.RetryOption{resilience.WithMaxRetryAfter(0)},
			results: []error{hinted{time.Hour}, nil}, wantCalls: 2, wantWaits: []time.Duration{100 * ms}, wantOK: true},
		{name: "max elapsed: no wait past it", opts: []resilience.RetryOption{resilience.WithAttempts(0),
			resilience.WithBackoff(resilience.Constant(time.Second)), resilience.WithMaxElapsed(2500 * ms)},
			results: []error{errFlaky}, wantCalls: 3, wantWaits: []time.Duration{time.Second, time.Second},
			wantIs: []error{resilience.ErrRetriesExhausted, errFlaky}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var waits []time.Duration
				opts := append([]resilience.RetryOption{
					resilience.WithBackoff(linearWaits),
					onRetry(func(_ int, _ error, d time.Duration) { waits = append(waits, d) }),
				}, tc.opts...)
				fn, calls := script(tc.results...)
				start := time.Now()
				v, err := resilience.Do(context.Background(), resilience.Retry[int](opts...), fn)
				elapsed := time.Since(start)

				assert.Equal(t, tc.wantCalls, *calls, "calls")
				assert.Equal(t, tc.wantWaits, waits, "waits announced")
				var total time.Duration
				for _, w := range waits {
					total += w
				}
				assert.Equal(t, total, elapsed, "time waited")
				switch {
				case tc.wantOK:
					require.NoError(t, err)
					assert.Equal(t, tc.wantCalls, v)
				case tc.wantErr != nil:
					assert.Equal(t, tc.wantErr, err)
				default:
					for _, target := range tc.wantIs {
						assert.ErrorIs(t, err, target)
					}
					var re *resilience.RetryError
					require.ErrorAs(t, err, &re)
					assert.Equal(t, tc.wantCalls, re.Attempts)
				}
			})
		})
	}
}

func TestRetryResultPredicate(t *testing.T) {
	notReady := func(v int) bool { return v < 3 }
	p := resilience.Retry[int](resilience.WithRetryIfResult(notReady), resilience.WithBackoff(resilience.Constant(0)))
	fn, calls := script(nil)
	v, err := p.Execute(context.Background(), fn)
	require.NoError(t, err)
	assert.Equal(t, 3, v)
	assert.Equal(t, 3, *calls)

	p = resilience.Retry[int](resilience.WithRetryIfResult(func(int) bool { return true }), resilience.WithBackoff(resilience.Constant(0)))
	fn, _ = script(nil)
	v, err = p.Execute(context.Background(), fn)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	assert.Equal(t, 3, v, "the last result comes back with the error")
	assert.EqualError(t, err, "resilience: retries exhausted after 3 attempts: result rejected")

	assert.PanicsWithValue(t, "resilience: WithRetryIfResult: predicate is func(string) bool, but the policy's result type is int", func() {
		resilience.Retry[int](resilience.WithRetryIfResult(func(string) bool { return true }))
	})
}

// TestRetryContextEndsDuringWait: the error matches ctx's error and keeps
// the last attempt's error, and is not ErrRetriesExhausted.
func TestRetryContextEndsDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(10*time.Second, cancel)
		fn, calls := script(io.ErrUnexpectedEOF)
		start := time.Now()
		_, err := resilience.Do(ctx, resilience.Retry[int](resilience.WithBackoff(resilience.Constant(time.Minute))), fn)
		assert.Equal(t, 10*time.Second, time.Since(start), "returns as soon as ctx ends")
		assert.Equal(t, 1, *calls)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, resilience.ErrRetriesExhausted)
	})
}

// TestRetryNeverSleepsIntoTheDeadline: a wait that would end past the
// caller's deadline is not begun; the retry gives up at once.
func TestRetryNeverSleepsIntoTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fn, calls := script(io.ErrUnexpectedEOF, io.ErrUnexpectedEOF)
		p := resilience.Retry[int](resilience.WithBackoff(resilience.Schedule(time.Second, time.Minute)))
		start := time.Now()
		_, err := resilience.Do(ctx, p, fn)
		assert.Equal(t, time.Second, time.Since(start), "the first wait fits; the second would pass the deadline")
		assert.Equal(t, 2, *calls)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	})
}

func TestRetryCallerContextEndedIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	_, err := resilience.Do(ctx, resilience.Retry[int](), func(ctx context.Context) (int, error) {
		calls++
		return 0, ctx.Err()
	})
	assert.Equal(t, context.Canceled, err)
	assert.Equal(t, 1, calls)
}

// TestRetryMockClock drives the waits with an injected clock.Mock.
func TestRetryMockClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		p := resilience.Retry[int](resilience.WithClock(mock), resilience.WithBackoff(resilience.Constant(time.Hour)))
		fn, calls := script(errFlaky, nil)
		done := make(chan error, 1)
		go func() {
			_, err := p.Execute(context.Background(), fn)
			done <- err
		}()
		synctest.Wait()
		assert.Equal(t, 1, *calls, "waiting on the mock clock")
		mock.Add(time.Hour)
		require.NoError(t, <-done)
		assert.Equal(t, 2, *calls)
	})
}

func TestRetryOnRetryHook(t *testing.T) {
	type call struct {
		attempt int
		err     error
		wait    time.Duration
	}
	var got []call
	p := resilience.Retry[int](resilience.WithBackoff(resilience.Constant(0)),
		onRetry(func(a int, err error, d time.Duration) { got = append(got, call{a, err, d}) }))
	fn, _ := script(errFlaky)
	_, _ = p.Execute(context.Background(), fn)
	assert.Equal(t, []call{{1, errFlaky, 0}, {2, errFlaky, 0}}, got, "never after the last attempt")
}

func TestRetryBadOptions(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative attempts", func() { resilience.WithAttempts(-1) }, "resilience: WithAttempts: attempts must not be negative, got -1"},
		{"nil backoff", func() { resilience.WithBackoff(nil) }, "resilience: WithBackoff: backoff is nil"},
		{"negative max elapsed", func() { resilience.WithMaxElapsed(-time.Second) }, "resilience: WithMaxElapsed: d must not be negative, got -1s"},
		{"negative max retry-after", func() { resilience.WithMaxRetryAfter(-1) }, "resilience: WithMaxRetryAfter: d must not be negative, got -1ns"},
		{"nil budget", func() { resilience.WithBudget(nil) }, "resilience: WithBudget: budget is nil"},
		{"nil error in list", func() { resilience.WithAbortOn(errFatal, nil) }, "resilience: WithAbortOn: error 1 is nil"},
		{"nil predicate", func() { resilience.WithRetryIf(nil) }, "resilience: WithRetryIf: predicate is nil"},
		{"nil option", func() { resilience.Retry[int](nil) }, "resilience: Retry: option is nil"},
		{"budget ratio", func() { resilience.NewRetryBudget(-0.1, 0) }, "resilience: NewRetryBudget: ratio must be 0 or in [1e-06, 1000], got -0.1"},
		{"budget floor", func() { resilience.NewRetryBudget(0.1, -1) }, "resilience: NewRetryBudget: minPerSecond must not be negative, got -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestRetryErrorMessage: a give-up's message names its cause first. When a
// guard refused the last attempt, the refusal comes first; when the retry
// budget refused the retry, the message says which options change it.
func TestRetryErrorMessage(t *testing.T) {
	open := resilience.NewBreaker(resilience.WithBreakerThreshold(1))
	open.Trip()
	_, refusal := resilience.Do(context.Background(), resilience.Guarded[int](open), func(context.Context) (int, error) { return 0, nil })
	require.ErrorIs(t, refusal, resilience.ErrBreakerOpen)
	tests := []struct {
		name string
		err  *resilience.RetryError
		want string
	}{
		{"attempts spent", &resilience.RetryError{Attempts: 3, Last: io.EOF, Reason: resilience.ErrRetriesExhausted},
			"resilience: retries exhausted after 3 attempts: EOF"},
		{"one attempt", &resilience.RetryError{Attempts: 1, Last: io.EOF, Reason: resilience.ErrRetriesExhausted},
			"resilience: retries exhausted after 1 attempt: EOF"},
		{"a rejected result", &resilience.RetryError{Attempts: 2, Reason: resilience.ErrRetriesExhausted},
			"resilience: retries exhausted after 2 attempts: result rejected"},
		{"the budget refused", &resilience.RetryError{Attempts: 2, Last: errFlaky, Reason: resilience.ErrRetryBudgetExhausted},
			"resilience: retry budget exhausted after 2 attempts (WithBudget or WithoutBudget changes it): flaky"},
		{"a breaker refused, the budget too", &resilience.RetryError{Attempts: 1, Last: refusal, Reason: resilience.ErrRetryBudgetExhausted},
			"resilience: circuit breaker open (gave up after 1 attempt: retry budget exhausted; WithBudget or WithoutBudget changes it)"},
		{"a breaker refused every attempt", &resilience.RetryError{Attempts: 3, Last: refusal, Reason: resilience.ErrRetriesExhausted},
			"resilience: circuit breaker open (gave up after 3 attempts: retries exhausted)"},
		{"a bulkhead refused", &resilience.RetryError{Attempts: 3, Last: resilience.ErrBulkheadFull, Reason: resilience.ErrRetriesExhausted},
			"resilience: bulkhead full (gave up after 3 attempts: retries exhausted)"},
		{"a rate limiter refused", &resilience.RetryError{Attempts: 2, Last: fmt.Errorf("users: %w", resilience.ErrRateLimited), Reason: resilience.ErrRetryBudgetExhausted},
			"users: resilience: rate limited (gave up after 2 attempts: retry budget exhausted; WithBudget or WithoutBudget changes it)"},
		{"the context ended", &resilience.RetryError{Attempts: 2, Last: refusal, Reason: context.Canceled},
			"context canceled after 2 attempts: resilience: circuit breaker open"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.EqualError(t, tc.err, tc.want)
			assert.ErrorIs(t, tc.err, tc.err.Reason)
		})
	}
}

// TestRetryBudgetOutage: in a full outage, a 10% budget keeps the calls to
// fn within 1.1 times the calls made without retrying, plus the floor.
func TestRetryBudgetOutage(t *testing.T) {
	const requests, floor = 10000, 10
	mock := clock.NewMock() // time stands still: the floor gives 10 retries in all
	budget := resilience.NewRetryBudget(0.1, floor, resilience.WithClock(mock))
	ints := resilience.Retry[int](resilience.WithBudget(budget), resilience.WithBackoff(resilience.Constant(0)), resilience.WithAttempts(3))
	strs := resilience.Retry[string](resilience.WithBudget(budget), resilience.WithBackoff(resilience.Constant(0)), resilience.WithAttempts(3))
	calls := 0
	var refused int
	for i := range requests {
		var err error
		if i%2 == 0 {
			_, err = ints.Execute(context.Background(), func(context.Context) (int, error) { calls++; return 0, errFlaky })
		} else {
			_, err = strs.Execute(context.Background(), func(context.Context) (string, error) { calls++; return "", errFlaky })
		}
		require.ErrorIs(t, err, errFlaky)
		if errors.Is(err, resilience.ErrRetryBudgetExhausted) {
			refused++
		}
	}
	t.Logf("outage: %d requests, %d calls to fn (%.3fx), %d retries refused by the budget", requests, calls, float64(calls)/requests, refused)
	assert.LessOrEqual(t, calls, requests*11/10+floor)
	assert.Greater(t, calls, requests, "the budget allows some retries")
	assert.Greater(t, refused, requests/2)
}

func TestRetryBudgetFloorRefills(t *testing.T) {
	mock := clock.NewMock()
	b := resilience.NewRetryBudget(0, 2, resilience.WithClock(mock))
	assert.Equal(t, 2, b.Available())
	p := resilience.Retry[int](resilience.WithBudget(b), resilience.WithBackoff(resilience.Constant(0)), resilience.WithAttempts(2))
	fail := func(context.Context) (int, error) { return 0, errFlaky }
	for range 2 {
		_, err := p.Execute(context.Background(), fail)
		assert.ErrorIs(t, err, resilience.ErrRetriesExhausted, "the floor pays for the retry")
	}
	_, err := p.Execute(context.Background(), fail)
	assert.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
	mock.Add(500 * time.Millisecond) // half a second refills one retry
	assert.Equal(t, 1, b.Available())
	_, err = p.Execute(context.Background(), fail)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
}

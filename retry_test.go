package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestRetryCallerContextEndedIsNotRetried: an attempt that returns once the
// caller's context has ended is not retried, and its error comes back as fn
// returned it, whether that is the context's error or one of fn's own.
func TestRetryCallerContextEndedIsNotRetried(t *testing.T) {
	tests := []struct {
		name         string
		endedBefore  bool // the context ends before the call, else during the first attempt
		attemptError func(ctx context.Context) error
		want         error
	}{
		{"ended before, fn returns the context's error", true, context.Cause, context.Canceled},
		{"ends during the attempt, fn returns its own error", false, func(context.Context) error { return io.ErrUnexpectedEOF }, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.endedBefore {
				cancel()
			}
			calls := 0
			_, err := resilience.Do(ctx, resilience.Retry[int](), func(ctx context.Context) (int, error) {
				calls++
				cancel()
				return 0, tc.attemptError(ctx)
			})
			assert.Equal(t, tc.want, err)
			assert.Equal(t, 1, calls)
		})
	}
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

var errBench = errors.New("transient")

// failTwice fails every first and second call of three.
func failTwice() resilience.Func[int] {
	n := 0
	return func(context.Context) (int, error) {
		n++
		if n%3 != 0 {
			return 0, errBench
		}
		return n, nil
	}
}

func BenchmarkRetry(b *testing.B) {
	ctx := context.Background()
	zeroWait := resilience.WithBackoff(resilience.Constant(0))
	cases := []struct {
		name string
		opts []resilience.RetryOption
		fn   func() resilience.Func[int]
	}{
		{"success", nil, func() resilience.Func[int] { return okFunc }},
		{"success-observed", []resilience.RetryOption{resilience.WithObserver(&counter{})}, func() resilience.Func[int] { return okFunc }},
		{"success-outcomes", []resilience.RetryOption{resilience.WithObserver(&counter{Outcomes: true})}, func() resilience.Func[int] { return okFunc }},
		{"success-with-budget", []resilience.RetryOption{resilience.WithBudget(resilience.NewRetryBudget(0.1, 10))}, func() resilience.Func[int] { return okFunc }},
		{"success-no-throttle", []resilience.RetryOption{resilience.WithoutBudget()}, func() resilience.Func[int] { return okFunc }},
		// Two failures in three attempts would empty a throttle: these
		// measure the retry loop itself.
		{"fail-fail-succeed", []resilience.RetryOption{zeroWait, resilience.WithoutBudget()}, failTwice},
		{"fail-fail-succeed-observed", []resilience.RetryOption{zeroWait, resilience.WithoutBudget(), resilience.WithObserver(&counter{})}, failTwice},
		{"fail-fail-succeed-outcomes", []resilience.RetryOption{zeroWait, resilience.WithoutBudget(), resilience.WithObserver(&counter{Outcomes: true})}, failTwice},
		{"fail-fail-succeed-budget", []resilience.RetryOption{zeroWait, resilience.WithBudget(resilience.NewRetryBudget(2, 0))}, failTwice},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p := resilience.Retry[int](c.opts...)
			fn := c.fn()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = p.Execute(ctx, fn)
			}
		})
	}
	b.Run("success-parallel", func(b *testing.B) {
		p := resilience.Retry[int]()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = p.Execute(ctx, okFunc)
			}
		})
	})
}

// TestRetryMaxElapsedHugeWait: a wait near the largest duration is past any
// time limit; adding it to the time elapsed must not overflow into a wait
// that "fits".
func TestRetryMaxElapsedHugeWait(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		opts []resilience.RetryOption
		err  error
	}{
		{"huge constant backoff", []resilience.RetryOption{resilience.WithBackoff(resilience.Constant(huge))}, errFlaky},
		{"huge hint under a huge max", []resilience.RetryOption{resilience.WithMaxRetryAfter(huge)}, hinted{huge}},
		{"huge hint, huge backoff", []resilience.RetryOption{resilience.WithMaxRetryAfter(huge), resilience.WithBackoff(resilience.Constant(huge - 1))}, hinted{huge - 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			clk.Waits = resilience.WaitsStep
			opts := append([]resilience.RetryOption{resilience.WithMaxElapsed(time.Hour), resilience.WithClock(clk)}, tc.opts...)
			calls := 0
			_, err := resilience.Retry[int](opts...).Execute(context.Background(), func(context.Context) (int, error) {
				calls++
				clk.Add(time.Millisecond) // some time has passed when the wait is weighed
				return 0, tc.err
			})
			assert.Equal(t, 1, calls, "no retry: its wait ends past the limit")
			assert.Empty(t, clk.Steps(), "no wait begun")
			assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
			assert.ErrorIs(t, err, tc.err)
		})
	}
}

// TestRetryOnNothing: an empty allow-list retries nothing, as
// go-resiliency's empty whitelist.
func TestRetryOnNothing(t *testing.T) {
	for _, opts := range [][]resilience.RetryOption{
		{resilience.WithRetryOn()},
		{resilience.WithRetryOn(), resilience.WithRetryOn()},
	} {
		fn, calls := script(errFlaky, nil)
		_, err := resilience.Retry[int](opts...).Execute(context.Background(), fn)
		assert.Equal(t, errFlaky, err, "returned as it is")
		assert.Equal(t, 1, *calls)
	}
	// A later list with errors in it still retries them.
	fn, calls := script(errFlaky, nil)
	_, err := resilience.Retry[int](resilience.WithRetryOn(), resilience.WithRetryOn(errFlaky),
		resilience.WithBackoff(resilience.Constant(0))).Execute(context.Background(), fn)
	require.NoError(t, err)
	assert.Equal(t, 2, *calls)
}

// TestRetryBudgetArithmetic: small ratios count, and a huge floor saturates
// instead of wrapping.
func TestRetryBudgetArithmetic(t *testing.T) {
	tests := []struct {
		name     string
		ratio    float64
		floor    int
		calls    int
		capacity int
		want     int
	}{
		{"ratio 0.0004 counts", 0.0004, 0, 10000, 100, 4},
		{"ratio 0.000001 counts", 0.000001, 0, 3_000_000, 100, 3},
		{"ratio 0.1", 0.1, 0, 1000, 100, 100},
		{"capacity caps the deposits", 0.5, 0, 1000, 7, 7},
		{"a deposit past the capacity is cut", 5, 0, 3, 1, 1},
		{"zero capacity keeps nothing", 0.5, 0, 1000, 0, 0},
		{"huge floor saturates", 0.1, math.MaxInt, 0, 100, math.MaxInt},
		{"huge floor and deposits saturate", 0.1, math.MaxInt, 1000, 100, math.MaxInt},
		{"huge floor and more deposits than a float's step there saturate", 1, math.MaxInt, 1000, 1000, math.MaxInt},
		{"floor and deposits add", 0.1, 3, 50, 100, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mock := newManualClock()
			b := resilience.NewRetryBudget(tc.ratio, tc.floor, resilience.WithBudgetCapacity(tc.capacity), resilience.WithClock(mock))
			p := resilience.Retry[int](resilience.WithBudget(b))
			for range tc.calls {
				_, _ = p.Execute(context.Background(), okFunc)
			}
			assert.Equal(t, tc.want, b.Available())
		})
	}
}

// TestRetryExecuteNilFn: the same clear panic as Do's.
func TestRetryExecuteNilFn(t *testing.T) {
	assert.PanicsWithValue(t, "resilience: Retry: fn is nil", func() {
		_, _ = resilience.Retry[int]().Execute(context.Background(), nil)
	})
	assert.PanicsWithValue(t, "resilience: Do: fn is nil", func() {
		_, _ = resilience.Do(context.Background(), resilience.Retry[int](), nil)
	})
}

// TestRetryPassesPreviousWait: the backoff gets the wait before the previous
// retry, which is what decorrelated jitter grows from.
func TestRetryPassesPreviousWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var prevs []time.Duration
		b := resilience.BackoffFunc(func(n int, prev time.Duration) (time.Duration, bool) {
			prevs = append(prevs, prev)
			return time.Duration(n) * time.Second, true
		})
		fn, _ := script(errFlaky, errFlaky, errFlaky, nil)
		_, err := resilience.Retry[int](resilience.WithAttempts(4), resilience.WithBackoff(b)).Execute(context.Background(), fn)
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, prevs)
	})

	// Decorrelated jitter under Retry waits what the same backoff gives when
	// each wait is fed back as prev.
	synctest.Test(t, func(t *testing.T) {
		const base, most = 10 * time.Millisecond, time.Minute
		want := []time.Duration{}
		ref := resilience.UseRand(resilience.DecorrelatedJitter(base, most), rand.New(rand.NewPCG(1, 2)))
		prev := time.Duration(0)
		for n := 1; n <= 5; n++ {
			prev, _ = ref.Delay(n, prev)
			want = append(want, prev)
		}
		var got []time.Duration
		p := resilience.Retry[int](resilience.WithAttempts(6), resilience.WithoutBudget(),
			resilience.WithBackoff(resilience.UseRand(resilience.DecorrelatedJitter(base, most), rand.New(rand.NewPCG(1, 2)))),
			onRetry(func(_ int, _ error, d time.Duration) { got = append(got, d) }))
		fn, _ := script(errFlaky, errFlaky, errFlaky, errFlaky, errFlaky, nil)
		_, err := p.Execute(context.Background(), fn)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Greater(t, want[4], 3*base, "the waits grew from their predecessors")
	})
}

// TestRetryDiscardsBeforeTheWait: a rejected result is let go before the
// wait, so what it holds is not held through it; when the caller's context
// ends during that wait, the caller gets the zero value, never the
// discarded result.
func TestRetryDiscardsBeforeTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var discarded []int
		p := resilience.Retry[int](
			resilience.WithBackoff(resilience.Constant(time.Minute)),
			resilience.WithRetryIfResult(func(v int) bool { return v < 10 }),
			resilience.WithDiscard(func(v int) { discarded = append(discarded, v) }),
			onRetry(func(int, error, time.Duration) {
				time.AfterFunc(time.Second, cancel) // the caller gives up during the wait
			}),
		)
		v, err := p.Execute(ctx, func(context.Context) (int, error) { return 7, nil })
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, v, "the discarded result is not returned")
		assert.Equal(t, []int{7}, discarded, "discarded once, before the wait")
	})
}

// TestRetryEvents: what a Retry and its quota or budget report, call by
// call.
func TestRetryEvents(t *testing.T) {
	const name = "users"
	type ev = resilience.Event
	failed := func(n int, err error) ev {
		return ev{Kind: resilience.EventAttemptFailed, Component: "retry", Name: name, Attempt: n, Err: err}
	}
	retry := func(n int, err error, wait time.Duration) ev {
		return ev{Kind: resilience.EventRetry, Component: "retry", Name: name, Attempt: n, Err: err, Wait: wait}
	}
	gaveUp := func(n int, err, reason error) ev {
		return ev{Kind: resilience.EventGiveUp, Component: "retry", Name: name, Attempt: n, Err: err, Reason: reason}
	}
	ended := func(n int, err error, d time.Duration) ev {
		return ev{Kind: resilience.EventCallEnded, Component: "retry", Name: name, Attempt: n, Err: err, Duration: d}
	}
	refused := func(component, name string, n int) ev {
		return ev{Kind: resilience.EventRefused, Component: component, Name: name, Attempt: n, Err: resilience.ErrRetryBudgetExhausted}
	}
	exhausted := func(component, name string, n int) ev {
		return ev{Kind: resilience.EventExhausted, Component: component, Name: name, Attempt: n, Err: resilience.ErrRetryBudgetExhausted}
	}
	// The default quota pays for 8 retries, then refuses the ninth.
	var quotaRuns []ev
	for n := 1; n <= 8; n++ {
		quotaRuns = append(quotaRuns, failed(n, errFlaky), retry(n, errFlaky, 0))
	}
	quotaRuns = append(quotaRuns, failed(9, errFlaky), exhausted(resilience.KindRetryBudget, name, 9), refused(resilience.KindRetryBudget, name, 9), gaveUp(9, errFlaky, resilience.ErrRetryBudgetExhausted))
	budgetLog := &recorder{}
	tests := []struct {
		name     string
		opts     []resilience.RetryOption
		outcomes bool
		results  []error
		cancelAt time.Duration // the caller's context ends then, when set
		want     []ev
		budget   []ev // what budgetLog receives
	}{
		{name: "success: nothing", results: []error{nil}},
		{name: "success, outcomes asked", outcomes: true, results: []error{nil}, want: []ev{ended(1, nil, 0)}},
		{name: "fail, fail, succeed", results: []error{errFlaky, errFlaky, nil},
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), failed(2, errFlaky), retry(2, errFlaky, 200*ms)}},
		{name: "fail, fail, succeed, outcomes asked", outcomes: true, results: []error{errFlaky, errFlaky, nil},
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), failed(2, errFlaky), retry(2, errFlaky, 200*ms), ended(3, nil, 300*ms)}},
		{name: "attempts run out", results: []error{errFlaky},
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), failed(2, errFlaky), retry(2, errFlaky, 200*ms),
				failed(3, errFlaky), gaveUp(3, errFlaky, resilience.ErrRetriesExhausted)}},
		{name: "an error not to retry: no give-up", opts: []resilience.RetryOption{resilience.WithAbortOn(errFatal)},
			results: []error{errFatal}, want: []ev{failed(1, errFatal)}},
		{name: "the caller's context ends during a wait", results: []error{errFlaky}, cancelAt: 50 * ms,
			want: []ev{failed(1, errFlaky), retry(1, errFlaky, 100*ms), gaveUp(1, errFlaky, context.Canceled)}},
		{name: "the default quota runs out", opts: []resilience.RetryOption{resilience.WithAttempts(0), resilience.WithBackoff(resilience.Constant(0))},
			results: []error{errFlaky}, want: quotaRuns},
		{name: "a shared budget refuses, to its own observer",
			opts: []resilience.RetryOption{resilience.WithBudget(resilience.NewRetryBudget(0, 0,
				resilience.WithObserver(budgetLog), resilience.WithName("shared")))},
			results: []error{errFlaky},
			want:    []ev{failed(1, errFlaky), gaveUp(1, errFlaky, resilience.ErrRetryBudgetExhausted)},
			budget:  []ev{exhausted(resilience.KindRetryBudget, "shared", 1), refused(resilience.KindRetryBudget, "shared", 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				budgetLog.events = nil
				log := &recorder{outcomes: tc.outcomes}
				opts := append([]resilience.RetryOption{resilience.WithBackoff(linearWaits),
					resilience.WithObserver(log), resilience.WithName(name)}, tc.opts...)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				fn, _ := script(tc.results...)
				_, _ = resilience.Retry[int](opts...).Execute(ctx, fn)
				assert.Equal(t, tc.want, log.events)
				assert.Equal(t, tc.budget, budgetLog.events)
			})
		})
	}
}

// TestRetryEventsDiscard: a result WithRetryIfResult rejected is reported
// as it goes to the discard hook, once.
func TestRetryEventsDiscard(t *testing.T) {
	log := &recorder{outcomes: true}
	var dropped []int
	p := resilience.Retry[int](resilience.WithObserver(log), resilience.WithBackoff(resilience.Constant(0)),
		resilience.WithRetryIfResult(func(v int) bool { return v < 2 }),
		resilience.WithDiscard(func(v int) { dropped = append(dropped, v) }))
	fn, _ := script(nil)
	v, err := p.Execute(context.Background(), fn)
	assert.NoError(t, err)
	assert.Equal(t, 2, v)
	assert.Equal(t, []int{1}, dropped)
	kinds := []resilience.EventKind{}
	for _, e := range log.events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []resilience.EventKind{resilience.EventAttemptFailed, resilience.EventRetry,
		resilience.EventDiscarded, resilience.EventCallEnded}, kinds)
	assert.Equal(t, resilience.Event{Kind: resilience.EventDiscarded, Component: "retry", Attempt: 1}, log.events[2])
}

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
		{"WithRetryOn and WithRetryIf", retry(resilience.WithRetryOn(errFatal), resilience.WithRetryIf(func(error) bool { return true })),
			"resilience: Retry: WithRetryOn and WithRetryIf both decide which errors to retry; give one (WithRetryIf can say what both say)"},
		{"WithRetryIf and WithAbortOn", retry(resilience.WithRetryIf(func(error) bool { return true }), resilience.WithAbortOn(errFatal)),
			"resilience: Retry: WithRetryIf and WithAbortOn both decide which errors to retry; give one (WithRetryIf can say what both say)"},
		{"WithAbortOn and WithRetryOn", retry(resilience.WithAbortOn(errFatal), resilience.WithRetryOn(errFlaky)),
			"resilience: Retry: WithAbortOn and WithRetryOn both decide which errors to retry; give one (WithRetryIf can say what both say)"},
		{"WithRetryOn twice: the lists add up", retry(resilience.WithRetryOn(errFatal), resilience.WithRetryOn(errFlaky)), ""},
		{"WithRetryIfResult(nil)", func() { resilience.WithRetryIfResult[int](nil) }, "resilience: WithRetryIfResult: predicate is nil"},
		{"WithRetryIfResult(other type)", retry(resilience.WithRetryIfResult(func(string) bool { return true })),
			"resilience: WithRetryIfResult: predicate is func(string) bool, but the policy's result type is int"},
		{"WithDiscard(nil)", func() { resilience.WithDiscard[int](nil) }, "resilience: WithDiscard: hook is nil"},
		{"WithDiscard(other type)", retry(resilience.WithDiscard(func(string) {})),
			"resilience: Retry: WithDiscard hook is func(string), but the policy's result type is int"},
		{"WithClock(nil)", func() { resilience.WithClock(nil) }, "resilience: WithClock: clock is nil"},
		{"WithClock(typed nil)", func() { resilience.WithClock((*clock.Mock)(nil)) }, "resilience: WithClock: clock is a nil *clock.Mock"},
		{"WithObserver(nil)", func() { resilience.WithObserver(nil) }, "resilience: WithObserver: observer is nil"},
		{"WithObserver(typed nil)", func() { resilience.WithObserver((*recorder)(nil)) }, "resilience: WithObserver: observer is a nil *resilience_test.recorder"},
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

// attemptsPer runs requests through p against fn, one after the other, and
// returns the attempts each made.
func attemptsPer[T any](t *testing.T, requests int, p resilience.Policy[T], fn func(context.Context) (T, error)) []int {
	t.Helper()
	var got []int
	for range requests {
		calls := 0
		_, _ = p.Execute(context.Background(), func(ctx context.Context) (T, error) { calls++; return fn(ctx) })
		got = append(got, calls)
	}
	return got
}

var zeroWait = resilience.WithBackoff(resilience.Constant(0))

func down(context.Context) (int, error) { return 0, errFlaky }
func up(context.Context) (int, error)   { return 1, nil }

// TestRetryThrottle: a throttle in the manner of gRPC's (10 tokens, −1 per
// failed attempt it would retry, +0.2 per success, retries only above 5),
// the default of a Retry before its retry quota.
func TestRetryThrottle(t *testing.T) {
	throttled := func(opts ...resilience.RetryOption) resilience.Policy[int] {
		return resilience.Retry[int](append([]resilience.RetryOption{zeroWait, resilience.WithBudget(resilience.NewRetryThrottle(10, 0.2))}, opts...)...)
	}
	t.Run("an outage: the retries of about five failures, then none", func(t *testing.T) {
		// Tokens: 9, 8, 7 | 6, 5 (refused) | 4 | 3 ...
		assert.Equal(t, []int{3, 2, 1, 1, 1}, attemptsPer(t, 5, throttled(), down))
	})
	t.Run("successes refill it", func(t *testing.T) {
		p := throttled()
		attemptsPer(t, 4, p, down) // 10 → 3 tokens
		attemptsPer(t, 15, p, up)  // 6: a failure would leave 5, not more than half
		assert.Equal(t, []int{1}, attemptsPer(t, 1, p, down))
		attemptsPer(t, 6, p, up) // 5 + 1.2
		assert.Equal(t, []int{2}, attemptsPer(t, 1, p, down))
	})
	t.Run("a healthy service at 10% failures keeps it full", func(t *testing.T) {
		p := throttled()
		n := 0
		sometimes := func(context.Context) (int, error) {
			if n++; n%10 == 0 {
				return 0, errFlaky
			}
			return n, nil
		}
		for i, a := range attemptsPer(t, 1000, p, sometimes) {
			require.LessOrEqual(t, a, 2, "request %d", i)
		}
		assert.Equal(t, []int{3, 2, 1}, attemptsPer(t, 3, p, down), "full again: 10 tokens")
	})
	t.Run("errors not retried and the caller's cancellation take nothing", func(t *testing.T) {
		p := throttled(resilience.WithAbortOn(errFatal))
		attemptsPer(t, 20, p, func(context.Context) (int, error) { return 0, errFatal })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for range 20 {
			_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) { return 0, ctx.Err() })
		}
		assert.Equal(t, []int{3}, attemptsPer(t, 1, p, down))
	})
	t.Run("the refusal error", func(t *testing.T) {
		p := throttled()
		attemptsPer(t, 1, p, down)
		_, err := p.Execute(context.Background(), down)
		assert.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
		assert.ErrorIs(t, err, errFlaky)
		assert.EqualError(t, err, "resilience: retry budget exhausted after 2 attempts (WithBudget or WithoutBudget changes it): flaky")
	})
}

// TestRetryThrottleShared: one throttle given to policies of different
// result types is one limit.
func TestRetryThrottleShared(t *testing.T) {
	th := resilience.NewRetryThrottle(10, 0.2)
	ints := resilience.Retry[int](resilience.WithBudget(th), zeroWait)
	strs := resilience.Retry[string](resilience.WithBudget(th), zeroWait)
	assert.Equal(t, 4, th.Available())
	assert.Equal(t, []int{3}, attemptsPer(t, 1, ints, down))
	assert.Equal(t, 1, th.Available())
	assert.Equal(t, []int{2, 1}, attemptsPer(t, 2, strs, func(context.Context) (string, error) { return "", errFlaky }))
	assert.Equal(t, 0, th.Available())
	attemptsPer(t, 100, strs, func(context.Context) (string, error) { return "ok", nil })
	assert.Equal(t, 4, th.Available(), "refilled, up to its tokens")
}

// TestRetryBudgetConcurrent: deposits and withdrawals from many goroutines
// add up exactly, and the capacity holds.
func TestRetryBudgetConcurrent(t *testing.T) {
	const goroutines, each = 8, 200
	tests := []struct {
		name string
		b    *resilience.RetryBudget
		want int64 // retries allowed in all
	}{
		// 1600 calls deposit 0.25 each: 400 retries, cut to the capacity.
		{"budget", resilience.NewRetryBudget(0.25, 0, resilience.WithBudgetCapacity(300)), 300},
		{"budget under its capacity", resilience.NewRetryBudget(0.125, 0, resilience.WithBudgetCapacity(300)), 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := resilience.Retry[int](resilience.WithBudget(tc.b), resilience.WithAttempts(1))
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for range each {
						_, _ = p.Execute(context.Background(), up)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, int(tc.want), tc.b.Available())
			var allowed atomic.Int64
			q := resilience.Retry[int](resilience.WithBudget(tc.b), resilience.WithAttempts(2), zeroWait)
			for range goroutines {
				wg.Go(func() {
					for range each {
						_, err := q.Execute(context.Background(), down)
						if !errors.Is(err, resilience.ErrRetryBudgetExhausted) {
							allowed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			// Each of these calls deposits too: 1600 more quarter retries
			// (or eighths), spent as they come.
			assert.GreaterOrEqual(t, allowed.Load(), tc.want)
			assert.Equal(t, 0, tc.b.Available(), "every retry the deposits paid for was taken")
		})
	}
}

// TestRetryOpenBreaker pins what a Retry does with an open breaker's
// refusal: it fails fast, returning the refusal at once, unless its backoff
// would wait out the cool-down anyway (then it waits for the breaker's
// hint) or WithWaitForBreaker asks it to wait, up to WithMaxRetryAfter.
// WithMaxRetryAfter(0) ignores hints, the breaker's too: its refusal is
// retried as any error.
func TestRetryOpenBreaker(t *testing.T) {
	tests := []struct {
		name      string
		coolDown  time.Duration
		tripped   bool // open before the call; else the first attempt's failure opens it
		opts      []resilience.RetryOption
		wantCalls int           // calls of fn
		wantTime  time.Duration // the call's duration
		wantRetry bool          // the error is a *RetryError, not the refusal as it is
		wantOK    bool
	}{
		{name: "open for 30s: the refusal at once", coolDown: 30 * time.Second, tripped: true,
			wantCalls: 0, wantTime: 0},
		{name: "opened by the first attempt: its refusal after the first wait", coolDown: 30 * time.Second,
			wantCalls: 1, wantTime: 100 * ms},
		{name: "isolated: the refusal at once", coolDown: -1, tripped: true,
			wantCalls: 0, wantTime: 0},
		{name: "a backoff longer than the cool-down waits for the hint", coolDown: time.Second, tripped: true,
			opts:      []resilience.RetryOption{resilience.WithBackoff(resilience.Constant(2 * time.Second))},
			wantCalls: 1, wantTime: time.Second + ms, wantOK: true},
		{name: "WithWaitForBreaker waits for the cool-down", coolDown: 5 * time.Second, tripped: true,
			opts:      []resilience.RetryOption{resilience.WithWaitForBreaker()},
			wantCalls: 1, wantTime: 5*time.Second + ms, wantOK: true},
		{name: "WithWaitForBreaker waits up to WithMaxRetryAfter", coolDown: 30 * time.Second, tripped: true,
			opts:      []resilience.RetryOption{resilience.WithWaitForBreaker()},
			wantCalls: 0, wantTime: 20 * time.Second, wantRetry: true},
		{name: "WithMaxRetryAfter(0): retried as any error", coolDown: 30 * time.Second, tripped: true,
			opts:      []resilience.RetryOption{resilience.WithMaxRetryAfter(0)},
			wantCalls: 0, wantTime: 300 * ms, wantRetry: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(max(tc.coolDown, time.Second)),
					resilience.WithBreakerHintJitter(0))
				switch {
				case tc.coolDown < 0:
					b.Isolate()
				case tc.tripped:
					b.Trip()
				}
				opts := append([]resilience.RetryOption{resilience.WithBackoff(linearWaits)}, tc.opts...)
				p := resilience.Compose(resilience.Retry[int](opts...), resilience.Guarded[int](b))
				calls := 0
				start := time.Now()
				_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
					calls++
					if tc.tripped {
						return 1, nil
					}
					return 0, errFlaky
				})
				assert.Equal(t, tc.wantTime, time.Since(start), "the call's time")
				assert.Equal(t, tc.wantCalls, calls, "calls of fn")
				if tc.wantOK {
					assert.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, resilience.ErrBreakerOpen)
				var re *resilience.RetryError
				assert.Equal(t, tc.wantRetry, errors.As(err, &re), "Execute(…) = %v, a *RetryError", err)
				if !tc.wantRetry {
					var open *resilience.BreakerOpenError
					assert.True(t, errors.As(err, &open) && err == error(open), "Execute(…) = %#v, want the refusal as it is", err)
				}
			})
		})
	}
}

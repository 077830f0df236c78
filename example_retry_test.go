package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience"
)

// flaky fails n times, then answers.
func flaky(n int) resilience.Func[string] {
	return func(context.Context) (string, error) {
		if n > 0 {
			n--
			return "", errors.New("connection reset")
		}
		return "ok", nil
	}
}

func ExampleRetry() {
	policy := resilience.Retry[string](
		resilience.WithAttempts(4),
		resilience.WithBackoff(resilience.Exponential(time.Millisecond, 2)),
		resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
			if e.Kind == resilience.EventRetry {
				fmt.Printf("attempt %d failed (%v), retrying in %v\n", e.Attempt, e.Err, e.Wait)
			}
		})),
	)
	v, err := resilience.Do(context.Background(), policy, flaky(2))
	fmt.Println(v, err)
	// Output:
	// attempt 1 failed (connection reset), retrying in 1ms
	// attempt 2 failed (connection reset), retrying in 2ms
	// ok <nil>
}

func ExampleRetryError() {
	policy := resilience.Retry[string](resilience.WithBackoff(resilience.Constant(0)))
	_, err := resilience.Do(context.Background(), policy, flaky(5))

	var re *resilience.RetryError
	if errors.As(err, &re) {
		fmt.Println(re.Attempts, re.Last)
	}
	fmt.Println(errors.Is(err, resilience.ErrRetriesExhausted))
	// Output:
	// 3 connection reset
	// true
}

func ExampleWithAbortOn() {
	errNotFound := errors.New("not found")
	policy := resilience.Retry[string](resilience.WithAbortOn(errNotFound))
	calls := 0
	_, err := resilience.Do(context.Background(), policy, func(context.Context) (string, error) {
		calls++
		return "", fmt.Errorf("user 7: %w", errNotFound)
	})
	fmt.Println(calls, err)
	// Output: 1 user 7: not found
}

func ExamplePermanent() {
	policy := resilience.Retry[string]()
	calls := 0
	_, err := resilience.Do(context.Background(), policy, func(context.Context) (string, error) {
		calls++
		return "", resilience.Permanent(errors.New("invalid request"))
	})
	fmt.Println(calls, err)
	// Output: 1 invalid request
}

func ExampleWithRetryIfResult() {
	// Poll until the job reports it is done.
	polls := 0
	status := func(context.Context) (string, error) {
		polls++
		if polls < 3 {
			return "running", nil
		}
		return "done", nil
	}
	policy := resilience.Retry[string](
		resilience.WithAttempts(0), // until done
		resilience.WithBackoff(resilience.Constant(time.Millisecond)),
		resilience.WithRetryIfResult(func(s string) bool { return s == "running" }),
	)
	v, err := resilience.Do(context.Background(), policy, status)
	fmt.Println(v, polls, err)
	// Output: done 3 <nil>
}

func ExampleNewRetryBudget() {
	// Retries may add at most 10% to the calls, plus one a second.
	budget := resilience.NewRetryBudget(0.1, 1)
	policy := resilience.Retry[string](resilience.WithBudget(budget), resilience.WithBackoff(resilience.Constant(0)))

	calls := 0
	down := func(context.Context) (string, error) { calls++; return "", errors.New("down") }
	for range 100 {
		_, _ = resilience.Do(context.Background(), policy, down)
	}
	fmt.Println(calls <= 100+10+1)
	// Output: true
}

func ExampleRetry_quota() {
	// A service that is down. The policy is built once, so its retry quota
	// sees every call: its 40 tokens pay for 8 retries of 5, then it stops
	// retrying until successes refill it.
	policy := resilience.Retry[string](resilience.WithBackoff(resilience.Constant(0)))
	calls := 0
	down := func(context.Context) (string, error) { calls++; return "", errors.New("down") }
	for i := 1; i <= 6; i++ {
		before := calls
		_, err := resilience.Do(context.Background(), policy, down)
		fmt.Printf("request %d: %d attempts, refused: %v\n", i, calls-before, errors.Is(err, resilience.ErrRetryBudgetExhausted))
	}
	_, err := resilience.Do(context.Background(), policy, down)
	fmt.Println(err)
	// Output:
	// request 1: 3 attempts, refused: false
	// request 2: 3 attempts, refused: false
	// request 3: 3 attempts, refused: false
	// request 4: 3 attempts, refused: false
	// request 5: 1 attempts, refused: true
	// request 6: 1 attempts, refused: true
	// resilience: retry budget exhausted after 1 attempt (WithBudget or WithoutBudget changes it): down
}

func ExampleNewRetryQuota() {
	// One quota for every policy that calls the same service: 100 tokens, a
	// retry costs 5 (10 after a timeout), a success at once gives 1 back, a
	// retry that succeeds gives back what it took.
	quota := resilience.NewRetryQuota(100)
	policy := resilience.Retry[string](resilience.WithBudget(quota), resilience.WithBackoff(resilience.Constant(0)))
	ctx := context.Background()
	fmt.Println("retries left:", quota.Available())

	calls := 0
	flaky := func(context.Context) (string, error) { // every third call fails
		if calls++; calls%3 == 1 {
			return "", errors.New("flaky")
		}
		return "ok", nil
	}
	for range 300 {
		if _, err := resilience.Do(ctx, policy, flaky); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("a third of the calls failing, every failure retried:", quota.Available())

	_, _ = resilience.Do(ctx, policy, func(context.Context) (string, error) { return "", resilience.ErrTimeout })
	fmt.Println("after a call that timed out three times:", quota.Available())
	// Output:
	// retries left: 20
	// a third of the calls failing, every failure retried: 20
	// after a call that timed out three times: 16
}

func ExampleNewRetryThrottle() {
	// One throttle for every policy that calls the same service, whatever
	// their result types: 10 tokens, half a token back per success.
	throttle := resilience.NewRetryThrottle(10, 0.5)
	names := resilience.Retry[string](resilience.WithBudget(throttle), resilience.WithBackoff(resilience.Constant(0)))
	counts := resilience.Retry[int](resilience.WithBudget(throttle), resilience.WithBackoff(resilience.Constant(0)))
	ctx := context.Background()
	fmt.Println("retries left:", throttle.Available())

	_, _ = resilience.Do(ctx, names, func(context.Context) (string, error) { return "", errors.New("down") })
	fmt.Println("after three failures:", throttle.Available())

	_, err := resilience.Do(ctx, counts, func(context.Context) (int, error) { return 0, errors.New("down") })
	fmt.Println("throttled:", errors.Is(err, resilience.ErrRetryBudgetExhausted))

	for range 10 {
		_, _ = resilience.Do(ctx, counts, func(context.Context) (int, error) { return 1, nil })
	}
	fmt.Println("after ten successes:", throttle.Available())
	// Output:
	// retries left: 4
	// after three failures: 1
	// throttled: true
	// after ten successes: 4
}

func ExampleWithoutBudget() {
	// Polling a job that is known to be slow, not overloaded: no throttle.
	polls := 0
	status := func(context.Context) (string, error) {
		polls++
		if polls < 8 {
			return "", errors.New("not ready")
		}
		return "done", nil
	}
	policy := resilience.Retry[string](resilience.WithAttempts(10), resilience.WithoutBudget(),
		resilience.WithBackoff(resilience.Constant(time.Millisecond)))
	v, err := resilience.Do(context.Background(), policy, status)
	fmt.Println(v, polls, err)
	// Output: done 8 <nil>
}

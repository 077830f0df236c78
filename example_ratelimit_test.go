package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience"
)

// jumpClock is a clock on which every wait ends at once: asked for a
// deadline, it moves its time there. An example runs on it in no time, and
// prints the same times on every machine.
type jumpClock struct{ t time.Time }

func (c *jumpClock) Now() time.Time { return c.t }

func (c *jumpClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if d.After(c.t) {
		c.t = d
	}
	ctx, cancel := context.WithCancel(parent)
	cancel()
	return ctx, cancel
}

func ExampleNewRateLimiter() {
	// An outgoing API allows 2 requests a second, 2 at once. A Retry
	// outside the limiter waits exactly as long as a refusal says.
	clk := &jumpClock{t: time.Unix(0, 0)}
	limiter := resilience.NewRateLimiter(2, 2, resilience.WithClock(clk))
	policy := resilience.Compose(
		resilience.Retry[string](resilience.WithClock(clk)),
		resilience.Guarded[string](limiter),
	)

	start := clk.Now()
	for i := range 4 {
		reply, err := policy.Execute(context.Background(), func(context.Context) (string, error) {
			return fmt.Sprintf("request %d sent at %v", i, clk.Now().Sub(start)), nil
		})
		fmt.Println(reply, err)
	}

	// Without a Retry, a refusal says how long until a token is there.
	_, err := resilience.Guarded[string](limiter).Execute(context.Background(), func(context.Context) (string, error) {
		return "never sent", nil
	})
	hint, _ := resilience.RetryAfter(err)
	fmt.Println(errors.Is(err, resilience.ErrRateLimited), hint)
	// Output:
	// request 0 sent at 0s <nil>
	// request 1 sent at 0s <nil>
	// request 2 sent at 500ms <nil>
	// request 3 sent at 1s <nil>
	// true 500ms
}

func ExampleNewKeyedRateLimiter() {
	// Each user may make 1 request a second, 3 at once; users do not share.
	clk := &jumpClock{t: time.Unix(0, 0)}
	limiter := resilience.NewKeyedRateLimiter[string](1, 3, resilience.WithClock(clk))

	for _, user := range []string{"alice", "alice", "alice", "alice", "bob"} {
		fmt.Println(user, limiter.Allow(user))
	}
	fmt.Printf("alice has %.0f tokens left, bob %.0f\n", limiter.Tokens("alice"), limiter.Tokens("bob"))

	// A second later alice has a token again.
	clk.t = clk.t.Add(time.Second)
	fmt.Println("alice", limiter.Allow("alice"), "of", limiter.Len(), "users")
	// Output:
	// alice true
	// alice true
	// alice true
	// alice false
	// bob true
	// alice has 0 tokens left, bob 2
	// alice true of 2 users
}

func ExampleWithRateLimitWait() {
	// 10 calls a second, one at a time; a call may wait up to 150ms for
	// its token, and is refused at once if it would have to wait longer.
	clk := &jumpClock{t: time.Unix(0, 0)}
	limiter := resilience.NewRateLimiter(10, 1,
		resilience.WithClock(clk), resilience.WithRateLimitWait(150*time.Millisecond))
	policy := resilience.Guarded[time.Duration](limiter)

	start := clk.Now()
	call := func(context.Context) (time.Duration, error) { return clk.Now().Sub(start), nil }
	for range 2 {
		fmt.Println(policy.Execute(context.Background(), call))
	}
	limiter.ReserveN(1) // books the next token, due at 200ms
	_, err := policy.Execute(context.Background(), call)
	fmt.Println(errors.Is(err, resilience.ErrRateLimited), clk.Now().Sub(start))
	// Output:
	// 0s <nil>
	// 100ms <nil>
	// true 100ms
}

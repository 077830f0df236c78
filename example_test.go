package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience"
)

// fetchUser stands in for a call to a remote service.
func fetchUser(_ context.Context, id int) (string, error) {
	return fmt.Sprintf("user-%d", id), nil
}

func ExampleDo() {
	policy := resilience.Timeout[string](time.Second)

	name, err := resilience.Do(context.Background(), policy, func(ctx context.Context) (string, error) {
		return fetchUser(ctx, 7)
	})
	fmt.Println(name, err)
	// Output: user-7 <nil>
}

func ExampleCompose() {
	logged := func(name string) resilience.Policy[string] {
		return resilience.PolicyFunc[string](func(ctx context.Context, fn resilience.Func[string]) (string, error) {
			fmt.Println("enter", name)
			defer fmt.Println("leave", name)
			return fn(ctx)
		})
	}
	// The first policy is the outermost.
	policy := resilience.Compose(logged("outer"), resilience.Timeout[string](time.Second), logged("inner"))

	name, _ := resilience.Do(context.Background(), policy, func(ctx context.Context) (string, error) {
		return fetchUser(ctx, 1)
	})
	fmt.Println(name)
	// Output:
	// enter outer
	// enter inner
	// leave inner
	// leave outer
	// user-1
}

// oneAtATime is a Guard of the caller's own that admits one call at a time.
type oneAtATime chan struct{}

func (g oneAtATime) Enter(context.Context) (func(error), error) {
	select {
	case g <- struct{}{}:
		return func(error) { <-g }, nil
	default:
		return nil, errors.New("busy")
	}
}

func ExampleGuarded() {
	gate := make(oneAtATime, 1)

	// One guard protects calls of any result type.
	names := resilience.Guarded[string](gate)
	counts := resilience.Guarded[int](gate)

	name, _ := resilience.Do(context.Background(), names, func(ctx context.Context) (string, error) {
		// While this call holds the gate, another is refused.
		_, err := resilience.Do(ctx, counts, func(context.Context) (int, error) { return 1, nil })
		fmt.Println("nested call:", err)
		return fetchUser(ctx, 3)
	})
	fmt.Println(name)
	// Output:
	// nested call: busy
	// user-3
}

func ExampleTimeout() {
	policy := resilience.Timeout[string](10 * time.Millisecond)

	_, err := resilience.Do(context.Background(), policy, func(ctx context.Context) (string, error) {
		<-ctx.Done() // a call that takes too long
		return "", ctx.Err()
	})
	fmt.Println(errors.Is(err, resilience.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// reply stands for a result that holds a resource, such as an
// *http.Response whose body must be closed.
type reply struct{ body string }

func (r *reply) Close() string { return "closed " + r.body }

func ExampleTimeout_lateResult() {
	// The deadline decides: a result that arrives after it is no success,
	// and goes to the discard hook, which frees what it holds.
	closed := make(chan string, 1)
	policy := resilience.Timeout[*reply](10*time.Millisecond,
		resilience.WithDiscard(func(r *reply) { closed <- r.Close() }))

	r, err := resilience.Do(context.Background(), policy, func(ctx context.Context) (*reply, error) {
		<-ctx.Done()                     // the call noticed the deadline,
		return &reply{body: "late"}, nil // and answered all the same
	})
	fmt.Println(r, err)
	fmt.Println(<-closed)
	// Output:
	// <nil> resilience: timeout
	// closed late
}

func ExampleWithTimeoutCooperative() {
	// A cooperative timeout runs fn in the caller's goroutine: cheaper, but
	// fn must honour its context.
	policy := resilience.Timeout[string](10*time.Millisecond, resilience.WithTimeoutCooperative())

	_, err := resilience.Do(context.Background(), policy, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	fmt.Println(err)
	// Output: resilience: timeout: context deadline exceeded
}

func ExamplePolicyFunc() {
	// A policy of your own: a fallback value when the call fails.
	fallback := resilience.PolicyFunc[string](func(ctx context.Context, fn resilience.Func[string]) (string, error) {
		v, err := fn(ctx)
		if err != nil {
			return "anonymous", nil
		}
		return v, nil
	})
	name, err := resilience.Do(context.Background(), fallback, func(context.Context) (string, error) {
		return "", errors.New("service down")
	})
	fmt.Println(name, err)
	// Output: anonymous <nil>
}

package resilienceredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
	"github.com/redis/go-redis/v9"
)

// callPartner stands for a call to a partner's API.
func callPartner(context.Context) (string, error) { return "ok", nil }

// A limit shared by every process that uses the same Redis, as a call
// takes it and as a guard of a policy.
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
	limiter := resilienceredis.NewLimiter(client, 100, 20, // 100 calls a second, bursts of 20, per key
		resilienceredis.WithFailOpen(0.25)) // 4 machines: a quarter each while Redis is away
	if err := limiter.Allow(context.Background(), "partner-api"); err != nil {
		log.Print(err) // refused: resilience.RetryAfter(err) says when to come back
	}
	policy := resilience.Guarded[string](limiter.GuardKey("partner-api"))
	answer, err := resilience.Do(context.Background(), policy, callPartner)
	fmt.Println(answer, err)
}

// A limit of 2 calls a second, with bursts of 3, shared by every process
// that uses the same Redis. The example runs against an in-memory Redis
// (miniredis) with its clock stopped, so that its output is exact; in
// production the client points at the fleet's Redis.
func ExampleNewLimiter() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	mr.SetTime(time.Unix(1_700_000_000, 0))
	// ContextTimeoutEnabled: the client bounds each call by its context,
	// so the limiter asks Redis on the caller's goroutine.
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	limiter := resilienceredis.NewLimiter(client, 2, 3,
		resilienceredis.WithTimeout(50*time.Millisecond), // the default
		resilienceredis.WithFailOpen(0.25))               // 4 machines: each a quarter when Redis is down
	ctx := context.Background()
	for i := range 4 {
		err := limiter.Allow(ctx, "partner-api")
		if after, ok := resilience.RetryAfter(err); ok {
			fmt.Println(i, errors.Is(err, resilience.ErrRateLimited), "retry after", after)
			continue
		}
		fmt.Println(i, err)
	}
	// Output:
	// 0 <nil>
	// 1 <nil>
	// 2 <nil>
	// 3 true retry after 500ms
}

// The limiter as a guard of a policy, keyed by the tenant in the context.
func ExampleLimiter_Guard() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	mr.SetTime(time.Unix(1_700_000_000, 0))
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()

	type tenantKey struct{}
	limiter := resilienceredis.NewLimiter(client, 1, 1)
	policy := resilience.Guarded[string](limiter.Guard(func(ctx context.Context) string {
		return ctx.Value(tenantKey{}).(string)
	}))
	call := func(context.Context) (string, error) { return "done", nil }
	for _, tenant := range []string{"a", "a", "b"} {
		ctx := context.WithValue(context.Background(), tenantKey{}, tenant)
		v, err := policy.Execute(ctx, call)
		fmt.Println(tenant, v, err)
	}
	// Output:
	// a done <nil>
	// a  resilienceredis: rate limited
	// b done <nil>
}

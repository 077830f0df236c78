package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience"
)

type shardKey struct{}

// A breaker per shard: the shard that fails is cut off, the others are
// not.
func ExampleNewKeyed() {
	breakers := resilience.NewKeyed(
		func(ctx context.Context) string { return ctx.Value(shardKey{}).(string) },
		func(shard string) *resilience.Breaker {
			return resilience.NewBreaker(resilience.WithBreakerThreshold(3), resilience.WithBreakerCoolDown(time.Minute))
		},
		resilience.WithKeyedMaxKeys(1000),
	)
	query := resilience.Guarded[string](breakers)
	onShard := func(shard string) context.Context { return context.WithValue(context.Background(), shardKey{}, shard) }

	down := errors.New("shard down")
	for range 3 {
		_, _ = resilience.Do(onShard("s2"), query, func(context.Context) (string, error) { return "", down })
	}
	for _, shard := range []string{"s1", "s2", "s3"} {
		v, err := resilience.Do(onShard(shard), query, func(context.Context) (string, error) { return "rows of " + shard, nil })
		fmt.Println(shard, v, errors.Is(err, resilience.ErrBreakerOpen))
	}
	fmt.Println("breakers:", breakers.Len())
	// Output:
	// s1 rows of s1 false
	// s2  true
	// s3 rows of s3 false
	// breakers: 3
}

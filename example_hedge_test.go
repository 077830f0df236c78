package resilience_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
)

// Two replicas behind one name: the first request lands on a replica that
// is stuck, so after 10ms a hedge goes out, lands on the other and wins;
// the stuck attempt is cancelled.
func ExampleHedge() {
	var n atomic.Int32
	lookup := func(ctx context.Context) (string, error) {
		if n.Add(1) == 1 {
			<-ctx.Done() // the stuck replica answers only when cancelled
			fmt.Println("attempt 1:", ctx.Err())
			return "", ctx.Err()
		}
		return "answer from replica 2", nil
	}
	p := resilience.Hedge[string](resilience.WithHedgeDelay(10 * time.Millisecond))
	v, err := resilience.Do(context.Background(), p, lookup)
	fmt.Println(v, err)
	// Output:
	// attempt 1: context canceled
	// answer from replica 2 <nil>
}

package resilienceredis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
)

// Example_fleetLimit is the README's recipe: one limit on calls to a
// partner's API shared by every machine of a fleet.
func Example_fleetLimit() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	mr.SetTime(time.Unix(1_700_000_000, 0))
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	ctx := context.Background()
	callPartner := func(context.Context) (string, error) { return "ok", nil }

	// 2 calls a second across the fleet, bursts of 3; with Redis down,
	// each of 4 machines allows a quarter of that on its own.
	limiter := resilienceredis.NewLimiter(client, 2, 3, resilienceredis.WithFailOpen(0.25))
	partner := resilience.Guarded[string](limiter.GuardKey("partner-api"))
	for range 4 {
		v, err := resilience.Do(ctx, partner, callPartner)
		fmt.Println(v, err)
	}
	// Output:
	// ok <nil>
	// ok <nil>
	// ok <nil>
	//  resilienceredis: rate limited
}

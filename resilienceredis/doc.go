// Package resilienceredis is a rate limit shared by a whole fleet, kept in
// Redis: every process that uses the same Redis and the same key draws from
// one token bucket, with the semantics of resilience.RateLimiter:
//
//	client := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	limiter := resilienceredis.NewLimiter(client, 100, 20, // 100 calls a second, bursts of 20, per key
//		resilienceredis.WithFailOpen(0.25)) // 4 machines: a quarter each while Redis is away
//	if err := limiter.Allow(context.Background(), "partner-api"); err != nil {
//		log.Print(err) // refused: resilience.RetryAfter(err) says when to come back
//	}
//	policy := resilience.Guarded[string](limiter.GuardKey("partner-api"))
//	answer, err := resilience.Do(context.Background(), policy, callPartner)
//	fmt.Println(answer, err)
//
// [NewLimiter] makes a [Limiter] from any go-redis client. Each decision is
// one round trip to Redis, bounded by a small timeout; when Redis is slow
// or down the limiter limits locally at a share of the rate (or refuses,
// if told to fail closed) and goes back to Redis by itself when it answers
// again. The recommended client is a *redis.Client with
// ContextTimeoutEnabled set, which lets the limiter ask Redis on the
// caller's goroutine (see [Limiter]).
//
// # Errors
//
//   - A refusal is a [*RefusedError]: it matches resilience.ErrRateLimited
//     and resilience.ErrRefused, and carries a retry hint
//     (resilience.RetryAfter).
//   - [ErrUnavailable]: a limiter built with [WithFailClosed] could not
//     reach Redis. It is a failure, not a refusal: it does not match
//     resilience.ErrRefused.
//   - [ErrKeyConflict]: the key's Redis value is other data (a name shared
//     with another program); only that key's decisions fail, and the
//     limiter does not degrade.
//   - The caller's context error when its context ended first.
package resilienceredis

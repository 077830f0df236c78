// Package resilienceredis is a rate limit shared by a whole fleet, kept in
// Redis: every process that uses the same Redis and the same key draws from
// one token bucket, with the semantics of resilience.RateLimiter.
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
//     and carries a retry hint (resilience.RetryAfter).
//   - [ErrUnavailable]: a limiter built with [WithFailClosed] could not
//     reach Redis.
//   - [ErrKeyConflict]: the key's Redis value is other data (a name shared
//     with another program); only that key's decisions fail, and the
//     limiter does not degrade.
//   - The caller's context error when its context ended first.
package resilienceredis

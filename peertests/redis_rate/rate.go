// Package redis_rate offers part of the API of github.com/go-redis/redis_rate
// on top of resilienceredis.Limiter, so that that library's own tests check
// ours. It is written for this module's tests, not for use.
//
// resilienceredis decides and gives a retry hint; it does not report the
// tokens left or the time until the bucket is full, so Result has no
// Remaining or ResetAfter, and there is no AllowAtMost.
package redis_rate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
	"github.com/redis/go-redis/v9"
)

// rediser is what the Limiter needs of a Redis client.
type rediser interface {
	resilienceredis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// Limit is Rate events a Period, up to Burst at once.
type Limit struct {
	Rate   int
	Burst  int
	Period time.Duration
}

// String describes the limit.
func (l Limit) String() string {
	unit := l.Period.String()
	switch l.Period {
	case time.Second:
		unit = "s"
	case time.Minute:
		unit = "m"
	case time.Hour:
		unit = "h"
	}
	return fmt.Sprintf("%d req/%s (burst %d)", l.Rate, unit, l.Burst)
}

// IsZero reports whether l is the zero Limit.
func (l Limit) IsZero() bool { return l == Limit{} }

// PerSecond is rate events a second, up to rate at once.
func PerSecond(rate int) Limit { return Limit{Rate: rate, Burst: rate, Period: time.Second} }

// PerMinute is rate events a minute, up to rate at once.
func PerMinute(rate int) Limit { return Limit{Rate: rate, Burst: rate, Period: time.Minute} }

// PerHour is rate events an hour, up to rate at once.
func PerHour(rate int) Limit { return Limit{Rate: rate, Burst: rate, Period: time.Hour} }

// Limiter is a resilienceredis.Limiter for each Limit it is asked about.
type Limiter struct {
	rdb      rediser
	mu       sync.Mutex
	limiters map[Limit]*resilienceredis.Limiter
}

// NewLimiter returns a limiter that keeps its buckets in rdb.
func NewLimiter(rdb rediser) *Limiter {
	return &Limiter{rdb: rdb, limiters: map[Limit]*resilienceredis.Limiter{}}
}

// of returns the resilienceredis.Limiter of limit, failing closed: a
// decision is Redis's or an error.
func (l *Limiter) of(limit Limit) *resilienceredis.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl, ok := l.limiters[limit]
	if !ok {
		rl = resilienceredis.NewLimiter(l.rdb, float64(limit.Rate)/limit.Period.Seconds(), limit.Burst, resilienceredis.WithFailClosed())
		l.limiters[limit] = rl
	}
	return rl
}

// Result is a decision.
type Result struct {
	// Limit is the limit of the decision.
	Limit Limit
	// Allowed is the number of events let through: n or 0.
	Allowed int
	// RetryAfter is the wait until the events would be let through, or -1
	// when they were.
	RetryAfter time.Duration
}

// Allow is AllowN(ctx, key, limit, 1).
func (l *Limiter) Allow(ctx context.Context, key string, limit Limit) (*Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN lets n events of key through if the bucket has them.
func (l *Limiter) AllowN(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	err := l.of(limit).AllowN(ctx, key, n)
	if err == nil {
		return &Result{Limit: limit, Allowed: n, RetryAfter: -1}, nil
	}
	var refused *resilienceredis.RefusedError
	if errors.As(err, &refused) {
		after, _ := resilience.RetryAfter(err)
		return &Result{Limit: limit, RetryAfter: after}, nil
	}
	return nil, err
}

// Reset empties the key's bucket record, so that it is full again.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, resilienceredis.DefaultKeyPrefix+key).Err()
}

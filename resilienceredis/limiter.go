package resilienceredis

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/redis/go-redis/v9"
)

// Scripter is what a [Limiter] needs of a Redis client: *redis.Client,
// *redis.ClusterClient and *redis.Ring all are one.
type Scripter interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

// Limiter is a rate limit shared by every process that uses the same Redis
// and the same key: a token bucket per key that holds at most burst tokens,
// starts full and refills at rate tokens a second, as a
// [resilience.RateLimiter] does. Over any stretch of time t, all the
// processes together take no more than rate·t + burst tokens of a key.
//
// Each decision is one round trip to Redis, waiting at most its timeout
// ([WithTimeout]), or for tokens it chose to wait for ([WithRateLimitWait]).
// When Redis fails or does not answer in time, the limiter limits locally
// ([WithFailOpen], the default) or refuses with [ErrUnavailable]
// ([WithFailClosed]) until a probe ([WithProbeInterval]) finds Redis again.
// A refusal is a [*RefusedError], matching [resilience.ErrRateLimited] and
// [resilience.ErrRefused]; a key whose value is other data fails alone,
// with [ErrKeyConflict]. It is safe for concurrent use; make one with
// [NewLimiter]. The README says how it works and why a *redis.Client with
// ContextTimeoutEnabled suits it.
type Limiter struct {
	client      Scripter
	interval    int64 // microseconds between two tokens
	tau         int64 // microseconds: interval times burst
	intervalArg any   // the interval and tau as the script's arguments
	tauArg      any
	sha         string
	burst       int
	rate        float64
	timeout     time.Duration
	wait        time.Duration
	prefix      string
	closed      bool
	direct      bool // the client honours deadlines: the script runs on the caller's goroutine
	local       *resilience.KeyedRateLimiter[string]
	localRate   float64
	observer    resilience.Observer
	name        string
	health
}

// NewLimiter returns a limiter of rate tokens a second, up to burst at
// once, for each key, kept in Redis through client. It panics if client is
// nil, if rate is not positive and finite or above 1e6 (the interval
// between tokens must be at least a microsecond), if burst is negative, or
// if an option is invalid. A burst of 0 admits nothing.
func NewLimiter(client Scripter, rate float64, burst int, opts ...Option) *Limiter {
	if client == nil {
		panic("resilienceredis: NewLimiter: client is nil")
	}
	iv := intervalMicros(rate, burst)
	cfg := config{timeout: DefaultTimeout, probe: DefaultProbeInterval, share: 1, prefix: DefaultKeyPrefix}
	for _, o := range opts {
		if o == nil {
			panic("resilienceredis: NewLimiter: option is nil")
		}
		o.apply(&cfg)
	}
	l := &Limiter{
		client: client, interval: iv, tau: iv * int64(burst),
		intervalArg: itoa(iv), sha: script.Hash(), tauArg: itoa(iv * int64(burst)),
		burst: burst, rate: 1e6 / float64(iv),
		timeout: cfg.timeout, wait: cfg.wait, prefix: cfg.prefix, closed: cfg.closed,
		observer: cfg.observer, name: cfg.name, direct: honoursDeadlines(client),
	}
	l.health.probe = cfg.probe
	if !cfg.closed {
		l.localRate = l.rate * cfg.share
		lb := max(1, int(math.Ceil(float64(burst)*cfg.share)))
		if burst == 0 {
			lb = 0
		}
		l.local = resilience.NewKeyedRateLimiter[string](l.localRate, lb)
	}
	return l
}

// Rate returns the rate the limiter enforces, in tokens a second, with the
// interval between tokens rounded to a whole microsecond.
func (l *Limiter) Rate() float64 { return l.rate }

// Burst returns the most tokens a key may take at once.
func (l *Limiter) Burst() int { return l.burst }

// Degraded reports whether the limiter is answering without Redis.
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// Allow takes a token of key if it is there. It returns nil when it is,
// a [*RefusedError] when it is not, ctx's error when ctx ended first, an
// error matching [ErrKeyConflict] when key's Redis value is other data,
// and, for a fail-closed limiter that cannot reach Redis, an error
// matching [ErrUnavailable].
func (l *Limiter) Allow(ctx context.Context, key string) error { return l.AllowN(ctx, key, 1) }

// AllowN takes n tokens of key at once if they are there, as Allow takes
// one. A cost of 0 always succeeds when Redis answers. It panics if n is
// negative.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) error {
	if n < 0 {
		panic(fmt.Sprintf("resilienceredis: Limiter.AllowN: n must not be negative, got %d", n))
	}
	return l.decide(ctx, key, n, 0)
}

// decide answers one call, from Redis when it may, and waits up to maxWait
// for booked tokens.
func (l *Limiter) decide(ctx context.Context, key string, n int, maxWait time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.degraded.Load() && !l.tryProbe() {
		return l.fallback(ctx, key, n)
	}
	waitUs := int64(maxWait / time.Microsecond)
	if dl, ok := ctx.Deadline(); ok {
		waitUs = min(waitUs, int64(time.Until(dl)/time.Microsecond))
	}
	d, err := l.ask(ctx, key, n, max(waitUs, 0))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ce, ok := err.(*callerEnded); ok {
			return ce.error
		}
		l.fault(ctx, err)
		return l.fallback(ctx, key, n)
	}
	if d.conflict != "" {
		// Redis answered about one key: neither a fault nor proof of
		// health, and no business of the other keys.
		return &keyConflictError{key: l.prefix + key, typ: d.conflict}
	}
	l.healthy(ctx)
	if !d.ok {
		after := time.Duration(0)
		if d.wait >= 0 {
			after = time.Duration(d.wait) * time.Microsecond
		}
		return l.refused(ctx, &RefusedError{after: after})
	}
	if d.wait > 0 {
		return sleep(ctx, time.Duration(d.wait)*time.Microsecond)
	}
	return nil
}

// fallback answers a call without Redis.
func (l *Limiter) fallback(ctx context.Context, key string, n int) error {
	if l.closed {
		if err := l.lastErr(); err != nil {
			return &unavailableError{err: err}
		}
		return ErrUnavailable
	}
	if l.local.AllowN(key, n) {
		return nil
	}
	after := time.Duration(0)
	if n <= l.local.Burst() {
		missing := float64(n) - l.local.Tokens(key)
		after = time.Duration(math.Ceil(missing / l.localRate * 1e9))
	}
	return l.refused(ctx, &RefusedError{after: after, local: true})
}

func (l *Limiter) refused(ctx context.Context, err *RefusedError) error {
	if l.observer != nil {
		l.observer.Observe(ctx, resilience.Event{Kind: resilience.EventRefused, Component: component, Name: l.name, Err: err, Wait: err.after})
	}
	return err
}

// component is the Component of the limiter's events.
const component = "redis-rate-limiter"

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Guard returns the limiter as a [resilience.Guard] for calls whose key
// key finds in their context. It refuses a call at once, unless
// [WithRateLimitWait] lets it wait. It panics if key is nil.
func (l *Limiter) Guard(key func(ctx context.Context) string) resilience.Guard {
	if key == nil {
		panic("resilienceredis: Limiter.Guard: key function is nil")
	}
	return &guard{l: l, key: key}
}

// GuardKey returns the limiter as a [resilience.Guard] for calls that all
// share the one key.
func (l *Limiter) GuardKey(key string) resilience.Guard {
	return &guard{l: l, fixed: key}
}

type guard struct {
	l     *Limiter
	key   func(ctx context.Context) string
	fixed string
}

func nothing(error) {}

// Enter takes a token of the call's key, as a guard.
func (g *guard) Enter(ctx context.Context) (func(err error), error) {
	key := g.fixed
	if g.key != nil {
		key = g.key(ctx)
	}
	if err := g.l.decide(ctx, key, 1, g.l.wait); err != nil {
		return nil, err
	}
	return nothing, nil
}

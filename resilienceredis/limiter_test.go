package resilienceredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

var ctxBG = context.Background()

var keySeq atomic.Int64

// uniqueKey names a key no other test and no earlier run used on the
// shared server.
func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", t.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

// frozen returns a limiter on a miniredis whose clock stands still at t0
// until the test moves it. Its timeout is a minute, so that every answer
// comes from Redis however slow the machine (the default, 50ms, can pass
// under the race detector on a busy machine, and a degraded limiter
// answers from its local share instead); opts come after it.
func frozen(t *testing.T, rate float64, burst int, opts ...resilienceredis.Option) (*resilienceredis.Limiter, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	mr.SetTime(time.Unix(1_700_000_000, 0))
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { c.Close() })
	opts = append([]resilienceredis.Option{resilienceredis.WithTimeout(time.Minute)}, opts...)
	return resilienceredis.NewLimiter(c, rate, burst, opts...), mr
}

// TestFrozenBursts: on a clock that stands still, a key admits exactly its
// burst (redis_rate admits 1 of a burst of 2), then one token per interval.
func TestFrozenBursts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate        float64
		burst, cost int
		admitted    int
		hint        time.Duration // of the first refusal
	}{
		{"burst 1", 10, 1, 1, 1, 100 * time.Millisecond},
		{"burst 2", 10, 2, 1, 2, 100 * time.Millisecond},
		{"burst 10", 3, 10, 1, 10, 333333 * time.Microsecond},
		{"cost 3 of 10", 10, 10, 3, 3, 200 * time.Millisecond},
		{"cost above burst", 10, 2, 3, 0, 0},
		{"burst 0", 10, 0, 1, 0, 0},
		{"cost 0", 10, 0, 0, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := frozen(t, tc.rate, tc.burst)
			got := 0
			var refusal error
			for range 100 {
				err := l.AllowN(ctxBG, "k", tc.cost)
				if err != nil {
					refusal = err
					break
				}
				got++
			}
			require.Equal(t, tc.admitted, got)
			if got < 100 {
				require.ErrorIs(t, refusal, resilience.ErrRateLimited)
				hint, ok := resilience.RetryAfter(refusal)
				require.Equal(t, tc.hint > 0, ok)
				require.Equal(t, tc.hint, hint)
			}
		})
	}
}

// TestFrozenRefill: tokens come back one per interval, never more than the
// burst, and the hint says exactly when.
func TestFrozenRefill(t *testing.T) {
	l, mr := frozen(t, 10, 2)
	t0 := time.Unix(1_700_000_000, 0)
	require.NoError(t, l.Allow(ctxBG, "k"))
	require.NoError(t, l.Allow(ctxBG, "k"))
	err := l.Allow(ctxBG, "k")
	hint, _ := resilience.RetryAfter(err)
	require.Equal(t, 100*time.Millisecond, hint)
	mr.SetTime(t0.Add(99999 * time.Microsecond))
	err = l.Allow(ctxBG, "k")
	hint, _ = resilience.RetryAfter(err)
	require.Equal(t, time.Microsecond, hint)
	mr.SetTime(t0.Add(100 * time.Millisecond))
	require.NoError(t, l.Allow(ctxBG, "k"))
	require.ErrorIs(t, l.Allow(ctxBG, "k"), resilience.ErrRateLimited)
	mr.SetTime(t0.Add(time.Hour)) // long idle: the bucket is full, not fuller
	require.NoError(t, l.Allow(ctxBG, "k"))
	require.NoError(t, l.Allow(ctxBG, "k"))
	require.ErrorIs(t, l.Allow(ctxBG, "k"), resilience.ErrRateLimited)
	require.NoError(t, l.Allow(ctxBG, "other"), "keys are independent")
}

// TestKeysExpire: a key lives until its bucket is full again, no longer.
func TestKeysExpire(t *testing.T) {
	l, mr := frozen(t, 10, 5, resilienceredis.WithKeyPrefix("p:"))
	require.NoError(t, l.AllowN(ctxBG, "k", 3))
	require.Equal(t, 300*time.Millisecond, mr.TTL("p:k"))
	mr.FastForward(300 * time.Millisecond)
	require.False(t, mr.Exists("p:k"))
}

// TestRealServer: the same semantics on a real redis-server, and the script
// is loaded again when the server lost it.
func TestRealServer(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: sharedAddr})
	defer c.Close()
	// No refill within the test, and a timeout no slow machine reaches.
	l := resilienceredis.NewLimiter(c, 0.001, 3, resilienceredis.WithTimeout(time.Minute))
	key := uniqueKey(t)
	for range 3 {
		require.NoError(t, l.Allow(ctxBG, key))
	}
	err := l.Allow(ctxBG, key)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
	var re *resilienceredis.RefusedError
	require.ErrorAs(t, err, &re)
	require.Greater(t, re.RetryAfter(), 990*time.Second)
	ttl, err := c.PTTL(ctxBG, resilienceredis.DefaultKeyPrefix+key).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0))
	require.LessOrEqual(t, ttl, 3000*time.Second)

	require.NoError(t, c.ScriptFlush(ctxBG).Err())
	require.NoError(t, l.Allow(ctxBG, key+"-2"), "NOSCRIPT loads the script again")
	require.False(t, l.Degraded())
}

// TestFleet: goroutines on several separate clients (separate pools, as
// separate machines would be) sharing one key never get more than rate·t +
// burst between them.
func TestFleet(t *testing.T) {
	const rate, burst, clients, workers = 200.0, 20, 3, 4
	key := uniqueKey(t)
	start := time.Now()
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		c := redis.NewClient(&redis.Options{Addr: sharedAddr})
		defer c.Close()
		l := resilienceredis.NewLimiter(c, rate, burst, resilienceredis.WithTimeout(time.Second))
		for range workers {
			wg.Go(func() {
				for range 60 {
					err := l.Allow(ctxBG, key)
					switch {
					case err == nil:
						admitted.Add(1)
					case errors.Is(err, resilience.ErrRateLimited):
						refused.Add(1)
					default:
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start) // longer than the server's window: a safe bound
	bound := int64(rate*elapsed.Seconds()) + burst + 1
	t.Logf("admitted %d, refused %d in %v (bound %d)", admitted.Load(), refused.Load(), elapsed, bound)
	require.LessOrEqual(t, admitted.Load(), bound)
	require.GreaterOrEqual(t, admitted.Load(), int64(burst))
	require.Equal(t, int64(clients*workers*60), admitted.Load()+refused.Load())
}

// TestGuard: the limiter as a Guard, with the key from the context or fixed.
func TestGuard(t *testing.T) {
	l, _ := frozen(t, 10, 1)
	type ctxKey struct{}
	g := l.Guard(func(ctx context.Context) string { return ctx.Value(ctxKey{}).(string) })
	p := resilience.Guarded[int](g)
	fn := func(context.Context) (int, error) { return 1, nil }
	a := context.WithValue(ctxBG, ctxKey{}, "a")
	_, err := p.Execute(a, fn)
	require.NoError(t, err)
	_, err = p.Execute(a, fn)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
	_, err = p.Execute(context.WithValue(ctxBG, ctxKey{}, "b"), fn)
	require.NoError(t, err)
	fixed := resilience.Guarded[int](l.GuardKey("c"))
	_, err = fixed.Execute(ctxBG, fn)
	require.NoError(t, err)
	_, err = fixed.Execute(ctxBG, fn)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
}

// TestBadInput: bad arguments panic naming the function and the value.
func TestBadInput(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: sharedAddr})
	defer c.Close()
	for _, tc := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"nil client", func() { resilienceredis.NewLimiter(nil, 1, 1) }, "resilienceredis: NewLimiter: client is nil"},
		{"zero rate", func() { resilienceredis.NewLimiter(c, 0, 1) }, "resilienceredis: NewLimiter: rate must be positive and finite, got 0"},
		{"rate too high", func() { resilienceredis.NewLimiter(c, 3e6, 1) }, "resilienceredis: NewLimiter: rate must be at most 1e6 a second, got 3e+06"},
		{"negative burst", func() { resilienceredis.NewLimiter(c, 1, -1) }, "resilienceredis: NewLimiter: burst must not be negative, got -1"},
		{"timeout", func() { resilienceredis.WithTimeout(0) }, "resilienceredis: WithTimeout: timeout must be positive, got 0s"},
		{"share", func() { resilienceredis.WithFailOpen(1.5) }, "resilienceredis: WithFailOpen: share must be in (0, 1], got 1.5"},
		{"wait", func() { resilienceredis.WithRateLimitWait(-1) }, "resilienceredis: WithRateLimitWait: wait must not be negative, got -1ns"},
		{"nil option", func() { resilienceredis.NewLimiter(c, 1, 1, nil) }, "resilienceredis: NewLimiter: option is nil"},
		{"negative n", func() { resilienceredis.NewLimiter(c, 1, 1).AllowN(ctxBG, "k", -1) }, "resilienceredis: Limiter.AllowN: n must not be negative, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) { require.PanicsWithValue(t, tc.msg, tc.f) })
	}
}

// TestAllocs pins the allocations of an admitted decision against the real
// server, with go-redis's default options (the script runs in a worker)
// and with ContextTimeoutEnabled (on the caller's goroutine): the request,
// its worker and its context cost nothing; what remains is the client's
// own (the command, its arguments, the reply).
func TestAllocs(t *testing.T) {
	for _, ctxTimeout := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled %v", ctxTimeout), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: sharedAddr, ContextTimeoutEnabled: ctxTimeout})
			defer c.Close()
			l := resilienceredis.NewLimiter(c, 1e6, 1_000_000)
			key := uniqueKey(t)
			require.NoError(t, l.Allow(ctxBG, key))
			allocs := testing.AllocsPerRun(200, func() {
				if err := l.Allow(ctxBG, key); err != nil {
					t.Fatal(err)
				}
			})
			limit := 11.0
			if raceEnabled {
				limit += 5 // a request dropped by sync.Pool: itself, its channels, its timer and function
			}
			require.LessOrEqual(t, allocs, limit)
		})
	}
}

// TestGuardWait: with WithRateLimitWait a guarded call whose tokens come
// within the wait books them and waits; one whose tokens come later, or
// after its context's deadline, is refused at once with the hint.
func TestGuardWait(t *testing.T) {
	fn := func(context.Context) (int, error) { return 1, nil }
	for _, tc := range []struct {
		name     string
		rate     float64
		wait     time.Duration
		deadline time.Duration // 0: none
		admitted bool
		hint     time.Duration
	}{
		{"within the wait", 1000, 50 * time.Millisecond, 0, true, 0},
		{"beyond the wait", 10, 50 * time.Millisecond, 0, false, 100 * time.Millisecond},
		{"beyond the deadline", 10, 200 * time.Millisecond, 50 * time.Millisecond, false, 100 * time.Millisecond},
		{"no wait", 1000, 0, 0, false, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := frozen(t, tc.rate, 1, resilienceredis.WithRateLimitWait(tc.wait))
			p := resilience.Guarded[int](l.GuardKey("k"))
			_, err := p.Execute(ctxBG, fn)
			require.NoError(t, err)
			ctx := ctxBG
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctxBG, tc.deadline)
				defer cancel()
			}
			_, err = p.Execute(ctx, fn)
			if tc.admitted {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, resilience.ErrRateLimited)
			hint, _ := resilience.RetryAfter(err)
			require.Equal(t, tc.hint, hint)
		})
	}
}

// TestKeyHoldingOtherData: a key whose Redis value is not a limiter's
// state (its name shared with other data) fails that key's decisions with
// ErrKeyConflict. Redis answered: the limiter is not degraded, other keys
// are still decided by Redis, fail-open or fail-closed, and the other data
// is left as it was.
func TestKeyHoldingOtherData(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: sharedAddr})
	defer c.Close()
	for _, data := range []struct {
		name  string
		typ   string // as the error names it
		write func(key string) error
		check func(key string) (any, error)
	}{
		{"hash", "hash",
			func(k string) error { return c.HSet(ctxBG, k, "field", "value").Err() },
			func(k string) (any, error) { return c.HGetAll(ctxBG, k).Result() }},
		{"list", "list",
			func(k string) error { return c.RPush(ctxBG, k, "a", "b").Err() },
			func(k string) (any, error) { return c.LRange(ctxBG, k, 0, -1).Result() }},
		{"set", "set",
			func(k string) error { return c.SAdd(ctxBG, k, "a").Err() },
			func(k string) (any, error) { return c.SMembers(ctxBG, k).Result() }},
		{"sorted set", "zset",
			func(k string) error { return c.ZAdd(ctxBG, k, redis.Z{Score: 1, Member: "a"}).Err() },
			func(k string) (any, error) { return c.ZRangeWithScores(ctxBG, k, 0, -1).Result() }},
		{"string that is not a number", "string",
			func(k string) error { return c.Set(ctxBG, k, "session data", 0).Err() },
			func(k string) (any, error) { return c.Get(ctxBG, k).Result() }},
	} {
		for _, mode := range []struct {
			name string
			opt  resilienceredis.Option
		}{
			{"fail open", resilienceredis.WithFailOpen(1)},
			{"fail closed", resilienceredis.WithFailClosed()},
		} {
			t.Run(data.name+", "+mode.name, func(t *testing.T) {
				rec := &recorder{}
				// No refill within the test; a timeout no slow machine reaches.
				l := resilienceredis.NewLimiter(c, 0.001, 1, mode.opt,
					resilienceredis.WithTimeout(time.Minute), resilienceredis.WithObserver(rec))
				taken, other := uniqueKey(t), uniqueKey(t)
				require.NoError(t, data.write(resilienceredis.DefaultKeyPrefix+taken))
				before, err := data.check(resilienceredis.DefaultKeyPrefix + taken)
				require.NoError(t, err)

				for range 3 {
					err = l.Allow(ctxBG, taken)
					require.ErrorIs(t, err, resilienceredis.ErrKeyConflict)
					require.NotErrorIs(t, err, resilience.ErrRateLimited)
					require.NotErrorIs(t, err, resilienceredis.ErrUnavailable)
					require.EqualError(t, err, fmt.Sprintf("resilienceredis: key holds other data: %q is a Redis %s, not a rate limit's state",
						resilienceredis.DefaultKeyPrefix+taken, data.typ))
					require.False(t, l.Degraded(), "one key's data is no fault of Redis")
				}
				_, err = resilience.Guarded[int](l.GuardKey(taken)).Execute(ctxBG, func(context.Context) (int, error) {
					t.Error("the guarded call ran")
					return 0, nil
				})
				require.ErrorIs(t, err, resilienceredis.ErrKeyConflict)

				// Another key: decided by Redis, its burst of 1 and then a
				// refusal with Redis's hint (the local share would admit
				// again after a fault, or ErrUnavailable when closed).
				require.NoError(t, l.Allow(ctxBG, other))
				err = l.Allow(ctxBG, other)
				require.ErrorIs(t, err, resilience.ErrRateLimited)
				require.Equal(t, "resilienceredis: rate limited", err.Error(), "Redis's answer, not the local one")
				require.False(t, l.Degraded())
				require.Empty(t, rec.got(), "no degradation reported")

				after, err := data.check(resilienceredis.DefaultKeyPrefix + taken)
				require.NoError(t, err)
				require.Equal(t, before, after, "the other data is untouched")
			})
		}
	}
}

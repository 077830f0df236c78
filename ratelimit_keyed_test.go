package resilience_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

func TestKeyedRateLimiterKeysAreIndependent(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewKeyedRateLimiter[string](1, 2, resilience.WithClock(clk))
	assert.Equal(t, []bool{true, true, false}, []bool{l.Allow("alice"), l.Allow("alice"), l.Allow("alice")})
	assert.True(t, l.Allow("bob"), "alice's calls take nothing from bob")
	assert.Equal(t, 0.0, l.Tokens("alice"))
	assert.Equal(t, 1.0, l.Tokens("bob"))
	assert.Equal(t, 2.0, l.Tokens("carol"), "a key never seen has a full bucket")
	assert.Equal(t, 2, l.Len(), "asking about carol does not store her")
	assert.False(t, l.AllowN("dave", 3), "more than the burst")
	assert.Equal(t, 2, l.Len())
	assert.Equal(t, 1.0, l.Rate())
	assert.Equal(t, 2, l.Burst())

	clk.Add(time.Second)
	assert.True(t, l.Allow("alice"))
	assert.False(t, l.Allow("alice"))

	unlimited := resilience.NewKeyedRateLimiter[int](resilience.RateUnlimited, 0)
	assert.True(t, unlimited.AllowN(1, 1000))
	assert.Zero(t, unlimited.Len(), "no limit, nothing to remember")
}

// TestKeyedRateLimiterForgettingChangesNoDecision runs a long random trace
// over many keys twice: through a keyed limiter, which forgets keys whose
// buckets have refilled, and through one RateLimiter a key, which forgets
// nothing. Every decision must be the same, and keys must have been
// forgotten on the way.
func TestKeyedRateLimiterForgettingChangesNoDecision(t *testing.T) {
	for _, burst := range []int{1, 3} {
		t.Run("burst "+strconv.Itoa(burst), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(burst), 7))
			clk := newManualClock()
			keyed := resilience.NewKeyedRateLimiter[int](1000, burst, resilience.WithClock(clk))
			single := map[int]*resilience.RateLimiter{}
			forgot := false
			for i := range 20000 {
				clk.Add(time.Duration(rng.IntN(300)) * time.Microsecond)
				key, n := rng.IntN(200), rng.IntN(burst+2)
				if single[key] == nil {
					single[key] = resilience.NewRateLimiter(1000, burst, resilience.WithClock(clk))
				}
				want := single[key].AllowN(n)
				require.Equal(t, want, keyed.AllowN(key, n), "call %d: AllowN(%d, %d)", i, key, n)
				require.Equal(t, single[key].Tokens(), keyed.Tokens(key), "call %d: Tokens(%d)", i, key)
				if keyed.Len() < len(single) {
					forgot = true
				}
			}
			assert.True(t, forgot, "no key was ever forgotten")

			// An hour later, new keys coming to every part of the table
			// sweep the old ones away.
			clk.Add(time.Hour)
			for key := 1000; key < 3000; key++ {
				keyed.Allow(key)
			}
			assert.Equal(t, 2000, keyed.Len(), "only the new keys are left")
		})
	}
}

func TestKeyedRateLimiterMaxKeys(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(clk), resilience.WithRateLimitMaxKeys(2))
	require.True(t, l.Allow("alice"))
	clk.Add(400 * time.Millisecond)
	require.True(t, l.Allow("bob"))
	assert.False(t, l.Allow("carol"), "the table is full of buckets still refilling")
	assert.True(t, l.AllowN("carol", 0), "taking nothing needs no room")

	_, err := resilience.Guarded[int](l.Guard(func(context.Context) string { return "carol" })).Execute(context.Background(), okFunc)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
	assert.Equal(t, "resilience: rate limited: the limiter holds as many keys as it may", err.Error())
	hint, _ := resilience.RetryAfter(err)
	assert.Equal(t, 600*time.Millisecond, hint, "until alice's bucket is full and she can be forgotten")

	clk.Add(hint)
	assert.True(t, l.Allow("carol"))
	assert.Equal(t, 2, l.Len(), "alice made room")
	assert.Equal(t, 1.0, l.Tokens("alice"))
}

// TestKeyedRateLimiterMaxKeysUnderContention: new keys that come together,
// from many goroutines and to every part of the table at once, never make
// the table hold more keys than WithRateLimitMaxKeys allows, nor admit
// more new keys. The clock stands still, so no key can be forgotten: each
// round admits exactly that many.
func TestKeyedRateLimiterMaxKeysUnderContention(t *testing.T) {
	const maxKeys, goroutines, keysEach, rounds = 8, 64, 4, 50
	for round := range rounds {
		l := resilience.NewKeyedRateLimiter[int](1, 1, resilience.WithClock(newManualClock()), resilience.WithRateLimitMaxKeys(maxKeys))
		var admitted, most atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				<-start
				for k := range keysEach {
					if l.Allow(g*keysEach + k) {
						admitted.Add(1)
					}
					n := int64(l.Len())
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
				}
			})
		}
		close(start)
		wg.Wait()
		require.LessOrEqual(t, most.Load(), int64(maxKeys), "round %d: most keys held at once", round)
		require.Equal(t, int64(maxKeys), admitted.Load(), "round %d: new keys admitted", round)
		require.Equal(t, maxKeys, l.Len(), "round %d: keys held at the end", round)
	}
}

type userKey struct{}

func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

func TestKeyedRateLimiterGuard(t *testing.T) {
	clk := newManualClock()
	events := &recorder{}
	l := resilience.NewKeyedRateLimiter[string](2, 1, resilience.WithClock(clk), resilience.WithObserver(events))
	p := resilience.Guarded[int](l.Guard(userOf))
	alice := context.WithValue(context.Background(), userKey{}, "alice")
	bob := context.WithValue(context.Background(), userKey{}, "bob")

	_, err := p.Execute(alice, okFunc)
	require.NoError(t, err)
	clk.Add(100 * time.Millisecond)
	_, err = p.Execute(alice, okFunc)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
	hint, _ := resilience.RetryAfter(err)
	assert.Equal(t, 400*time.Millisecond, hint)
	_, err = p.Execute(bob, okFunc)
	assert.NoError(t, err)
	require.Len(t, events.events, 1)
	assert.Equal(t, resilience.EventRefused, events.events[0].Kind)
	assert.Equal(t, resilience.KindKeyedRateLimiter, events.events[0].Component)
	assert.Equal(t, 400*time.Millisecond, events.events[0].Wait)

	done, err := l.Guard(userOf).Enter(bob)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
	assert.Nil(t, done)
	clk.Add(500 * time.Millisecond)
	done, err = l.Guard(userOf).Enter(bob)
	require.NoError(t, err)
	done(nil)
}

func TestKeyedRateLimiterWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := resilience.NewKeyedRateLimiter[string](10, 1, resilience.WithRateLimitWait(time.Second))
		p := resilience.Guarded[int](l.Guard(userOf))
		alice := context.WithValue(ctx, userKey{}, "alice")

		start := time.Now()
		require.NoError(t, l.Wait(ctx, "alice"))
		_, err := p.Execute(alice, okFunc)
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "the guard waited for alice's token")

		short, cancel := context.WithTimeout(alice, 50*time.Millisecond)
		defer cancel()
		start = time.Now()
		err = l.Wait(short, "alice")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, resilience.ErrRateLimited)
		assert.Zero(t, time.Since(start))
		assert.ErrorIs(t, l.WaitN(ctx, "alice", 2), resilience.ErrRateLimited)

		giveUp, cancelGiveUp := context.WithCancel(ctx)
		go func() {
			time.Sleep(30 * time.Millisecond)
			cancelGiveUp()
		}()
		assert.Equal(t, context.Canceled, l.Wait(giveUp, "alice"))
		assert.InDelta(t, 0.3, l.Tokens("alice"), 1e-9, "the booked token is back")
		time.Sleep(70 * time.Millisecond)
		assert.True(t, l.Allow("alice"))
	})
}

// TestKeyedGuardWaits: the keyed guard with WithRateLimitWait admits a
// call once its wait is over, and refuses, without calling fn, a call
// whose wait would be too long or whose caller leaves during it.
func TestKeyedGuardWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := resilience.NewKeyedRateLimiter[string](10, 1, resilience.WithRateLimitWait(120*time.Millisecond))
		p := resilience.Guarded[int](l.Guard(func(context.Context) string { return "alice" }))
		calls := 0
		fn := func(context.Context) (int, error) { calls++; return 1, nil }
		start := time.Now()

		_, err := p.Execute(context.Background(), fn)
		require.NoError(t, err, "the burst")
		_, err = p.Execute(context.Background(), fn)
		require.NoError(t, err, "a wait of 100ms")
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "admitted once its token came")

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = p.Execute(ctx, fn)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the caller left during the wait")
		assert.Equal(t, 2, calls, "fn is not called for a call whose wait failed")

		_, err = resilience.Guarded[int](l.Guard(func(context.Context) string { return "alice" })).Execute(context.Background(),
			func(context.Context) (int, error) { calls++; return 1, nil })
		require.NoError(t, err, "the token booked by the caller that left came back")

		l2 := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithRateLimitWait(150*time.Millisecond))
		p2 := resilience.Guarded[int](l2.Guard(func(context.Context) string { return "bob" }))
		_, _ = p2.Execute(context.Background(), fn)
		_, err = p2.Execute(context.Background(), fn)
		require.ErrorIs(t, err, resilience.ErrRateLimited, "a wait of 1s is more than 150ms")
		assert.Equal(t, 4, calls)
	})
}

// TestKeyedRateLimiterRateZero: at a rate of 0 each key has its burst and
// no more, ever; keys do not share it.
func TestKeyedRateLimiterRateZero(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewKeyedRateLimiter[string](0, 2, resilience.WithClock(clk))
	assert.True(t, l.Allow("a"))
	assert.True(t, l.Allow("a"))
	assert.False(t, l.Allow("a"))
	clk.Add(24 * time.Hour)
	assert.False(t, l.Allow("a"), "time brings no token at a rate of 0")
	assert.True(t, l.AllowN("b", 2), "another key has a burst of its own")
	assert.False(t, l.Allow("b"))
	assert.Zero(t, l.Tokens("a"))
}

// TestKeyedRateLimiterAllowRefusedEvents: a refusal of the keyed AllowN
// reports the same event as RateLimiter.AllowN's: the time until the
// tokens are there, or no hint when they never will be (more than the
// burst, or a rate of 0 with nothing left).
func TestKeyedRateLimiterAllowRefusedEvents(t *testing.T) {
	tests := []struct {
		name        string
		rate        float64
		burst, take int // take tokens first, then ask for n
		n           int
		want        time.Duration
	}{
		{"a token comes later", 4, 1, 1, 1, 250 * time.Millisecond},
		{"two tokens come later", 4, 2, 2, 2, 500 * time.Millisecond},
		{"more than the burst", 4, 2, 0, 3, 0},
		{"a rate of 0 with nothing left", 0, 1, 1, 1, 0},
		{"a rate of 0 with too little left", 0, 3, 2, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			single, keyedEvents := &recorder{}, &recorder{}
			l := resilience.NewRateLimiter(tc.rate, tc.burst, resilience.WithClock(clk), resilience.WithObserver(single))
			keyed := resilience.NewKeyedRateLimiter[string](tc.rate, tc.burst, resilience.WithClock(clk), resilience.WithObserver(keyedEvents))
			require.True(t, l.AllowN(tc.take))
			require.True(t, keyed.AllowN("alice", tc.take))
			require.False(t, l.AllowN(tc.n))
			require.False(t, keyed.AllowN("alice", tc.n))
			want := resilience.Event{Kind: resilience.EventRefused, Component: resilience.KindRateLimiter, Err: resilience.ErrRateLimited, Wait: tc.want}
			assert.Equal(t, []resilience.Event{want}, single.take(), "RateLimiter.AllowN")
			want.Component = resilience.KindKeyedRateLimiter
			assert.Equal(t, []resilience.Event{want}, keyedEvents.take(), "KeyedRateLimiter.AllowN")
		})
	}
}

// TestKeyedRateLimiterOneKey: a table of one key holds that key, and
// refuses another until the first can be forgotten.
func TestKeyedRateLimiterOneKey(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(clk), resilience.WithRateLimitMaxKeys(1))
	assert.True(t, l.Allow("alice"))
	assert.False(t, l.Allow("bob"), "alice's bucket still refills")
	assert.Equal(t, 1, l.Len())
	clk.Add(time.Second)
	assert.True(t, l.Allow("bob"), "alice's bucket is full: she is forgotten")
	assert.Equal(t, 1, l.Len())
}

// TestKeyedRateLimiterForgetsAtTheRefillTime: the keys of buckets full
// again are forgotten as soon as new keys come to their part of the table,
// a refill time after the last sweep: to the nanosecond, round after round.
// (Each round's 2000 keys reach every part of the table but with a chance
// of 64·(63/64)^2000, below 1e-12.)
func TestKeyedRateLimiterForgetsAtTheRefillTime(t *testing.T) {
	const keys = 2000
	clk := newManualClock()
	l := resilience.NewKeyedRateLimiter[int](1000, 1, resilience.WithClock(clk)) // refills in 1ms
	for round := range 4 {
		for k := range keys {
			require.True(t, l.Allow(round*keys+k), "round %d, key %d", round, k)
		}
		assert.Equal(t, keys, l.Len(), "round %d: the keys of the round before are full and forgotten", round)
		clk.Add(time.Millisecond)
	}
}

// TestKeyedRateLimiterFullTableRefusesWhileKeysRefill: a table full of
// keys still refilling refuses a new key, even when the keys it holds were
// used again since they came (their part of the table may then not know
// when they will be full). Each run has a table of its own, so a new key
// comes to another part than the key held in most runs.
func TestKeyedRateLimiterFullTableRefusesWhileKeysRefill(t *testing.T) {
	for run := range 20 {
		clk := newManualClock()
		l := resilience.NewKeyedRateLimiter[string](1, 2, resilience.WithClock(clk), resilience.WithRateLimitMaxKeys(1))
		require.True(t, l.Allow("alice"))
		clk.Add(900 * time.Millisecond)
		require.True(t, l.Allow("alice"))
		clk.Add(600 * time.Millisecond) // alice's bucket is full in 0.5s
		require.False(t, l.Allow("bob"), "run %d: the table is full", run)
		require.Equal(t, 1, l.Len(), "run %d", run)
		clk.Add(500 * time.Millisecond)
		require.True(t, l.Allow("bob"), "run %d: alice is forgotten", run)
		require.Equal(t, 1, l.Len(), "run %d", run)
	}
}

// TestKeyedRateLimiterWaitOnTime: a Wait whose token is there the moment
// it asks takes it without waiting, and reports no wait, as the
// RateLimiter's does.
func TestKeyedRateLimiterWaitOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		single, keyedEvents := &recorder{}, &recorder{}
		l := resilience.NewRateLimiter(10, 1, resilience.WithObserver(single))
		keyed := resilience.NewKeyedRateLimiter[string](10, 1, resilience.WithObserver(keyedEvents))
		require.True(t, l.Allow())
		require.True(t, keyed.Allow("alice"))
		time.Sleep(100 * time.Millisecond) // the next token is there
		require.NoError(t, l.Wait(ctx))
		require.NoError(t, keyed.Wait(ctx, "alice"))
		assert.Empty(t, single.take(), "RateLimiter.Wait")
		assert.Empty(t, keyedEvents.take(), "KeyedRateLimiter.Wait")
		assert.False(t, keyed.Allow("alice"), "the token was taken")
	})
}

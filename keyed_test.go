package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyCtx is the context key of the tests' keys.
type keyCtx struct{}

func withKey(key string) context.Context {
	return context.WithValue(context.Background(), keyCtx{}, key)
}

func keyOf(ctx context.Context) string { s, _ := ctx.Value(keyCtx{}).(string); return s }

// TestKeyedGuardPerKey: each key gets a guard of its own, made on its first
// call; a breaker opened by one key's failures refuses that key alone.
func TestKeyedGuardPerKey(t *testing.T) {
	var made atomic.Int64
	k := resilience.NewKeyed(keyOf, func(string) *resilience.Breaker {
		made.Add(1)
		return resilience.NewBreaker(resilience.WithBreakerThreshold(2), resilience.WithBreakerCoolDown(time.Hour))
	})
	p := resilience.Guarded[int](k)
	fail := func(context.Context) (int, error) { return 0, errFlaky }
	for range 2 {
		_, _ = resilience.Do(withKey("down"), p, fail)
	}
	tests := []struct {
		key     string
		refused bool
	}{
		{"down", true}, {"a", false}, {"b", false}, {"a", false}, {"down", true},
	}
	for _, tc := range tests {
		_, err := resilience.Do(withKey(tc.key), p, okFunc)
		assert.Equal(t, tc.refused, errors.Is(err, resilience.ErrBreakerOpen), "key %q", tc.key)
	}
	assert.Equal(t, int64(3), made.Load(), "one guard per key")
	assert.Equal(t, 3, k.Len())
	b, ok := k.Lookup("down")
	require.True(t, ok)
	assert.Equal(t, resilience.BreakerOpen, b.State())
	_, ok = k.Lookup("never")
	assert.False(t, ok, "Lookup makes no guard")
}

// TestKeyedLetsGo: which guards an idle sweep lets go of. A guard idle for
// the idle time is let go of if it rests; one with a call in flight, an
// open breaker, a rate limiter owed tokens or a bulkhead with a call
// waiting is kept, however long idle.
func TestKeyedLetsGo(t *testing.T) {
	const idle = time.Minute
	tests := []struct {
		name  string
		guard func(clk resilience.Clock) resilience.Guard
		// hold leaves the guard of key "k" in the state under test, and
		// returns what ends it.
		hold func(t *testing.T, p resilience.Policy[int]) (end func())
		kept bool
	}{
		{"a closed breaker, idle", func(clk resilience.Clock) resilience.Guard { return resilience.NewBreaker(resilience.WithClock(clk)) },
			func(t *testing.T, p resilience.Policy[int]) func() { call(t, p, "k", nil); return func() {} }, false},
		{"an open breaker", func(clk resilience.Clock) resilience.Guard {
			return resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Hour), resilience.WithClock(clk))
		}, func(t *testing.T, p resilience.Policy[int]) func() { call(t, p, "k", errFlaky); return func() {} }, true},
		{"a call in flight", func(clk resilience.Clock) resilience.Guard { return resilience.NewBulkhead(4) },
			func(t *testing.T, p resilience.Policy[int]) func() { return inFlight(t, p, "k") }, true},
		{"a rate limiter owed tokens", func(clk resilience.Clock) resilience.Guard {
			return resilience.NewRateLimiter(1.0/3600, 1, resilience.WithClock(clk))
		}, func(t *testing.T, p resilience.Policy[int]) func() { call(t, p, "k", nil); return func() {} }, true},
		{"a rate limiter refilled", func(clk resilience.Clock) resilience.Guard {
			return resilience.NewRateLimiter(1, 1, resilience.WithClock(clk))
		}, func(t *testing.T, p resilience.Policy[int]) func() { call(t, p, "k", nil); return func() {} }, false},
		{"an adaptive limiter", func(clk resilience.Clock) resilience.Guard {
			return resilience.NewAdaptiveLimiter(resilience.WithClock(clk))
		},
			func(t *testing.T, p resilience.Policy[int]) func() { call(t, p, "k", nil); return func() {} }, false},
		{"a guard of the user's", func(resilience.Clock) resilience.Guard { return userGuard{} },
			func(t *testing.T, p resilience.Policy[int]) func() { call(t, p, "k", nil); return func() {} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			k := resilience.NewKeyed(keyOf, func(string) resilience.Guard { return tc.guard(clk) },
				resilience.WithKeyedIdle(idle), resilience.WithClock(clk))
			p := resilience.Guarded[int](k)
			end := tc.hold(t, p)
			defer end()
			// Sweeps come with new keys: one per period, two periods on.
			for i := range 3 {
				clk.Add(idle)
				call(t, p, fmt.Sprint("new", i), nil)
			}
			_, ok := k.Lookup("k")
			assert.Equal(t, tc.kept, ok, "kept")
		})
	}
}

// userGuard admits every call and cannot tell whether it rests.
type userGuard struct{}

func (userGuard) Enter(context.Context) (func(error), error) { return func(error) {}, nil }

// call makes one call with key through p, whose fn returns err.
func call(t *testing.T, p resilience.Policy[int], key string, err error) {
	t.Helper()
	_, _ = resilience.Do(withKey(key), p, func(context.Context) (int, error) { return 0, err })
}

// inFlight starts a call with key through p that stays in fn until the
// returned end is called, which waits for it to return.
func inFlight(t *testing.T, p resilience.Policy[int], key string) (end func()) {
	t.Helper()
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = resilience.Do(withKey(key), p, func(context.Context) (int, error) {
			close(entered)
			<-release
			return 0, nil
		})
	}()
	<-entered
	return func() { close(release); <-done }
}

// TestKeyedFull: what a new key gets when the table is full: a guard of
// its own once a resting guard can go, the overflow guard or a refusal
// when none can, and its own guard again once one can.
func TestKeyedFull(t *testing.T) {
	tests := []struct {
		name     string
		overflow bool
	}{
		{"refused", false},
		{"overflow", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			opts := []resilience.KeyedOption{resilience.WithKeyedMaxKeys(2), resilience.WithKeyedIdle(time.Minute), resilience.WithClock(clk)}
			over := resilience.NewBulkhead(1)
			if tc.overflow {
				opts = append(opts, resilience.WithKeyedOverflow(over))
			}
			k := resilience.NewKeyed(keyOf, func(string) *resilience.Bulkhead { return resilience.NewBulkhead(1) }, opts...)
			p := resilience.Guarded[int](k)
			endA, endB := inFlight(t, p, "a"), inFlight(t, p, "b")

			// Full, every guard busy.
			_, err := resilience.Do(withKey("c"), p, func(context.Context) (int, error) {
				if tc.overflow {
					assert.Equal(t, 1, over.InFlight(), "the call is on the overflow guard")
				}
				return 1, nil
			})
			if tc.overflow {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, resilience.ErrKeysFull)
				require.ErrorIs(t, err, resilience.ErrRefused)
			}
			assert.Equal(t, 0, over.InFlight())
			_, ok := k.Lookup("c")
			assert.False(t, ok)

			// One guard rests: the new key takes its place.
			endA()
			call(t, p, "c", nil)
			_, ok = k.Lookup("c")
			assert.True(t, ok, "a resting guard made room")
			_, ok = k.Lookup("a")
			assert.False(t, ok)
			assert.Equal(t, 2, k.Len())
			endB()
		})
	}
}

// TestKeyedRace: calls with many keys over a small table, from many
// goroutines, while the clock moves and guards are let go of and made: each
// call gets one answer, every guard ends empty, and the table never holds
// more than its bound (the race detector checks the rest).
func TestKeyedRace(t *testing.T) {
	clk := newManualClock()
	var mu sync.Mutex
	var made []*resilience.Bulkhead
	k := resilience.NewKeyed(keyOf, func(string) *resilience.Bulkhead {
		b := resilience.NewBulkhead(2)
		mu.Lock()
		made = append(made, b)
		mu.Unlock()
		return b
	}, resilience.WithKeyedMaxKeys(8), resilience.WithKeyedIdle(time.Millisecond), resilience.WithClock(clk),
		resilience.WithKeyedOverflow(resilience.NewBulkhead(1000)))
	p := resilience.Guarded[int](k)
	var answers atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				if g == 0 && i%10 == 0 {
					clk.Add(time.Millisecond)
				}
				_, _ = resilience.Do(withKey(fmt.Sprint((g*7+i)%24)), p, okFunc)
				answers.Add(1)
				assert.LessOrEqual(t, k.Len(), 8)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(8*300), answers.Load())
	for _, b := range made {
		assert.Equal(t, 0, b.InFlight())
	}
}

// TestKeyedAllocs: a call through a Keyed of the package's guards, on a
// key it holds, allocates nothing.
func TestKeyedAllocs(t *testing.T) {
	k := resilience.NewKeyed(keyOf, func(string) *resilience.Breaker { return resilience.NewBreaker() })
	p := resilience.Guarded[int](k)
	ctx := withKey("a")
	_, _ = resilience.Do(ctx, p, okFunc)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = resilience.Do(ctx, p, okFunc) }))
}

// TestKeyedEnter: the Guard interface's Enter, for a guard of the user's
// too, ends the call on the guard it began with.
func TestKeyedEnter(t *testing.T) {
	k := resilience.NewKeyed(keyOf, func(string) resilience.Guard { return resilience.NewBulkhead(1) })
	done, err := k.Enter(withKey("a"))
	require.NoError(t, err)
	_, err = k.Enter(withKey("a"))
	require.ErrorIs(t, err, resilience.ErrBulkheadFull)
	done(nil)
	g, _ := k.Lookup("a")
	assert.Equal(t, 0, g.(*resilience.Bulkhead).InFlight())
	_, err = resilience.Do(withKey("a"), resilience.Guarded[int](k), okFunc)
	require.NoError(t, err)
}

func TestKeyedPanics(t *testing.T) {
	newBreaker := func(string) *resilience.Breaker { return resilience.NewBreaker() }
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil key", func() { resilience.NewKeyed(nil, newBreaker) }, "resilience: NewKeyed: key function is nil"},
		{"nil constructor", func() { resilience.NewKeyed[string, *resilience.Breaker](keyOf, nil) }, "resilience: NewKeyed: guard constructor is nil"},
		{"max keys 0", func() { resilience.WithKeyedMaxKeys(0) }, "resilience: WithKeyedMaxKeys: n must be at least 1, got 0"},
		{"idle 0", func() { resilience.WithKeyedIdle(0) }, "resilience: WithKeyedIdle: idle time must be positive, got 0s"},
		{"overflow nil", func() { resilience.WithKeyedOverflow(nil) }, "resilience: WithKeyedOverflow: guard is nil"},
		{"constructor returns nil", func() {
			k := resilience.NewKeyed(keyOf, func(string) *resilience.Breaker { return nil })
			_, _ = resilience.Do(withKey("x"), resilience.Guarded[int](k), okFunc)
		}, "resilience: NewKeyed: the guard constructor returned nil for key x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assert.PanicsWithValue(t, tc.want, tc.f) })
	}
}

// TestKeyedInspect: a registry shows a Keyed guard with its number of keys,
// those it keeps for their state and its most refused keys, and refuses a
// zero one by name.
func TestKeyedInspect(t *testing.T) {
	k := resilience.NewKeyed(keyOf, func(string) *resilience.Breaker {
		return resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Hour))
	}, resilience.WithKeyedMaxKeys(100))
	reg := resilience.NewRegistry()
	require.NoError(t, reg.Register("shards", k))
	p := resilience.Guarded[int](k)
	call(t, p, "down", errFlaky)
	for range 3 {
		call(t, p, "down", nil) // refused: the breaker is open
	}
	call(t, p, "up", nil)
	s, ok := reg.Snapshot("shards")
	require.True(t, ok)
	assert.Equal(t, resilience.KindKeyed, s.Kind)
	require.NotNil(t, s.Keyed)
	assert.Equal(t, resilience.KeyedSnapshot{Keys: 2, MaxKeys: 100, Busy: 1,
		TopRefused: []resilience.KeyRefusal{{Key: "down", Refusals: 3}}}, *s.Keyed)
	assert.Equal(t, "limiting", s.State)

	err := reg.Register("zero", &resilience.Keyed[string, *resilience.Breaker]{})
	require.ErrorIs(t, err, resilience.ErrZeroGuard)
	assert.Contains(t, err.Error(), resilience.KindKeyed)
}

// TestKeyedClassifierPanics: a key's breaker whose classifier panics lets
// the panic go on through the call, and the call still ends on the Keyed:
// the key's guard has no call in flight and goes once idle.
func TestKeyedClassifierPanics(t *testing.T) {
	clk := newManualClock()
	k := resilience.NewKeyed(keyOf, func(string) *resilience.Breaker {
		return resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerClassifier(func(error) resilience.Outcome { panic("classifier") }))
	}, resilience.WithKeyedIdle(time.Minute), resilience.WithClock(clk))
	p := resilience.Guarded[int](k)
	assert.PanicsWithValue(t, "classifier", func() { call(t, p, "k", errFlaky) })
	s := resilience.Snapshot{}
	require.NoError(t, k.Inspect(&s))
	assert.Equal(t, 0, s.Keyed.Busy, "no call in flight on the key's guard")
	for i := range 3 {
		clk.Add(time.Minute)
		call(t, p, fmt.Sprint("new", i), nil)
	}
	_, ok := k.Lookup("k")
	assert.False(t, ok, "the key's guard went once idle")
}

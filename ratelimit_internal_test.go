package resilience

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestRateLimiterAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	l := NewRateLimiter(1e9, 1000)
	keyed := NewKeyedRateLimiter[string](1000, 1_000_000)
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
		keyed.Allow(keys[i])
	}
	i := 0
	nextKey := func() string {
		i = (i + 1) % len(keys)
		return keys[i]
	}
	keyOf := func(context.Context) string { return nextKey() }
	refusing := NewRateLimiter(1, 1)
	refusing.Allow()
	observed := NewRateLimiter(1e9, 1000, WithObserver(&counter{}))
	guarded, composed := Guarded[int](l), Compose(passThrough[int]{}, Guarded[int](l))
	guardedObserved, guardedKeyed := Guarded[int](observed), Guarded[int](keyed.Guard(keyOf))
	tests := []struct {
		name string
		f    func()
	}{
		{"Allow", func() { l.Allow() }},
		{"AllowN", func() { l.AllowN(3) }},
		{"Allow refused", func() { refusing.Allow() }},
		{"Tokens", func() { _ = l.Tokens() }},
		{"Guarded", func() { _, _ = guarded.Execute(ctx, okFunc) }},
		{"Compose", func() { _, _ = composed.Execute(ctx, okFunc) }},
		{"Enter", func() {
			done, _ := l.Enter(ctx)
			done(nil)
		}},
		{"Guarded observed", func() { _, _ = guardedObserved.Execute(ctx, okFunc) }},
		{"Allow refused observed", func() {
			refusing.observer = observed.observer
			refusing.Allow()
		}},
		{"keyed Allow", func() { keyed.Allow(nextKey()) }},
		{"keyed Guarded", func() { _, _ = guardedKeyed.Execute(ctx, okFunc) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tc.name, allocs)
			}
		})
	}
}

func TestKeyedRateLimiterForgottenKeyGetsNothingFromAClockGoingBack(t *testing.T) {
	clk := newManualClock()
	l := NewKeyedRateLimiter[string](1, 1, WithClock(clk))
	clk.Add(10 * time.Second)
	if !l.Allow("alice") {
		t.Fatal("Allow(alice) = false on a full bucket")
	}
	clk.Add(2 * time.Second) // alice's bucket is full again: she is forgotten
	now := l.nowNs(&l.common)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		l.sweep(s, now)
		s.mu.Unlock()
	}
	if n := l.Len(); n != 0 {
		t.Fatalf("Len() = %d after the sweep, want 0", n)
	}
	clk.Add(-1500 * time.Millisecond) // back to half a second after her call
	if l.Allow("alice") {
		t.Error("Allow(alice) = true: forgetting her in the future gave her a token she had not earned")
	}
	if tokens := l.Tokens("alice"); tokens > 0 {
		t.Errorf("Tokens(alice) = %v, want none", tokens)
	}
}

// The guards take the package's own path in Guarded, the one without a
// closure, whatever the gate's signature becomes.
var (
	_ ticketGate = (*RateLimiter)(nil)
	_ ticketGate = (*keyedGuard[string])(nil)
	_ ticketGate = (*Breaker)(nil)
	_ ticketGate = (*Bulkhead)(nil)
)

// keysIn returns n keys that fall in part i of l's table.
func keysIn(l *KeyedRateLimiter[string], i, n int) []string {
	var keys []string
	for k := 0; len(keys) < n; k++ {
		if key := "key-" + strconv.Itoa(k); l.shard(key) == &l.shards[i] {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestKeyedRateLimiterFullTableMakesRoom: a table full of keys admits a
// new key the moment a held key's bucket is full, wherever that key is:
// in the new key's own part of the table (the one whose lock it holds),
// in the first or the last part the search for room visits; and before
// that moment it refuses the key, with the time until then as its hint.
// No part's next sweep is due then.
func TestKeyedRateLimiterFullTableMakesRoom(t *testing.T) {
	tests := []struct {
		name          string
		held, newPart int
	}{
		{"in its own part", 5, 5},
		{"in the first part", 0, 5},
		{"in the last part", keyedShards - 1, 5},
		{"in a part after its own", 40, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := NewKeyedRateLimiter[string](1, 2, WithClock(clk), WithRateLimitMaxKeys(1)) // a sweep every 2s
			held := keysIn(l, tc.held, 1)[0]
			newKey := keysIn(l, tc.newPart, 2)[1]
			if !l.Allow(held) {
				t.Fatal("Allow(held) = false on a full bucket")
			}
			clk.Add(500 * time.Millisecond)
			_, err := Guarded[int](l.Guard(func(context.Context) string { return newKey })).Execute(context.Background(), okFunc)
			if !errors.Is(err, ErrRateLimited) {
				t.Fatalf("Execute(new key) = %v with the table full of a key refilling, want ErrRateLimited", err)
			}
			if hint, _ := RetryAfter(err); hint != 500*time.Millisecond {
				t.Errorf("RetryAfter(%v) = %v, want 500ms", err, hint)
			}
			clk.Add(500 * time.Millisecond) // the held key's bucket is full
			if !l.Allow(newKey) {
				t.Error("Allow(new key) = false when the held key's bucket is full")
			}
			if n := l.Len(); n != 1 {
				t.Errorf("Len() = %d, want 1", n)
			}
		})
	}
}

// TestRateLimiterLostSwapIsTriedAgain: a caller whose compare-and-swap of
// the limiter's state loses to another caller's reads the state again and
// takes its tokens from what the other left, neither refusing nor taking
// them twice. The other caller comes between the read and the swap through
// tatRead, once. The bucket never refills, and holds two calls' tokens.
func TestRateLimiterLostSwapIsTriedAgain(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		take func(l *RateLimiter) bool // takes two tokens
	}{
		{"Allow", func(l *RateLimiter) bool { first, second := l.Allow(), l.Allow(); return first && second }},
		{"AllowN", func(l *RateLimiter) bool { return l.AllowN(2) }},
		{"WaitN", func(l *RateLimiter) bool { return l.WaitN(ctx, 2) == nil }},
		{"Enter", func(l *RateLimiter) bool {
			done, err := l.Enter(ctx)
			if err != nil {
				return false
			}
			done(nil)
			done, err = l.Enter(ctx)
			if err != nil {
				return false
			}
			done(nil)
			return true
		}},
		{"ReserveN", func(l *RateLimiter) bool { r := l.ReserveN(2); return r.OK() && r.Delay() == 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewRateLimiter(0, 4)
			armed, reads := true, 0
			tatRead = func(l *RateLimiter) {
				reads++
				if armed {
					armed = false
					if !tc.take(l) {
						t.Error("the other caller was refused")
					}
				}
			}
			defer func() { tatRead = nil }()
			if !tc.take(l) {
				t.Errorf("%s refused after losing the swap, with two calls' tokens left", tc.name)
			}
			if tokens := l.Tokens(); tokens != 0 {
				t.Errorf("Tokens() = %v after two callers took two each from four, want 0", tokens)
			}
			if l.AllowN(1) {
				t.Error("AllowN(1) = true on an empty bucket")
			}
			if reads < 3 {
				t.Errorf("the state was read %d times, want the loser's two and the other's", reads)
			}
		})
	}
}

// TestKeyedRateLimiterTakingNothingNeedsNoRoom: AllowN(key, 0) of a key the
// full table does not hold admits, wherever the key falls: in a part of the
// table that holds a key, or in one that holds none.
func TestKeyedRateLimiterTakingNothingNeedsNoRoom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		samePart bool
	}{{"in a held key's part", true}, {"in a part of its own", false}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := NewKeyedRateLimiter[string](1, 1, WithClock(clk), WithRateLimitMaxKeys(2))
			keys := keysIn(l, 0, 3)
			held, other := keys[:2], keysIn(l, 1, 1)[0]
			if !l.Allow(held[0]) {
				t.Fatal("the first key is refused")
			}
			clk.Add(400 * time.Millisecond)
			if !l.Allow(held[1]) {
				t.Fatal("the second key is refused")
			}
			newKey := other
			if tc.samePart {
				newKey = keys[2]
			}
			if l.Allow(newKey) {
				t.Fatal("a third key is admitted into a full table")
			}
			if !l.AllowN(newKey, 0) {
				t.Error("AllowN(key, 0) is refused: taking nothing needs no room")
			}
		})
	}
}

// TestKeyedRateLimiterTopRefused: a snapshot's most refused keys, from a
// part of the table that holds more refused keys than it tracks: a key
// refused more than the part's least refused one takes its place; the keys
// the part's sweep drops, their buckets full, give theirs up at once; and
// a key whose bucket is full is left out from the instant it is.
func TestKeyedRateLimiterTopRefused(t *testing.T) {
	newLimiter := func() (*KeyedRateLimiter[string], *manualClock, *Registry) {
		clk := newManualClock()
		l := NewKeyedRateLimiter[string](1, 1, WithClock(clk)) // a sweep a second
		reg := NewRegistry()
		if err := reg.Register("per-user", l); err != nil {
			t.Fatal(err)
		}
		return l, clk, reg
	}
	// refuse makes key's bucket refuse it n times, at the clock's time,
	// spending it first.
	refuse := func(l *KeyedRateLimiter[string], key string, n int) {
		l.Allow(key)
		for range n {
			if l.Allow(key) {
				t.Fatalf("Allow(%s) = true on a spent bucket", key)
			}
		}
	}
	top := func(reg *Registry) []KeyRefusal {
		s, _ := reg.Snapshot("per-user")
		return s.KeyedRateLimiter.TopRefused
	}
	t.Run("the least refused key gives way to one refused more", func(t *testing.T) {
		l, _, reg := newLimiter()
		keys := keysIn(l, 0, keyedTopSize+2)
		refuse(l, keys[0], 1)
		refuse(l, keys[1], 3)
		refuse(l, keys[2], 4)
		refuse(l, keys[3], 5)
		tracked := []KeyRefusal{{keys[3], 5}, {keys[2], 4}, {keys[1], 3}, {keys[0], 1}}
		refuse(l, keys[4], 1)
		if got := top(reg); !slices.Equal(got, tracked) {
			t.Errorf("TopRefused = %v with a new key refused as often as the least, want %v", got, tracked)
		}
		if l.Allow(keys[4]) { // refused twice now
			t.Fatalf("Allow(%s) = true on a spent bucket", keys[4])
		}
		tracked[3] = KeyRefusal{keys[4], 2}
		if got := top(reg); !slices.Equal(got, tracked) {
			t.Errorf("TopRefused = %v with a new key refused more than the least, want %v", got, tracked)
		}
		refuse(l, keys[5], 1)
		if got := top(reg); !slices.Equal(got, tracked) {
			t.Errorf("TopRefused = %v with a new key refused less than the least, want %v", got, tracked)
		}
	})
	t.Run("a full bucket is left out", func(t *testing.T) {
		l, clk, reg := newLimiter()
		refuse(l, "ann", 1)
		clk.Add(time.Second - 1)
		if got, want := top(reg), []KeyRefusal{{"ann", 1}}; !slices.Equal(got, want) {
			t.Errorf("TopRefused = %v a nanosecond before ann's bucket is full, want %v", got, want)
		}
		clk.Add(1)
		if got := top(reg); len(got) != 0 {
			t.Errorf("TopRefused = %v once ann's bucket is full, want none", got)
		}
	})
	t.Run("the keys a sweep drops leave their places", func(t *testing.T) {
		l, clk, reg := newLimiter()
		keys := keysIn(l, 0, keyedTopSize+1)
		for _, k := range keys[:keyedTopSize] {
			refuse(l, k, 1)
		}
		clk.Add(time.Second) // their buckets are full: the next new key sweeps them out
		late := keys[keyedTopSize]
		refuse(l, late, 1)
		if got, want := top(reg), []KeyRefusal{{late, 1}}; !slices.Equal(got, want) {
			t.Errorf("TopRefused = %v, want %v", got, want)
		}
	})
}

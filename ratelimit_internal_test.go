package resilience

import (
	"context"
	"strconv"
	"testing"
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
	observed := NewRateLimiter(1e9, 1000, WithObserver(ObserverFunc(func(context.Context, Event) {})))
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
		{"Guarded", func() { _, _ = guarded.Execute(ctx, succeed) }},
		{"Compose", func() { _, _ = composed.Execute(ctx, succeed) }},
		{"Enter", func() {
			done, _ := l.Enter(ctx)
			done(nil)
		}},
		{"Guarded observed", func() { _, _ = guardedObserved.Execute(ctx, succeed) }},
		{"Allow refused observed", func() {
			refusing.observer = observed.observer
			refusing.Allow()
		}},
		{"keyed Allow", func() { keyed.Allow(nextKey()) }},
		{"keyed Guarded", func() { _, _ = guardedKeyed.Execute(ctx, succeed) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tc.name, allocs)
			}
		})
	}
}

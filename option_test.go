package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

// TestConstructorsRefuseBadOptions: every constructor refuses a nil option
// and the zero Option (an Option{} written by hand, which sets nothing)
// with a panic naming itself, instead of crashing later on a nil func.
func TestConstructorsRefuseBadOptions(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // Repeat returns at once
	backoff := resilience.Constant(time.Millisecond)
	batchFn := func(_ context.Context, in []int) ([]int, error) { return in, nil }
	fetch := func(context.Context, []int) (map[int]int, error) { return nil, nil }
	// Each constructor, given one option of its own option type.
	ctors := []struct {
		name  string
		build func(o any)
	}{
		{"Timeout", func(o any) { resilience.Timeout[int](time.Second, asOption[resilience.TimeoutOption](o)) }},
		{"Fallback", func(o any) {
			resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil }, asOption[resilience.FallbackOption](o))
		}},
		{"Hedge", func(o any) { resilience.Hedge[int](asOption[resilience.HedgeOption](o)) }},
		{"NewCursor", func(o any) { resilience.NewCursor(backoff, asOption[resilience.CursorOption](o)) }},
		{"Repeat", func(o any) {
			resilience.Repeat(done, backoff, func(context.Context) {}, asOption[resilience.RepeatOption](o))
		}},
		{"NewBreaker", func(o any) { resilience.NewBreaker(asOption[resilience.BreakerOption](o)) }},
		{"NewBulkhead", func(o any) { resilience.NewBulkhead(1, asOption[resilience.BulkheadOption](o)) }},
		{"NewBatcher", func(o any) { resilience.NewBatcher(batchFn, asOption[resilience.BatchOption](o)) }},
		{"NewLoader", func(o any) { resilience.NewLoader(fetch, asOption[resilience.BatchOption](o)) }},
		{"Retry", func(o any) { resilience.Retry[int](asOption[resilience.RetryOption](o)) }},
		{"NewRateLimiter", func(o any) { resilience.NewRateLimiter(1, 1, asOption[resilience.RateLimitOption](o)) }},
		{"NewKeyedRateLimiter", func(o any) {
			resilience.NewKeyedRateLimiter[string](1, 1, asOption[resilience.KeyedRateLimitOption](o))
		}},
		{"NewRetryBudget", func(o any) { resilience.NewRetryBudget(0.1, 1, asOption[resilience.RetryBudgetOption](o)) }},
		{"NewRetryThrottle", func(o any) { resilience.NewRetryThrottle(10, 0.1, asOption[resilience.RetryBudgetOption](o)) }},
	}
	for _, c := range ctors {
		t.Run(c.name+"/zero Option", func(t *testing.T) {
			assert.PanicsWithValue(t,
				"resilience: "+c.name+": option is a zero resilience.Option (make one with WithClock, WithObserver or WithName)",
				func() { c.build(resilience.Option{}) })
		})
		t.Run(c.name+"/nil option", func(t *testing.T) {
			assert.PanicsWithValue(t, "resilience: "+c.name+": option is nil", func() { c.build(nil) })
		})
		t.Run(c.name+"/a good Option", func(t *testing.T) {
			assert.NotPanics(t, func() { c.build(resilience.WithName("x")) })
		})
	}
	// NewSlogObserver takes options of its own only, so no Option.
	t.Run("NewSlogObserver/nil option", func(t *testing.T) {
		assert.PanicsWithValue(t, "resilience: NewSlogObserver: option is nil", func() { resilience.NewSlogObserver(nil, nil) })
	})
}

// asOption returns o as the option type O: a nil o gives a nil O.
func asOption[O any](o any) O {
	if o == nil {
		var zero O
		return zero
	}
	return o.(O)
}

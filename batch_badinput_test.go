package resilience_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// TestBatchAndBulkheadBadInput sweeps NewBatcher, NewLoader, NewBulkhead
// and their options with zero, negative, huge, nil and typed-nil values.
// Each is refused at construction with a message naming the function, the
// option and the value, or has the meaning its documentation gives, shown
// by a call that works.
func TestBatchAndBulkheadBadInput(t *testing.T) {
	ctx := context.Background()
	echo := func(_ context.Context, items []int) ([]int, error) { return items, nil }
	fetch := func(_ context.Context, keys []int) (map[int]int, error) {
		m := map[int]int{}
		for _, k := range keys {
			m[k] = k
		}
		return m, nil
	}
	// batcher builds a batcher with opts and checks that an item goes
	// through it; loader and bulkhead do the same for theirs.
	batcher := func(opts ...resilience.BatchOption) func() {
		return func() {
			b := resilience.NewBatcher(echo, append([]resilience.BatchOption{resilience.WithBatchMaxSize(1)}, opts...)...)
			v, err := b.Do(ctx, 7)
			require.NoError(t, err)
			assert.Equal(t, 7, v)
			require.NoError(t, b.Close(ctx))
		}
	}
	loader := func(opts ...resilience.BatchOption) func() {
		return func() {
			l := resilience.NewLoader(fetch, append([]resilience.BatchOption{resilience.WithBatchMaxSize(1)}, opts...)...)
			v, err := l.Load(ctx, 7)
			require.NoError(t, err)
			assert.Equal(t, 7, v)
			require.NoError(t, l.Close(ctx))
		}
	}
	bulkhead := func(limit int, opts ...resilience.BulkheadOption) func() {
		return func() {
			b := resilience.NewBulkhead(limit, opts...)
			require.NoError(t, b.Acquire(ctx))
			b.Release()
		}
	}
	var nilBatchOption resilience.BatchOption
	var nilBulkheadOption resilience.BulkheadOption
	var nilMock *clock.Mock
	var nilObserver *guardEvents
	tests := []struct {
		name string
		f    func()
		want string // the panic; "" when the value is accepted
	}{
		// NewBatcher and its options.
		{"NewBatcher nil fn", func() { resilience.NewBatcher[int, int](nil) }, "resilience: NewBatcher: fn is nil"},
		{"NewBatcher nil option", batcher(nilBatchOption), "resilience: NewBatcher: option is nil"},
		{"NewBatcher zero Option", batcher(resilience.Option{}), "resilience: NewBatcher: option is a zero resilience.Option (make one with WithClock, WithObserver or WithName)"},
		{"WithBatchMaxSize 0", func() { resilience.WithBatchMaxSize(0) }, "resilience: WithBatchMaxSize: size must be at least 1, got 0"},
		{"WithBatchMaxSize negative", func() { resilience.WithBatchMaxSize(math.MinInt) }, "resilience: WithBatchMaxSize: size must be at least 1, got -9223372036854775808"},
		{"WithBatchMaxSize huge", batcher(resilience.WithBatchMaxSize(math.MaxInt), resilience.WithBatchMaxWait(0)), ""},
		{"WithBatchMaxWait 0: send at once", batcher(resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(0)), ""},
		{"WithBatchMaxWait negative", func() { resilience.WithBatchMaxWait(-time.Nanosecond) }, "resilience: WithBatchMaxWait: wait must not be negative, got -1ns"},
		{"WithBatchMaxWait huge", batcher(resilience.WithBatchMaxWait(math.MaxInt64)), ""},
		{"WithBatchMaxWait huge, mock clock", batcher(resilience.WithBatchMaxWait(math.MaxInt64), resilience.WithClock(clock.NewMock())), ""},
		{"WithBatchMaxConcurrent 0", func() { resilience.WithBatchMaxConcurrent(0) }, "resilience: WithBatchMaxConcurrent: batches must be at least 1, got 0"},
		{"WithBatchMaxConcurrent negative", func() { resilience.WithBatchMaxConcurrent(-3) }, "resilience: WithBatchMaxConcurrent: batches must be at least 1, got -3"},
		{"WithBatchMaxConcurrent huge", batcher(resilience.WithBatchMaxConcurrent(math.MaxInt)), ""},
		{"WithBatchMaxQueued 0: no queue", batcher(resilience.WithBatchMaxQueued(0)), ""},
		{"WithBatchMaxQueued negative", func() { resilience.WithBatchMaxQueued(-1) }, "resilience: WithBatchMaxQueued: queue must not be negative, got -1"},
		{"WithBatchMaxQueued huge", batcher(resilience.WithBatchMaxQueued(math.MaxInt)), ""},
		{"WithBatchTimeout 0: no bound", batcher(resilience.WithBatchTimeout(0)), ""},
		{"WithBatchTimeout negative", func() { resilience.WithBatchTimeout(math.MinInt64) }, "resilience: WithBatchTimeout: timeout must not be negative, got -2562047h47m16.854775808s"},
		{"WithBatchTimeout huge", batcher(resilience.WithBatchTimeout(math.MaxInt64)), ""},
		{"WithBatchTimeout huge, mock clock", batcher(resilience.WithBatchTimeout(math.MaxInt64), resilience.WithClock(clock.NewMock())), ""},
		{"WithBatchPrefilter nil", func() { resilience.WithBatchPrefilter[int](nil) }, "resilience: WithBatchPrefilter: filter is nil"},
		{"WithBatchPrefilter wrong type", batcher(resilience.WithBatchPrefilter(func(string) error { return nil })),
			"resilience: NewBatcher: WithBatchPrefilter: filter is a func(string) error, but a Batcher[int, int] takes a func(int) error"},
		{"WithBatchPolicy nil", func() { resilience.WithBatchPolicy[[]int](nil) }, "resilience: WithBatchPolicy: policy is nil"},
		{"WithBatchPolicy typed nil", func() { resilience.WithBatchPolicy(resilience.PolicyFunc[[]int](nil)) },
			"resilience: WithBatchPolicy: policy is a nil resilience.PolicyFunc[[]int]"},
		{"WithBatchPolicy wrong type", batcher(resilience.WithBatchPolicy(resilience.Retry[[]string]())),
			"resilience: NewBatcher: WithBatchPolicy: policy is a *resilience.retry[[]string], but a Batcher[int, int] takes a resilience.Policy[[]int]"},
		{"WithClock nil", func() { resilience.WithClock(nil) }, "resilience: WithClock: clock is nil"},
		{"WithClock typed nil", func() { resilience.WithClock(nilMock) }, "resilience: WithClock: clock is a nil *clock.Mock"},
		{"WithObserver nil", func() { resilience.WithObserver(nil) }, "resilience: WithObserver: observer is nil"},
		{"WithObserver typed nil", func() { resilience.WithObserver(nilObserver) }, "resilience: WithObserver: observer is a nil *resilience_test.guardEvents"},
		{"WithName empty: no name", batcher(resilience.WithName("")), ""},
		{"zero Batcher", func() {
			var b resilience.Batcher[int, int]
			_, _ = b.Do(ctx, 1)
		}, "resilience: Batcher.Do: the zero Batcher is not usable; use NewBatcher"},

		// NewLoader: the same options, named for the loader.
		{"NewLoader nil fetch", func() { resilience.NewLoader[int, int](nil) }, "resilience: NewLoader: fetch is nil"},
		{"NewLoader nil option", loader(nilBatchOption), "resilience: NewLoader: option is nil"},
		{"NewLoader zero Option", loader(resilience.Option{}), "resilience: NewLoader: option is a zero resilience.Option (make one with WithClock, WithObserver or WithName)"},
		{"NewLoader MaxQueued 0", loader(resilience.WithBatchMaxQueued(0)), ""},
		{"NewLoader prefilter of the wrong type", loader(resilience.WithBatchPrefilter(func(string) error { return nil })),
			"resilience: NewLoader: WithBatchPrefilter: filter is a func(string) error, but a Loader[int, int] takes a func(int) error"},
		{"NewLoader policy of the fetch's map", loader(resilience.WithBatchPolicy(resilience.Retry[map[int]int]())),
			"resilience: NewLoader: WithBatchPolicy: policy is a *resilience.retry[map[int]int], but a Loader[int, int] takes a resilience.Policy[[]int]"},
		{"NewLoader policy of values", loader(resilience.WithBatchPolicy(resilience.Retry[[]int]())), ""},
		{"zero Loader", func() {
			var l resilience.Loader[int, int]
			_, _ = l.Load(ctx, 1)
		}, "resilience: Loader.Load: the zero Loader is not usable; use NewLoader"},

		// NewBulkhead and its options.
		{"NewBulkhead 0", func() { resilience.NewBulkhead(0) }, "resilience: NewBulkhead: limit must be between 1 and 2147483647, got 0"},
		{"NewBulkhead negative", func() { resilience.NewBulkhead(-1) }, "resilience: NewBulkhead: limit must be between 1 and 2147483647, got -1"},
		{"NewBulkhead huge", func() { resilience.NewBulkhead(math.MaxInt32 + 1) }, "resilience: NewBulkhead: limit must be between 1 and 2147483647, got 2147483648"},
		{"NewBulkhead largest", bulkhead(math.MaxInt32), ""},
		{"NewBulkhead nil option", bulkhead(1, nilBulkheadOption), "resilience: NewBulkhead: option is nil"},
		{"NewBulkhead zero Option", bulkhead(1, resilience.Option{}), "resilience: NewBulkhead: option is a zero resilience.Option (make one with WithClock, WithObserver or WithName)"},
		{"WithBulkheadWait 0: no wait", bulkhead(1, resilience.WithBulkheadWait(0)), ""},
		{"WithBulkheadWait negative", func() { resilience.WithBulkheadWait(-time.Second) }, "resilience: WithBulkheadWait: wait must not be negative, got -1s"},
		{"WithBulkheadWait huge", bulkhead(1, resilience.WithBulkheadWait(math.MaxInt64)), ""},
		{"WithBulkheadQueue 0: nobody waits", bulkhead(1, resilience.WithBulkheadQueue(0)), ""},
		{"WithBulkheadQueue negative", func() { resilience.WithBulkheadQueue(math.MinInt) }, "resilience: WithBulkheadQueue: queue length must not be negative, got -9223372036854775808"},
		{"WithBulkheadQueue huge", bulkhead(1, resilience.WithBulkheadWait(time.Second), resilience.WithBulkheadQueue(math.MaxInt)), ""},
		{"zero Bulkhead refuses", func() {
			var b resilience.Bulkhead
			assert.ErrorIs(t, b.Acquire(ctx), resilience.ErrBulkheadFull)
			assert.False(t, b.TryAcquire())
		}, ""},
		{"Release without Acquire", func() { resilience.NewBulkhead(1).Release() },
			"resilience: Bulkhead.Release: no slot is taken (Release without a matching Acquire)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				assert.NotPanics(t, tc.f)
				return
			}
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// TestBatcherGoexit: a batch function that ends its goroutine with
// runtime.Goexit (t.FailNow in a test) answers each of its callers with a
// *PanicError, frees its batch slot for the batches behind it, and Close
// drains.
func TestBatcherGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		calls := 0
		var r recorder
		b := resilience.NewBatcher(func(ctx context.Context, items []int) ([]int, error) {
			calls++
			if calls == 1 {
				<-gate
				runtimeGoexit()
			}
			return r.fn(ctx, items)
		}, resilience.WithBatchMaxSize(2), resilience.WithBatchMaxWait(time.Hour), resilience.WithBatchMaxConcurrent(1))
		first := []*pendingCall{startDo(b, 1), startDo(b, 2)}
		behind := []*pendingCall{startDo(b, 3), startDo(b, 4)} // a full batch waiting for the only slot
		close(gate)
		for _, c := range first {
			_, err := c.wait(t)
			var pe *resilience.PanicError
			require.ErrorAs(t, err, &pe, "Do(%d)", c.item)
			assert.Contains(t, fmt.Sprint(pe.Value), "Goexit")
		}
		for _, c := range behind {
			v, err := c.wait(t)
			require.NoError(t, err, "the batch behind is sent")
			assert.Equal(t, 2*c.item, v)
		}
		third := startDo(b, 5)
		fourth := startDo(b, 6)
		_, err := third.wait(t)
		require.NoError(t, err, "the slot is free again")
		_, err = fourth.wait(t)
		require.NoError(t, err)
		require.NoError(t, b.Close(context.Background()), "Close drains")
		assert.Equal(t, [][]int{{3, 4}, {5, 6}}, r.batches)
	})
}

// TestBatcherPolicySeesOnlyWholeBatchErrors: under a batch policy, items
// that failed one by one are the batch call's success; only a whole-batch
// error is its failure. A retry does not fetch the batch again for a
// failed item, and a breaker does not open on keys not found.
func TestBatcherPolicySeesOnlyWholeBatchErrors(t *testing.T) {
	errItem := errors.New("bad item")
	errDown := errors.New("backend down")
	retry := resilience.Retry[[]int](resilience.WithBackoff(resilience.Constant(0)))
	t.Run("batcher under retry", func(t *testing.T) {
		calls := 0
		b := resilience.NewBatcher(func(_ context.Context, items []int) ([]int, error) {
			calls++
			errs := resilience.ItemErrors{}
			for i, v := range items {
				if v < 0 {
					errs[i] = errItem
				}
			}
			return items, errs
		}, resilience.WithBatchMaxWait(0), resilience.WithBatchPolicy(retry))
		defer b.Close(context.Background())
		_, err := b.Do(context.Background(), -1)
		assert.ErrorIs(t, err, errItem)
		assert.Equal(t, 1, calls, "a failed item is not a failed batch: no retry")
	})
	t.Run("loader under retry", func(t *testing.T) {
		calls := 0
		l := resilience.NewLoader(func(_ context.Context, keys []string) (map[string]int, error) {
			calls++
			return map[string]int{}, nil
		}, resilience.WithBatchMaxWait(0), resilience.WithBatchPolicy(resilience.Retry[[]int](resilience.WithBackoff(resilience.Constant(0)))))
		defer l.Close(context.Background())
		_, err := l.Load(context.Background(), "ghost")
		assert.ErrorIs(t, err, resilience.ErrNotFound)
		assert.Equal(t, 1, calls, "a key not found is not a failed fetch: no retry")
	})
	t.Run("loader under breaker", func(t *testing.T) {
		down := false
		br := resilience.NewBreaker(resilience.WithBreakerThreshold(3))
		l := resilience.NewLoader(func(_ context.Context, keys []string) (map[string]int, error) {
			if down {
				return nil, errDown
			}
			return map[string]int{"ann": 3}, nil
		}, resilience.WithBatchMaxWait(0), resilience.WithBatchPolicy(resilience.Guarded[[]int](br)))
		defer l.Close(context.Background())
		for range 10 {
			_, err := l.Load(context.Background(), "ghost")
			require.ErrorIs(t, err, resilience.ErrNotFound)
		}
		v, err := l.Load(context.Background(), "ann")
		require.NoError(t, err, "keys not found on a healthy backend keep the breaker closed")
		assert.Equal(t, 3, v)
		assert.Equal(t, resilience.BreakerClosed, br.State())
		down = true
		for range 3 {
			_, err := l.Load(context.Background(), "ann")
			require.ErrorIs(t, err, errDown)
		}
		_, err = l.Load(context.Background(), "ann")
		assert.ErrorIs(t, err, resilience.ErrBreakerOpen, "whole-batch errors still open it")
	})
	t.Run("a wrong number of results is a whole-batch error", func(t *testing.T) {
		calls := 0
		b := resilience.NewBatcher(func(_ context.Context, items []int) ([]int, error) {
			calls++
			return nil, resilience.ItemErrors{0: errItem}
		}, resilience.WithBatchMaxWait(0), resilience.WithBatchPolicy(retry))
		defer b.Close(context.Background())
		_, err := b.Do(context.Background(), 1)
		assert.ErrorIs(t, err, resilience.ErrBatchResults)
		assert.Equal(t, 3, calls, "the policy saw the failure")
	})
}

// TestBatcherPolicyEdges: a policy that makes up results of its own, or
// gives up on a call of fn that goes on running, harms no caller.
func TestBatcherPolicyEdges(t *testing.T) {
	t.Run("results of the wrong length", func(t *testing.T) {
		liar := resilience.PolicyFunc[[]int](func(context.Context, resilience.Func[[]int]) ([]int, error) { return nil, nil })
		b := resilience.NewBatcher(echoBatch, resilience.WithBatchMaxWait(0), resilience.WithBatchPolicy(liar))
		_, err := b.Do(context.Background(), 1)
		assert.ErrorIs(t, err, resilience.ErrBatchResults)
		require.NoError(t, b.Close(context.Background()))
	})
	t.Run("a late call keeps its items", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			late := make(chan []int, 1)
			var calls atomic.Int32
			b := resilience.NewBatcher(func(_ context.Context, items []int) ([]int, error) {
				if calls.Add(1) == 1 {
					<-release // outlives the policy's timeout
					late <- slices.Clone(items)
				}
				return items, resilience.ItemErrors{0: errors.New("late")}
			}, resilience.WithBatchMaxWait(0), resilience.WithBatchMaxConcurrent(1),
				resilience.WithBatchPolicy(resilience.Timeout[[]int](time.Second)))
			_, err := b.Do(context.Background(), 1)
			require.ErrorIs(t, err, resilience.ErrTimeout)
			_, err = b.Do(context.Background(), 2)
			require.EqualError(t, err, "late", "the second batch gets its own item errors")
			close(release)
			assert.Equal(t, []int{1}, <-late, "the late call's items were not reused")
			require.NoError(t, b.Close(context.Background()))
		})
	})
}

// TestLoaderPolicyType: a Loader's batch policy is a Policy[[]V]; the
// natural mistake, a Policy[map[K]V], fails at construction with a message
// that names the right type.
func TestLoaderPolicyType(t *testing.T) {
	fetch := func(context.Context, []string) (map[string]int, error) { return nil, nil }
	assert.PanicsWithValue(t,
		"resilience: NewLoader: WithBatchPolicy: policy is a *resilience.retry[map[string]int], but a Loader[string, int] takes a resilience.Policy[[]int]",
		func() { resilience.NewLoader(fetch, resilience.WithBatchPolicy(resilience.Retry[map[string]int]())) })
	assert.NotPanics(t, func() {
		l := resilience.NewLoader(fetch, resilience.WithBatchPolicy(resilience.Retry[[]int]()))
		_ = l.Close(context.Background())
	})
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// recorder is a batch fn that doubles its items and records each batch.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	block   chan struct{} // when set, each batch waits for it
}

func (r *recorder) fn(ctx context.Context, items []int) ([]int, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(items))
	r.mu.Unlock()
	if r.block != nil {
		<-r.block
	}
	out := make([]int, len(items))
	for i, v := range items {
		out[i] = 2 * v
	}
	return out, nil
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []int
	for _, b := range r.batches {
		s = append(s, len(b))
	}
	return s
}

// callAll calls Do for each item in its own goroutine, one after another
// (each is queued before the next starts), and returns the results in
// item order once all have returned.
func callAll(t *testing.T, b *resilience.Batcher[int, int], items []int) ([]int, []error, []time.Duration) {
	t.Helper()
	outs := make([]int, len(items))
	errs := make([]error, len(items))
	took := make([]time.Duration, len(items))
	var wg sync.WaitGroup
	start := time.Now()
	for i, in := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = b.Do(context.Background(), in)
			took[i] = time.Since(start)
		}()
		synctest.Wait()
	}
	wg.Wait()
	return outs, errs, took
}

func TestBatcherSendsWhen(t *testing.T) {
	tests := []struct {
		name      string
		opts      []resilience.BatchOption
		items     int
		wantSizes []int
		wantTook  time.Duration // for the first item
	}{
		{"full batch goes at once", []resilience.BatchOption{resilience.WithBatchMaxSize(3), resilience.WithBatchMaxWait(time.Hour)}, 6, []int{3, 3}, 0},
		{"first item waited MaxWait", []resilience.BatchOption{resilience.WithBatchMaxWait(10 * time.Millisecond)}, 4, []int{4}, 10 * time.Millisecond},
		{"default MaxWait is 1ms", nil, 2, []int{2}, time.Millisecond},
		{"MaxWait 0 sends at once", []resilience.BatchOption{resilience.WithBatchMaxWait(0)}, 3, []int{1, 1, 1}, 0},
		{"leftover goes after MaxWait", []resilience.BatchOption{resilience.WithBatchMaxSize(2), resilience.WithBatchMaxWait(5 * time.Millisecond)}, 3, []int{2, 1}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var r recorder
				b := resilience.NewBatcher(r.fn, tc.opts...)
				defer b.Close(context.Background())
				items := make([]int, tc.items)
				for i := range items {
					items[i] = i + 1
				}
				outs, errs, took := callAll(t, b, items)
				for i := range items {
					require.NoError(t, errs[i])
					assert.Equal(t, 2*items[i], outs[i], "each caller gets its own result")
				}
				assert.Equal(t, tc.wantSizes, r.sizes())
				assert.Equal(t, tc.wantTook, took[0])
			})
		})
	}
}

// TestBatcherGathersWhileBusy: with MaxWait 0 and one slot, items that come
// while a batch runs go together in the next.
func TestBatcherGathersWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := recorder{block: make(chan struct{})}
		b := resilience.NewBatcher(r.fn, resilience.WithBatchMaxWait(0), resilience.WithBatchMaxConcurrent(1))
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := b.Do(context.Background(), i)
				assert.NoError(t, err)
				assert.Equal(t, 2*i, v)
			}()
			synctest.Wait()
		}
		close(r.block)
		wg.Wait()
		assert.Equal(t, []int{1, 5}, r.sizes())
		require.NoError(t, b.Close(context.Background()))
	})
}

func TestBatcherMockClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		var r recorder
		b := resilience.NewBatcher(r.fn, resilience.WithBatchMaxWait(time.Second), resilience.WithClock(mock))
		done := make(chan int, 2)
		for i := range 2 {
			go func() {
				v, _ := b.Do(context.Background(), i)
				done <- v
			}()
		}
		synctest.Wait()
		assert.Empty(t, r.sizes(), "nothing is sent before the mock clock moves")
		mock.Add(time.Second)
		<-done
		<-done
		assert.Equal(t, []int{2}, r.sizes())
		require.NoError(t, b.Close(context.Background()))
	})
}

func TestBatcherErrors(t *testing.T) {
	errBatch := errors.New("backend down")
	errItem := errors.New("bad item")
	tests := []struct {
		name    string
		fn      func(context.Context, []int) ([]int, error)
		wantErr []error // per item; nil: want 10*item
	}{
		{"per-item errors", func(_ context.Context, items []int) ([]int, error) {
			out := make([]int, len(items))
			errs := resilience.ItemErrors{}
			for i, v := range items {
				if v == 2 {
					errs[i] = errItem
				}
				out[i] = 10 * v
			}
			return out, errs
		}, []error{nil, nil, errItem}},
		{"whole-batch error", func(context.Context, []int) ([]int, error) { return nil, errBatch }, []error{errBatch, errBatch, errBatch}},
		{"wrong number of results", func(context.Context, []int) ([]int, error) { return []int{1}, nil },
			[]error{resilience.ErrBatchResults, resilience.ErrBatchResults, resilience.ErrBatchResults}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := resilience.NewBatcher(tc.fn, resilience.WithBatchMaxSize(3), resilience.WithBatchMaxWait(time.Hour))
				defer b.Close(context.Background())
				outs, errs, _ := callAll(t, b, []int{0, 1, 2})
				for i, want := range tc.wantErr {
					if want == nil {
						assert.NoError(t, errs[i])
						assert.Equal(t, 10*i, outs[i])
						continue
					}
					assert.ErrorIs(t, errs[i], want, "item %d", i)
				}
			})
		})
	}
}

func TestBatcherPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		b := resilience.NewBatcher(func(_ context.Context, items []int) ([]int, error) {
			calls++
			if calls == 1 {
				panic("batch exploded")
			}
			return items, nil
		}, resilience.WithBatchMaxSize(2), resilience.WithBatchMaxWait(time.Hour))
		defer b.Close(context.Background())
		_, errs, _ := callAll(t, b, []int{1, 2})
		for _, err := range errs {
			var pe *resilience.PanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "batch exploded", pe.Value)
		}
		outs, errs, _ := callAll(t, b, []int{3, 4})
		assert.Equal(t, []error{nil, nil}, errs, "the batcher goes on working")
		assert.Equal(t, []int{3, 4}, outs)
	})
}

func TestBatcherPrefilter(t *testing.T) {
	errNegative := errors.New("negative")
	var r recorder
	b := resilience.NewBatcher(r.fn, resilience.WithBatchMaxWait(0), resilience.WithBatchPrefilter(func(v int) error {
		if v < 0 {
			return errNegative
		}
		return nil
	}))
	defer b.Close(context.Background())
	_, err := b.Do(context.Background(), -1)
	assert.Equal(t, errNegative, err)
	v, err := b.Do(context.Background(), 4)
	require.NoError(t, err)
	assert.Equal(t, 8, v)
	assert.Equal(t, []int{1}, r.sizes(), "the rejected item never joined a batch")

}

func TestBatcherPolicy(t *testing.T) {
	calls := 0
	fn := func(_ context.Context, items []int) ([]int, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("flaky backend")
		}
		return items, nil
	}
	b := resilience.NewBatcher(fn, resilience.WithBatchMaxWait(0),
		resilience.WithBatchPolicy(resilience.Retry[[]int](resilience.WithBackoff(resilience.Constant(0)))))
	defer b.Close(context.Background())
	v, err := b.Do(context.Background(), 7)
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	assert.Equal(t, 2, calls)
}

// TestBatcherCallerLeaves: a caller whose ctx ends leaves its batch before
// it is sent, and hurts no one after it is sent.
func TestBatcherCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recorder
		b := resilience.NewBatcher(r.fn, resilience.WithBatchMaxWait(10*time.Millisecond))
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := b.Do(ctx, 1)
			errc <- err
		}()
		synctest.Wait()
		outs := make(chan int, 1)
		go func() {
			v, _ := b.Do(context.Background(), 2)
			outs <- v
		}()
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, <-errc, context.Canceled)
		assert.Equal(t, 4, <-outs)
		assert.Equal(t, [][]int{{2}}, r.batches, "the item that left was never sent")
		require.NoError(t, b.Close(context.Background()))
	})
}

// TestBatcherBatchContextIsNotACallers: unlike dataloader's, the batch does
// not run under the first caller's ctx.
func TestBatcherBatchContextIsNotACallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var batchErr error
		var deadline bool
		b := resilience.NewBatcher(func(ctx context.Context, items []int) ([]int, error) {
			<-release
			batchErr = ctx.Err()
			_, deadline = ctx.Deadline()
			return items, nil
		}, resilience.WithBatchMaxSize(2), resilience.WithBatchMaxWait(time.Hour), resilience.WithBatchTimeout(time.Minute))
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() {
			_, err := b.Do(ctx, 1)
			first <- err
		}()
		synctest.Wait()
		second := make(chan int, 1)
		go func() {
			v, _ := b.Do(context.Background(), 2)
			second <- v
		}()
		synctest.Wait() // the batch of two is running
		cancel()
		assert.ErrorIs(t, <-first, context.Canceled, "the first caller stops waiting")
		close(release)
		assert.Equal(t, 2, <-second, "the second caller is not hurt")
		require.NoError(t, b.Close(context.Background()))
		assert.NoError(t, batchErr, "the batch ctx did not end with the first caller's")
		assert.True(t, deadline, "WithBatchTimeout sets a deadline on the batch")
	})
}

func TestBatcherClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := recorder{block: make(chan struct{})}
		b := resilience.NewBatcher(r.fn, resilience.WithBatchMaxWait(time.Hour))
		results := make(chan error, 3)
		for i := range 3 {
			go func() {
				_, err := b.Do(context.Background(), i)
				results <- err
			}()
		}
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- b.Close(context.Background()) }()
		synctest.Wait()
		assert.Equal(t, []int{3}, r.sizes(), "Close sends the pending batch at once")
		_, err := b.Do(context.Background(), 9)
		assert.ErrorIs(t, err, resilience.ErrBatcherClosed)

		shortCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, b.Close(shortCtx), context.DeadlineExceeded, "Close gives up when its ctx ends")
		select {
		case <-closed:
			t.Fatal("Close returned while a batch was running")
		default:
		}
		close(r.block)
		require.NoError(t, <-closed)
		for range 3 {
			require.NoError(t, <-results)
		}
		require.NoError(t, b.Close(context.Background()), "closing twice is harmless")
	})
}

func TestBatcherMaxConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var running, peak atomic.Int32
		b := resilience.NewBatcher(func(_ context.Context, items []int) ([]int, error) {
			n := running.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			return items, nil
		}, resilience.WithBatchMaxSize(1), resilience.WithBatchMaxConcurrent(2), resilience.WithBatchMaxQueued(1))
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := b.Do(context.Background(), i)
				assert.NoError(t, err)
				assert.Equal(t, i, v)
			}()
		}
		wg.Wait()
		assert.Equal(t, int32(2), peak.Load())
		require.NoError(t, b.Close(context.Background()))
	})
}

func TestItemErrorsError(t *testing.T) {
	err := resilience.ItemErrors{2: errors.New("b"), 0: errors.New("a")}
	assert.EqualError(t, err, "resilience: batch items failed: item 0: a; item 2: b")
}

// TestBatcherStress: 256 goroutines send items (400 each, 10,000 with
// RESILIENCE_STRESS=1) with random cancellations, and the batcher is
// closed halfway. Every accepted item is answered exactly once with its own result, no item reaches fn twice, and nothing
// is left running.
func TestBatcherStress(t *testing.T) {
	const goroutines = 256
	perGoroutine := 400
	if os.Getenv("RESILIENCE_STRESS") != "" {
		perGoroutine = 10_000 // 2.56 million items, for CI
	}
	var seen sync.Map
	var dup atomic.Int32
	var sent atomic.Int64
	b := resilience.NewBatcher(func(_ context.Context, items []int) ([]int, error) {
		for _, v := range items {
			if _, loaded := seen.LoadOrStore(v, true); loaded {
				dup.Add(1)
			}
		}
		sent.Add(int64(len(items)))
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = -v
		}
		return out, nil
	}, resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(50*time.Microsecond))
	var answered, ok, cancelled, refused atomic.Int64
	var wg sync.WaitGroup
	var closeOnce sync.Once
	closeErr := make(chan error, 1)
	half := int64(goroutines * perGoroutine / 2)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range perGoroutine {
				item := g*perGoroutine + i + 1
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(10) == 0 {
					cancel() // some callers give up at once, others later
				} else if r.IntN(10) == 0 {
					go cancel()
				}
				v, err := b.Do(ctx, item)
				cancel()
				n := answered.Add(1)
				switch {
				case err == nil:
					if v != -item {
						t.Errorf("Do(%d) = %d, want %d", item, v, -item)
					}
					ok.Add(1)
				case errors.Is(err, context.Canceled):
					cancelled.Add(1)
				case errors.Is(err, resilience.ErrBatcherClosed):
					refused.Add(1)
				default:
					t.Errorf("Do(%d) = %v", item, err)
				}
				if n == half {
					closeOnce.Do(func() { go func() { closeErr <- b.Close(context.Background()) }() })
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, <-closeErr)
	total := int64(goroutines * perGoroutine)
	assert.Equal(t, total, answered.Load(), "every call answered once")
	assert.Equal(t, total, ok.Load()+cancelled.Load()+refused.Load())
	assert.Zero(t, dup.Load(), "no item sent twice")
	assert.GreaterOrEqual(t, sent.Load(), ok.Load(), "every result came from a batch")
	assert.Positive(t, refused.Load(), "items after Close are refused")
	t.Logf("%d items: %d answered by a batch, %d cancelled, %d refused after Close; %d reached fn", total, ok.Load(), cancelled.Load(), refused.Load(), sent.Load())
}

func TestLoader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fetched [][]string
		var mu sync.Mutex
		errFetch := errors.New("db down")
		fail := false
		l := resilience.NewLoader(func(_ context.Context, keys []string) (map[string]int, error) {
			mu.Lock()
			fetched = append(fetched, slices.Clone(keys))
			mu.Unlock()
			if fail {
				return nil, errFetch
			}
			m := map[string]int{}
			for _, k := range keys {
				if k != "ghost" {
					m[k] = len(k)
				}
			}
			return m, nil
		}, resilience.WithBatchMaxWait(time.Millisecond))
		keys := []string{"ann", "bob", "ann", "ghost", "carol", "bob"}
		vals := make([]int, len(keys))
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				vals[i], errs[i] = l.Load(context.Background(), k)
			}()
		}
		wg.Wait()
		require.Len(t, fetched, 1)
		assert.ElementsMatch(t, []string{"ann", "bob", "ghost", "carol"}, fetched[0], "equal keys are fetched once")
		for i, k := range keys {
			if k == "ghost" {
				assert.ErrorIs(t, errs[i], resilience.ErrNotFound)
				var nf *resilience.NotFoundError[string]
				require.ErrorAs(t, errs[i], &nf)
				assert.Equal(t, "ghost", nf.Key)
				continue
			}
			require.NoError(t, errs[i])
			assert.Equal(t, len(k), vals[i])
		}
		fail = true
		_, err := l.Load(context.Background(), "ann")
		assert.ErrorIs(t, err, errFetch)
		fail = false
		v, err := l.Load(context.Background(), "ann")
		require.NoError(t, err, "errors are not cached")
		assert.Equal(t, 3, v)
		require.NoError(t, l.Close(context.Background()))
		assert.Equal(t, fmt.Sprint([]string{"ann"}), fmt.Sprint(fetched[len(fetched)-1]))
	})
}

package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batchRecorder is a batch fn that doubles its items and records each batch.
type batchRecorder struct {
	mu      sync.Mutex
	batches [][]int
	block   chan struct{} // when set, each batch waits for it
}

func (r *batchRecorder) fn(ctx context.Context, items []int) ([]int, error) {
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

func (r *batchRecorder) sizes() []int {
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
				var r batchRecorder
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
		r := batchRecorder{block: make(chan struct{})}
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
		var r batchRecorder
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
	var r batchRecorder
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
		var r batchRecorder
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
		}, resilience.WithBatchMaxSize(2), resilience.WithBatchMaxWait(time.Hour),
			resilience.WithBatchPolicy(resilience.Timeout[[]int](time.Minute, resilience.WithTimeoutCooperative())))
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
		assert.True(t, deadline, "a Timeout in WithBatchPolicy sets a deadline on the batch")
	})
}

func TestBatcherClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := batchRecorder{block: make(chan struct{})}
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
	var nilObserver *recorder
	tests := []struct {
		name string
		f    func()
		want string // the panic; "" when the value is accepted
	}{
		// NewBatcher and its options.
		{"NewBatcher nil fn", func() { resilience.NewBatcher[int, int](nil) }, "resilience: NewBatcher: fn is nil"},
		{"NewBatcher nil option", batcher(nilBatchOption), "resilience: NewBatcher: option is nil"},
		{"NewBatcher zero Option", batcher(resilience.Option{}), "resilience: NewBatcher: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
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
		{"WithObserver typed nil", func() { resilience.WithObserver(nilObserver) }, "resilience: WithObserver: observer is a nil *resilience_test.recorder"},
		{"WithName empty: no name", batcher(resilience.WithName("")), ""},
		{"zero Batcher", func() {
			var b resilience.Batcher[int, int]
			_, _ = b.Do(ctx, 1)
		}, "resilience: Batcher.Do: the zero Batcher is not usable; use NewBatcher"},

		// NewLoader: the same options, named for the loader.
		{"NewLoader nil fetch", func() { resilience.NewLoader[int, int](nil) }, "resilience: NewLoader: fetch is nil"},
		{"NewLoader nil option", loader(nilBatchOption), "resilience: NewLoader: option is nil"},
		{"NewLoader zero Option", loader(resilience.Option{}), "resilience: NewLoader: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
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
		{"NewBulkhead zero Option", bulkhead(1, resilience.Option{}), "resilience: NewBulkhead: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
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

func echoBatch(_ context.Context, items []int) ([]int, error) { return items, nil }

// BenchmarkBatcher measures the cost per item with 256 callers, batches of
// at most 100 and a 1ms wait, and the latency one lone caller adds.
func BenchmarkBatcher(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []resilience.BatchOption
	}{
		{"256-callers", nil},
		{"256-callers-observed", []resilience.BatchOption{resilience.WithObserver(&counter{Outcomes: true})}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := append([]resilience.BatchOption{resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(time.Millisecond)}, tc.opts...)
			bt := resilience.NewBatcher(echoBatch, opts...)
			defer bt.Close(ctx)
			b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = bt.Do(ctx, 1)
				}
			})
		})
	}
	b.Run("single-caller-no-wait", func(b *testing.B) {
		bt := resilience.NewBatcher(echoBatch, resilience.WithBatchMaxWait(0))
		defer bt.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = bt.Do(ctx, 1)
		}
	})
	b.Run("loader-256-callers", func(b *testing.B) {
		l := resilience.NewLoader(func(_ context.Context, keys []int) (map[int]int, error) {
			m := make(map[int]int, len(keys))
			for _, k := range keys {
				m[k] = k
			}
			return m, nil
		}, resilience.WithBatchMaxSize(100), resilience.WithBatchMaxWait(time.Millisecond))
		defer l.Close(ctx)
		b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			k := 0
			for pb.Next() {
				k++
				_, _ = l.Load(ctx, k%1000)
			}
		})
	})
}

// TestBatcherEvents: each batch call is an EventBatchSent with its size,
// its duration and its whole-batch error (nil when only items failed).
func TestBatcherEvents(t *testing.T) {
	errDown := errors.New("down")
	errItem := errors.New("bad item")
	tests := []struct {
		name    string
		fn      func(context.Context, []int) ([]int, error)
		wantErr error
	}{
		{"success", func(_ context.Context, items []int) ([]int, error) { return items, nil }, nil},
		{"items failed", func(_ context.Context, items []int) ([]int, error) { return items, resilience.ItemErrors{1: errItem} }, nil},
		{"the batch failed", func(context.Context, []int) ([]int, error) { return nil, errDown }, errDown},
		{"wrong number of results", func(context.Context, []int) ([]int, error) { return nil, nil }, resilience.ErrBatchResults},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var o recorder
				b := resilience.NewBatcher(func(ctx context.Context, items []int) ([]int, error) {
					time.Sleep(5 * time.Millisecond)
					return tc.fn(ctx, items)
				}, resilience.WithBatchMaxSize(3), resilience.WithBatchMaxWait(time.Hour), resilience.WithObserver(&o), resilience.WithName("users"))
				callAll(t, b, []int{1, 2, 3})
				require.NoError(t, b.Close(context.Background()))
				events := o.take()
				require.Len(t, events, 1)
				e := events[0]
				if tc.wantErr != nil {
					assert.ErrorIs(t, e.Err, tc.wantErr)
					e.Err = nil
				}
				assert.Equal(t, resilience.Event{Kind: resilience.EventBatchSent, Component: "batcher", Name: "users", Size: 3, Duration: 5 * time.Millisecond}, e)
			})
		})
	}
}

// TestBatcherEventsPanicAndGoexit: a batch whose fn panics or exits its
// goroutine is reported with its *PanicError.
func TestBatcherEventsPanicAndGoexit(t *testing.T) {
	for name, die := range map[string]func(){"panic": func() { panic("boom") }, "Goexit": runtimeGoexit} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var o recorder
				b := resilience.NewBatcher(func(context.Context, []int) ([]int, error) {
					die()
					return nil, nil
				}, resilience.WithBatchMaxWait(0), resilience.WithObserver(&o))
				_, err := b.Do(context.Background(), 1)
				require.NoError(t, b.Close(context.Background()))
				var pe *resilience.PanicError
				require.ErrorAs(t, err, &pe)
				events := o.take()
				require.Len(t, events, 1)
				assert.Equal(t, resilience.EventBatchSent, events[0].Kind)
				assert.Equal(t, 1, events[0].Size)
				assert.ErrorAs(t, events[0].Err, &pe)
			})
		})
	}
}

// TestBatcherCallEnded: each Do ends with an EventCallEnded only when the
// observer asks for outcomes; a Loader reports as "loader".
func TestBatcherCallEnded(t *testing.T) {
	for _, outcomes := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			o := recorder{outcomes: outcomes}
			l := resilience.NewLoader(func(_ context.Context, keys []string) (map[string]int, error) {
				time.Sleep(2 * time.Millisecond)
				return map[string]int{"ann": 3}, nil
			}, resilience.WithBatchMaxWait(time.Millisecond), resilience.WithObserver(&o))
			_, err := l.Load(context.Background(), "ghost")
			require.ErrorIs(t, err, resilience.ErrNotFound)
			require.NoError(t, l.Close(context.Background()))
			_, err = l.Load(context.Background(), "ann")
			require.ErrorIs(t, err, resilience.ErrBatcherClosed)
			var sent, ended []resilience.Event // the two goroutines report in either order
			for _, e := range o.take() {
				if e.Kind == resilience.EventBatchSent {
					sent = append(sent, e)
				} else {
					ended = append(ended, e)
				}
			}
			assert.Equal(t, []resilience.Event{{Kind: resilience.EventBatchSent, Component: "loader", Size: 1, Duration: 2 * time.Millisecond}}, sent)
			if !outcomes {
				assert.Empty(t, ended)
				return
			}
			require.Len(t, ended, 2)
			var nf *resilience.NotFoundError[string]
			require.ErrorAs(t, ended[0].Err, &nf)
			assert.Equal(t, []resilience.Event{
				{Kind: resilience.EventCallEnded, Component: "loader", Err: nf, Duration: 3 * time.Millisecond},
				{Kind: resilience.EventCallEnded, Component: "loader", Err: resilience.ErrBatcherClosed},
			}, ended)
		})
	}
}

// TestBatcherGoexit: a batch function that ends its goroutine with
// runtime.Goexit (t.FailNow in a test) answers each of its callers with a
// *PanicError, frees its batch slot for the batches behind it, and Close
// drains.
func TestBatcherGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		calls := 0
		var r batchRecorder
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

// pendingCall is a Do running in a goroutine of its own, in a synctest
// bubble.
type pendingCall struct {
	item   int
	cancel context.CancelFunc
	done   chan struct{}
	out    int
	err    error
}

// startDo calls b.Do(item) in a goroutine and returns once the call has
// settled (joined a batch, or begun to wait for room).
func startDo(b *resilience.Batcher[int, int], item int) *pendingCall {
	ctx, cancel := context.WithCancel(context.Background())
	c := &pendingCall{item: item, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer cancel()
		c.out, c.err = b.Do(ctx, item)
	}()
	synctest.Wait()
	return c
}

// answered reports whether the call has returned.
func (c *pendingCall) answered() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// wait returns the call's outcome, failing the test if it never returns:
// in the bubble, a day passes at once when everything else is blocked.
func (c *pendingCall) wait(t *testing.T) (int, error) {
	t.Helper()
	select {
	case <-c.done:
		return c.out, c.err
	case <-time.After(24 * time.Hour):
		t.Fatalf("Do(%d) never returned", c.item)
		return 0, nil
	}
}

// leave cancels the call's context and waits for it to return.
func (c *pendingCall) leave(t *testing.T) {
	t.Helper()
	c.cancel()
	_, err := c.wait(t)
	assert.ErrorIs(t, err, context.Canceled, "Do(%d)", c.item)
	synctest.Wait()
}

// TestBatcherRoomWakesWaiters: a caller waiting for room (every slot busy,
// the queue and the pending batch full) is woken whenever room appears,
// whichever way it appears, and is answered once the batcher is idle.
func TestBatcherRoomWakesWaiters(t *testing.T) {
	tests := []struct {
		name string
		opts []resilience.BatchOption
		// fill starts the calls that fill the batcher behind the running
		// batch of item 1; the last one waits for room.
		fill []int
		// leave lists the calls (by item) whose callers give up.
		leave []int
		want  [][]int // batches fn received
	}{
		{
			name: "max queued 0: the pending batch is sent straight from pending",
			opts: []resilience.BatchOption{resilience.WithBatchMaxSize(1), resilience.WithBatchMaxQueued(0)},
			fill: []int{2, 3},
			want: [][]int{{1}, {2}, {3}},
		},
		{
			name:  "a queued batch empties because its callers left",
			opts:  []resilience.BatchOption{resilience.WithBatchMaxSize(1), resilience.WithBatchMaxQueued(1)},
			fill:  []int{2, 3, 4},
			leave: []int{2},
			want:  [][]int{{1}, {3}, {4}},
		},
		{
			name:  "a queued batch of two empties one caller at a time",
			opts:  []resilience.BatchOption{resilience.WithBatchMaxSize(2), resilience.WithBatchMaxQueued(1)},
			fill:  []int{11, 2, 3, 4, 5, 6},
			leave: []int{2, 3},
			want:  [][]int{{1, 11}, {4, 5}, {6}},
		},
		{
			name:  "the full pending batch loses a caller",
			opts:  []resilience.BatchOption{resilience.WithBatchMaxSize(2), resilience.WithBatchMaxQueued(0)},
			fill:  []int{11, 2, 3, 4},
			leave: []int{2},
			want:  [][]int{{1, 11}, {3, 4}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := batchRecorder{block: make(chan struct{})}
				opts := append([]resilience.BatchOption{resilience.WithBatchMaxConcurrent(1), resilience.WithBatchMaxWait(time.Hour)}, tc.opts...)
				b := resilience.NewBatcher(r.fn, opts...)
				calls := map[int]*pendingCall{1: startDo(b, 1)}
				for _, item := range tc.fill {
					calls[item] = startDo(b, item)
				}
				last := calls[tc.fill[len(tc.fill)-1]]
				require.False(t, last.answered())
				for _, item := range tc.leave {
					calls[item].leave(t)
					delete(calls, item)
				}
				close(r.block)
				for item, c := range calls {
					v, err := c.wait(t)
					require.NoError(t, err, "Do(%d)", item)
					assert.Equal(t, 2*item, v, "Do(%d)", item)
				}
				require.NoError(t, b.Close(context.Background()))
				assert.Equal(t, tc.want, r.batches, "no caller that left reaches fn, no empty batch is sent")
			})
		})
	}
}

// TestBatcherCloseWakesRoomWaiters: Close answers a caller waiting for room
// with ErrBatcherClosed at once, while the batches it waited behind still
// run, and then drains them.
func TestBatcherCloseWakesRoomWaiters(t *testing.T) {
	for _, queued := range []int{0, 1} {
		t.Run(fmt.Sprintf("max queued %d", queued), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := batchRecorder{block: make(chan struct{})}
				b := resilience.NewBatcher(r.fn, resilience.WithBatchMaxSize(1), resilience.WithBatchMaxConcurrent(1),
					resilience.WithBatchMaxQueued(queued), resilience.WithBatchMaxWait(time.Hour))
				var accepted []*pendingCall
				for item := 1; item <= 2+queued; item++ {
					accepted = append(accepted, startDo(b, item))
				}
				waiter := startDo(b, 9)
				closed := make(chan error, 1)
				go func() { closed <- b.Close(context.Background()) }()
				synctest.Wait()
				require.True(t, waiter.answered(), "Close did not wake the caller waiting for room")
				assert.ErrorIs(t, waiter.err, resilience.ErrBatcherClosed)
				close(r.block)
				require.NoError(t, <-closed)
				for _, c := range accepted {
					v, err := c.wait(t)
					require.NoError(t, err)
					assert.Equal(t, 2*c.item, v)
				}
			})
		})
	}
}

package resilience

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnDeadlineWorks fails if a Go release changes what deadlineCtx
// relies on in the context package: that Cause finds ErrTimeout through
// Value, and that a child attaches through the AfterFunc method. Timeouts
// would then use the standard context, silently slower; this says why.
func TestOwnDeadlineWorks(t *testing.T) {
	require.True(t, ownDeadlineWorks(), "deadlineCtx no longer works with this release's context package")
	require.True(t, checkOwnDeadline())
}

// expireAll ends every context on the wheel as if its deadline had passed,
// and fires every trigger, without moving the wheel's own time.
func expireAll() int {
	pickShard(nil)
	var due []*deadlineCtx
	for i := range wheel.shards {
		s := &wheel.shards[i]
		s.mu.Lock()
		for j := range s.slots {
			for c := s.slots[j]; c != nil; {
				next := c.next
				s.unlink(c)
				due = append(due, c)
				c = next
			}
		}
		s.mu.Unlock()
	}
	for _, c := range due {
		c.due()
	}
	return len(due)
}

// expireOne ends c, which is on the wheel, as if its deadline had passed,
// without moving the wheel's own time.
func expireOne(c *deadlineCtx) {
	c.shard.remove(c)
	c.end(dlExpired)
}

// onWheel reports whether c is on the wheel.
func onWheel(c *deadlineCtx) bool {
	if c.shard == nil {
		return false
	}
	c.shard.mu.Lock()
	defer c.shard.mu.Unlock()
	return c.inWheel
}

func mustDeadline(t *testing.T, parent context.Context, d time.Duration) *deadlineCtx {
	t.Helper()
	c := newDeadline(parent, d)
	require.NotNil(t, c, "newDeadline(%v) = nil", d)
	return c
}

func TestDeadlineCtxFallback(t *testing.T) {
	ctx := context.Background()
	assert.Nil(t, newDeadline(ctx, wheelMin-1), "shorter than the wheel's resolution")
	assert.Nil(t, newDeadline(ctx, wheelMax+1), "too long")
	assert.NotNil(t, newDeadline(ctx, wheelMin))
	assert.NotNil(t, newDeadline(ctx, wheelMax))
}

func TestDeadlineCtxLazy(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")

	c := mustDeadline(t, parent, time.Hour)
	assert.NoError(t, c.Err())
	assert.Nil(t, context.Cause(c))
	dl, ok := c.Deadline()
	assert.True(t, ok)
	assert.Equal(t, epoch.Add(c.at), dl)
	assert.Equal(t, "v", c.Value(key{}))
	assert.Nil(t, c.done.Load(), "no Done channel until asked for")
	assert.False(t, onWheel(c), "not on the wheel until someone waits")

	// A deadline that passed while nobody waited shows at the next look.
	c.at = time.Since(epoch) - time.Millisecond
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	assert.Equal(t, ErrTimeout, context.Cause(c))
	assert.Equal(t, "v", c.Value(key{}), "values still come from the parent")
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after the deadline")
	}
	c.release()
	assert.Equal(t, context.DeadlineExceeded, c.Err(), "release after the deadline changes nothing")
}

func TestDeadlineCtxParentDeadlineFirst(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mustDeadline(t, parent, time.Hour)
	pd, _ := parent.Deadline()
	dl, _ := c.Deadline()
	assert.Equal(t, pd, dl)
}

func TestDeadlineCtxParentEnds(t *testing.T) {
	errCause := errors.New("client went away")
	parent, cancel := context.WithCancelCause(context.Background())
	c := mustDeadline(t, parent, time.Hour)
	done := c.Done() // arms: the parent is watched
	require.True(t, onWheel(c))
	cancel(errCause)
	<-done
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, errCause, context.Cause(c))
	assert.False(t, onWheel(c), "an ended context leaves the wheel")
}

func TestDeadlineCtxRelease(t *testing.T) {
	c := mustDeadline(t, context.Background(), time.Hour)
	child, cancel := context.WithCancel(c)
	defer cancel()
	require.True(t, onWheel(c))
	c.release()
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, context.Canceled, context.Cause(c))
	assert.Equal(t, context.Canceled, child.Err(), "a child ends with its parent at once")
	assert.False(t, onWheel(c))
}

// TestDeadlineCtxChildren: children derived with the context package attach
// through AfterFunc, with no goroutine, and end with ErrTimeout as cause
// the moment the deadline passes; through a WithValue wrapper they attach
// by the context package's goroutine, and still end, with the same cause.
func TestDeadlineCtxChildren(t *testing.T) {
	type key struct{}
	tests := []struct {
		name     string
		derive   func(context.Context) (context.Context, context.CancelFunc)
		attached bool
	}{
		{"WithCancel", context.WithCancel, true},
		{"WithTimeout", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(p, time.Hour)
		}, true},
		{"AfterFunc", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			context.AfterFunc(p, cancel)
			return ctx, cancel
		}, true},
		{"WithCancel through WithValue", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithCancel(context.WithValue(p, key{}, 1))
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustDeadline(t, context.Background(), time.Hour)
			child, cancel := tc.derive(c)
			defer cancel()
			c.mu.Lock()
			attached := c.funcs != nil
			c.mu.Unlock()
			assert.Equal(t, tc.attached, attached, "attached through AfterFunc")
			require.True(t, onWheel(c))
			expireOne(c)
			<-child.Done()
			assert.Equal(t, context.DeadlineExceeded, c.Err())
			if tc.name != "AfterFunc" {
				assert.Equal(t, context.DeadlineExceeded, child.Err())
				assert.Equal(t, ErrTimeout, context.Cause(child))
			}
			c.release()
		})
	}
}

func TestDeadlineCtxUnregister(t *testing.T) {
	c := mustDeadline(t, context.Background(), time.Hour)
	defer c.release()
	var calls atomic.Int32
	stops := make([]func() bool, 3)
	for i := range stops {
		stops[i] = c.AfterFunc(func() { calls.Add(1) })
	}
	assert.True(t, stops[1]())
	assert.False(t, stops[1](), "a second stop stops nothing")
	_, cancel := context.WithCancel(c)
	cancel() // a child canceled first unregisters itself
	expireOne(c)
	assert.Equal(t, int32(2), calls.Load())
	assert.False(t, stops[0](), "too late to stop")

	// After the end, a new AfterFunc runs at once, in its own goroutine.
	ran := make(chan struct{})
	c.AfterFunc(func() { close(ran) })
	<-ran
}

// testShard returns the one shard of a wheel of its own.
func testShard() *wheelShard {
	w := new(wheelTimer)
	w.init(1)
	return &w.shards[0]
}

func TestWheel(t *testing.T) {
	s := testShard()
	// Far ahead, as in FuzzWheel: the wheel's real timer never fires while
	// the test looks at the wheel (a tick ahead of the real clock, it did
	// on a busy machine).
	now := nowTick() + 1<<30
	var cs []*deadlineCtx
	for _, after := range []int64{5, 1, 5, wheelSlots + 5, 3*wheelSlots + 5} {
		c := &deadlineCtx{parent: context.Background(), at: time.Duration(now+after) * wheelTick}
		c.shard = s
		s.add(c)
		cs = append(cs, c)
	}
	defer s.w.timer.Stop()
	s.mu.Lock()
	assert.Equal(t, now+1, s.w.at.Load(), "the timer is set for the earliest tick")
	assert.Equal(t, 5, s.n)
	s.mu.Unlock()
	s.remove(cs[2])
	assert.False(t, cs[2].inWheel)

	ended := func() []int {
		var out []int
		for i, c := range cs {
			if c.state.Load() == dlExpired {
				out = append(out, i)
			}
		}
		return out
	}
	s.w.process(now + 4)
	assert.Equal(t, []int{1}, ended())
	s.w.process(now + 5)
	assert.Equal(t, []int{0, 1}, ended(), "the same slot one round later waits")
	s.mu.Lock()
	assert.Equal(t, now+wheelSlots+5, s.w.at.Load(), "next: the slot of the next round's context")
	s.mu.Unlock()
	s.w.process(now + wheelSlots + 5)
	assert.Equal(t, []int{0, 1, 3}, ended())
	s.w.process(now + 10*wheelSlots)
	assert.Equal(t, []int{0, 1, 3, 4}, ended())
	assert.Equal(t, 0, s.n)

	// A context filed for a tick already processed is due at the next.
	late := &deadlineCtx{parent: context.Background(), at: time.Duration(now) * wheelTick}
	late.shard = s
	s.add(late)
	assert.Equal(t, now+10*wheelSlots+1, late.tick)
	s.remove(late)
}

// TestTimeoutOwnDeadline runs a Timeout on the real clock, outside any
// bubble, so that fn gets a deadlineCtx; the deadline is made to pass by
// expiring the wheel, so no real time is waited for.
func TestTimeoutOwnDeadline(t *testing.T) {
	for _, coop := range []bool{false, true} {
		var opts []TimeoutOption
		name := "default"
		if coop {
			opts, name = []TimeoutOption{WithTimeoutCooperative()}, "cooperative"
		}
		t.Run(name, func(t *testing.T) {
			var discarded atomic.Int32
			p := Timeout[int](time.Hour, append(opts, WithDiscard(func(int) { discarded.Add(1) }))...)
			const calls = 50
			for i := 1; i <= calls; i++ {
				waiting := make(chan context.Context, 1)
				type result struct {
					v   int
					err error
				}
				res := make(chan result, 1)
				go func() {
					v, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
						waiting <- ctx
						<-ctx.Done()
						return i, nil
					})
					res <- result{v, err}
				}()
				ctx := <-waiting
				_, own := ctx.(*deadlineCtx)
				require.True(t, own, "fn's context is %T, want a *deadlineCtx", ctx)
				dl, _ := ctx.Deadline()
				require.WithinDuration(t, time.Now().Add(time.Hour), dl, time.Minute)
				for expireAll() == 0 && ctx.Err() == nil {
					// the caller has not armed the context yet
				}
				r := <-res
				require.ErrorIs(t, r.err, ErrTimeout)
				require.Zero(t, r.v)
				require.Equal(t, ErrTimeout, context.Cause(ctx))
			}
			require.Eventually(t, func() bool { return discarded.Load() == calls }, 10*time.Second, time.Millisecond)
		})
	}
	stopIdleWorkers()
}

// TestTimeoutOwnDeadlineFires lets the wheel's own timer end a few
// contexts at the shortest timeout it serves: each call must time out.
func TestTimeoutOwnDeadlineFires(t *testing.T) {
	for _, coop := range []bool{false, true} {
		var opts []TimeoutOption
		if coop {
			opts = append(opts, WithTimeoutCooperative())
		}
		p := Timeout[int](wheelMin, opts...)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					<-ctx.Done()
					return 0, ctx.Err()
				})
				assert.ErrorIs(t, err, ErrTimeout)
			})
		}
		wg.Wait()
	}
	stopIdleWorkers()
}

// TestTimeoutParentCancelOwn: the caller's cancellation reaches fn's
// deadlineCtx and gives the caller's error, in both modes.
func TestTimeoutParentCancelOwn(t *testing.T) {
	for _, coop := range []bool{false, true} {
		var opts []TimeoutOption
		if coop {
			opts = append(opts, WithTimeoutCooperative())
		}
		p := Timeout[int](time.Hour, opts...)
		parent, cancel := context.WithCancelCause(context.Background())
		errGone := errors.New("gone")
		_, err := p.Execute(parent, func(ctx context.Context) (int, error) {
			cancel(errGone)
			<-ctx.Done()
			assert.Equal(t, errGone, context.Cause(ctx))
			return 0, ctx.Err()
		})
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, ErrTimeout)
	}
	stopIdleWorkers()
}

// TestDeadlineStress files many deadlines for the same moment and reports
// how late the wheel ended the last of them, beside the standard context.
// Set RESILIENCE_STRESS=1 for 100,000 of them; the default is small.
func TestDeadlineStress(t *testing.T) {
	n := 2000
	if os.Getenv("RESILIENCE_STRESS") != "" {
		n = 100_000
	}
	const d = 50 * time.Millisecond
	lateness := func(own bool) time.Duration {
		lates := make([]time.Duration, n)
		var wg sync.WaitGroup
		wg.Add(n)
		deadline := time.Now().Add(d)
		for i := range n {
			record := func() { lates[i] = time.Since(deadline); wg.Done() }
			if own {
				c := &deadlineCtx{parent: context.Background(), at: deadline.Sub(epoch)}
				c.AfterFunc(record)
				continue
			}
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			context.AfterFunc(ctx, func() { record(); cancel() })
		}
		wg.Wait()
		return slices.Max(lates)
	}
	t.Logf("%d deadlines at once, the last ended after: wheel %v, standard context %v", n, lateness(true), lateness(false))
	if os.Getenv("RESILIENCE_STRESS") != "" {
		n = 1
		var worst [2]time.Duration
		for range 50 {
			worst[0] = max(worst[0], lateness(true))
			worst[1] = max(worst[1], lateness(false))
		}
		t.Logf("one deadline at a time, the latest of 50: wheel %v, standard context %v", worst[0], worst[1])
	}
}

// TestTimeoutAbandonedMemory reports the memory an abandoned call holds
// while its fn still runs: the worker's stack, the call's state and fn's
// context. Set RESILIENCE_STRESS=1 for 10,000 calls; the default is small.
func TestTimeoutAbandonedMemory(t *testing.T) {
	n := 200
	if os.Getenv("RESILIENCE_STRESS") != "" {
		n = 10_000
	}
	for _, p := range []struct {
		name string
		p    Policy[int]
	}{{"alone", Timeout[int](time.Hour)}, {"composed", Compose(
		Timeout[int](time.Hour), Retry[int](), Guarded[int](NewBreaker()), Guarded[int](NewBulkhead(n)),
	)}} {
		release := make(chan struct{})
		var running sync.WaitGroup
		before := memInUse()
		for range n {
			ctx, cancel := context.WithCancel(context.Background())
			running.Add(1)
			_, err := p.p.Execute(ctx, func(context.Context) (int, error) {
				defer running.Done()
				cancel() // the caller leaves; fn goes on
				<-release
				return 0, nil
			})
			require.ErrorIs(t, err, context.Canceled)
		}
		after := memInUse()
		t.Logf("%s: %d bytes per abandoned call", p.name, (int64(after)-int64(before))/int64(n))
		close(release)
		running.Wait()
	}
	stopIdleWorkers()
}

// memInUse returns the bytes of heap and stacks in use after a collection.
func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// TestWheelTimerShared: shards filing contexts from several goroutines at
// once, while the one timer of their wheel fires and is set again, lose no
// wake-up: every context ends, none much later than its tick. All wake a
// shared channel, so the test waits for the last of them, not for time.
func TestWheelTimerShared(t *testing.T) {
	w := new(wheelTimer)
	w.init(4)
	defer func() {
		w.mu.Lock()
		if w.timer != nil {
			w.timer.Stop()
		}
		w.mu.Unlock()
	}()
	const goroutines, each = 4, 300
	ended := make(chan struct{}, goroutines*each)
	var worst atomic.Int64 // the latest end after a tick, in nanoseconds
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				// One to three ticks ahead, so that contexts are filed
				// while the timer fires for earlier ones.
				c := &deadlineCtx{parent: context.Background(), at: time.Since(epoch) + time.Duration(1+i%3)*wheelTick}
				wake := make(chan struct{}, 1)
				c.hook = wakeHook(wake)
				c.shard = &w.shards[(g+i)%len(w.shards)]
				c.shard.add(c)
				go func() {
					<-wake
					late := time.Since(epoch) - c.at
					for {
						old := worst.Load()
						if int64(late) <= old || worst.CompareAndSwap(old, int64(late)) {
							break
						}
					}
					ended <- struct{}{}
				}()
				if i%50 == 49 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	give := time.NewTimer(10 * time.Second) // a bound, not a wait: a lost wake-up hangs
	defer give.Stop()
	for range goroutines * each {
		select {
		case <-ended:
		case <-give.C:
			t.Fatal("a context on the wheel never ended")
		}
	}
	assert.Less(t, time.Duration(worst.Load()), time.Second, "the latest end after its tick")
	for i := range w.shards {
		assert.Zero(t, w.shards[i].n, "shard %d still holds contexts", i)
	}
}

// FuzzWheel runs a shard through adds, removes and expiries against a
// model: a set of deadlines by tick. Each step checks that exactly the due
// contexts ended, and that the timer is never set later than the earliest
// deadline on the wheel.
func FuzzWheel(f *testing.F) {
	f.Add([]byte{0, 5, 0, 1, 2, 3, 1, 0, 2, 6})
	f.Add([]byte{0, 200, 0, 255, 0, 3, 2, 255, 2, 255, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := testShard()
		base := nowTick() + 1<<30 // far ahead: the real timer never fires
		s.done = base
		defer func() {
			if s.w.timer != nil {
				s.w.timer.Stop()
			}
		}()
		var cs []*deadlineCtx
		model := map[*deadlineCtx]int64{} // on the wheel: its tick
		now := base - 1
		for len(ops) >= 2 {
			op, arg := ops[0]%3, int64(ops[1])
			ops = ops[2:]
			switch op {
			case 0: // add, due arg*37 ticks ahead of the last expiry
				tick := now + 1 + arg*37
				c := &deadlineCtx{parent: context.Background(), at: time.Duration(tick) * wheelTick}
				c.shard = s
				s.add(c)
				cs = append(cs, c)
				model[c] = max(tick, s.done)
			case 1: // remove one
				if len(cs) == 0 {
					continue
				}
				c := cs[int(arg)%len(cs)]
				s.remove(c)
				delete(model, c)
			case 2: // time passes
				now += arg * 29
				s.w.process(now)
				for c, tick := range model {
					if tick <= now {
						delete(model, c)
						if c.state.Load() != dlExpired {
							t.Fatalf("a context due at %d is live after expire(%d)", tick-base, now-base)
						}
					}
				}
			}
			for _, c := range cs {
				_, on := model[c]
				if on != c.inWheel {
					t.Fatalf("inWheel = %v, model says %v", c.inWheel, on)
				}
			}
			if s.n != len(model) {
				t.Fatalf("n = %d, model has %d", s.n, len(model))
			}
			if len(model) > 0 {
				earliest := int64(math.MaxInt64)
				for _, tick := range model {
					earliest = min(earliest, tick)
				}
				if at := s.w.at.Load(); at == 0 || at > earliest {
					t.Fatalf("timer set for %d, earliest deadline %d", at-base, earliest-base)
				}
			}
		}
	})
}

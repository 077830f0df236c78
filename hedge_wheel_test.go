package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the real clock a Hedge whose delay the timing wheel serves gives the
// first attempt a deadlineCtx with no deadline of its own, whose trigger
// on the wheel starts the hedges. These tests run on the real clock, as
// the wheel does; where a test needs the trigger fired, it fires it
// (expireAll) rather than wait.

// firstCtx runs one call of p whose first attempt answers at once, and
// returns that attempt's context as it was during the attempt and after.
func firstCtx(t *testing.T, p Policy[int], parent context.Context) (during struct {
	own, onWheel bool
	deadline     time.Time
	hasDeadline  bool
	err          error
	name         string
}, after context.Context) {
	t.Helper()
	var once sync.Mutex // with every attempt at once, the first to come records
	recorded := false
	v, err := p.Execute(parent, func(ctx context.Context) (int, error) {
		once.Lock()
		defer once.Unlock()
		if recorded {
			return 7, nil
		}
		recorded = true
		c, ok := ctx.(*deadlineCtx)
		during.own = ok && c.trigger
		during.onWheel = ok && onWheel(c)
		during.deadline, during.hasDeadline = ctx.Deadline()
		during.err = ctx.Err()
		if ok {
			during.name = c.String()
		}
		after = ctx
		return 7, nil
	})
	require.NoError(t, err)
	require.Equal(t, 7, v)
	return during, after
}

func TestHedgeFirstAttemptContext(t *testing.T) {
	withDeadline, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	parentDeadline, _ := withDeadline.Deadline()
	for _, tc := range []struct {
		name   string
		p      Policy[int]
		parent context.Context
		own    bool // the first attempt's context is the wheel's
		// The trigger is surely still on the wheel while the attempt runs:
		// not with the shortest delay, which a busy machine may reach.
		onWheel bool
	}{
		{"fixed", Hedge[int](WithHedgeDelay(time.Hour)), context.Background(), true, true},
		{"fixed, parent deadline", Hedge[int](WithHedgeDelay(time.Hour)), withDeadline, true, true},
		{"quantile", Hedge[int](), context.Background(), true, true},
		{"shortest the wheel serves", Hedge[int](WithHedgeDelay(triggerMin)), context.Background(), true, false},
		{"shorter: a runtime timer", Hedge[int](WithHedgeDelay(triggerMin - 1)), context.Background(), false, false},
		{"every attempt at once", Hedge[int](WithHedgeDelay(0), WithHedgeMax(1)), context.Background(), false, false},
		{"injected clock", Hedge[int](WithHedgeDelay(time.Second), WithClock(stepClock{})), context.Background(), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			during, after := firstCtx(t, tc.p, tc.parent)
			assert.Equal(t, tc.own, during.own, "first attempt on the wheel's context")
			assert.NoError(t, during.err)
			wantDeadline, wantOK := tc.parent.Deadline()
			assert.Equal(t, wantOK, during.hasDeadline)
			assert.True(t, wantDeadline.Equal(during.deadline), "Deadline() = %v, want the parent's %v", during.deadline, parentDeadline)
			if tc.own {
				if tc.onWheel {
					assert.True(t, during.onWheel, "the trigger is on the wheel while the attempt runs")
				}
				assert.Equal(t, "resilience.Hedge context", during.name)
				c := after.(*deadlineCtx)
				assert.False(t, onWheel(c), "the trigger leaves the wheel when the call returns")
			}
			assert.Equal(t, context.Canceled, after.Err(), "the first attempt's context ends with the call")
		})
	}
}

// stepClock is an injected clock: the Hedge must not use the wheel with it.
type stepClock struct{}

func (stepClock) Now() time.Time { return time.Unix(0, 0) }
func (stepClock) WithDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

// TestHedgeTriggerFired: firing the trigger starts a hedge, whose
// result wins; the first attempt's context is cancelled and its late
// result goes to the discard hook once.
func TestHedgeTriggerFired(t *testing.T) {
	var discarded atomic.Int64
	p := Hedge[int](WithHedgeDelay(time.Hour), WithDiscard(func(v int) { discarded.Add(int64(v)) }))
	started := make(chan context.Context, 1)
	type result struct {
		v   int
		err error
	}
	done := make(chan result, 1)
	var attempts atomic.Int64
	go func() {
		v, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
			if attempts.Add(1) == 1 {
				started <- ctx
				<-ctx.Done()
				return 1, nil // a loser's result
			}
			return 2, nil
		})
		done <- result{v, err}
	}()
	first := <-started
	require.Equal(t, 1, expireAll(), "one trigger on the wheel")
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, 2, r.v, "the hedge wins")
	assert.Equal(t, context.Canceled, first.Err())
	assert.Equal(t, int64(1), discarded.Load(), "the loser's result, discarded once")
	assert.Equal(t, int64(2), attempts.Load())
}

// TestHedgeTriggerFires lets the wheel's own timer fire the trigger at the
// shortest delay it serves.
func TestHedgeTriggerFires(t *testing.T) {
	p := Hedge[int](WithHedgeDelay(triggerMin))
	var attempts atomic.Int64
	v, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
		if attempts.Add(1) == 1 {
			<-ctx.Done()
			return 0, ctx.Err()
		}
		return 2, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, v, "the hedge wins")
}

// discards is a Hedge's discard hook that sums the results it gets, and
// lets a test wait for the first.
type discards struct {
	sum   atomic.Int64
	first chan struct{}
}

func newDiscards() *discards { return &discards{first: make(chan struct{})} }

// hook is the WithDiscard hook, for a call with one loser.
func (d *discards) hook(v int) {
	d.sum.Add(int64(v))
	close(d.first)
}

// wait waits for the first discarded result, for ten seconds at most: a
// bound, not a wait for time to pass.
func (d *discards) wait(t *testing.T) {
	t.Helper()
	bound := time.NewTimer(10 * time.Second)
	defer bound.Stop()
	select {
	case <-d.first:
	case <-bound.C:
		t.Fatal("the loser's result never reached the discard hook")
	}
}

// TestHedgeTriggerRacesTheAnswer: the trigger fires as the first attempt
// returns, and whichever of the two comes first decides. The caller first:
// no hedge starts, and the trigger, late, does nothing. The trigger first:
// a hedge starts, loses to the first attempt's result, is canceled, and
// its result goes to the discard hook once.
func TestHedgeTriggerRacesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		triggerFirst  bool
		wantAttempts  int64
		wantDiscarded int64
	}{
		{"the caller first", false, 1, 0},
		{"the trigger first", true, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDiscards()
			h := Hedge[int](WithHedgeDelay(time.Hour), WithDiscard(d.hook)).(*hedge[int])
			fire := h.self.fire
			answered, fired := make(chan struct{}), make(chan struct{})
			h.self.fire = func(c *deadlineCtx) {
				if !tc.triggerFirst {
					<-answered
				}
				fire(c)
				close(fired)
			}
			var attempts atomic.Int64
			v, err := h.Execute(context.Background(), func(ctx context.Context) (int, error) {
				if attempts.Add(1) > 1 { // the hedge
					<-ctx.Done()
					return 2, nil
				}
				if n := expireAll(); n != 1 {
					t.Errorf("%d triggers on the wheel, want 1", n)
				}
				if tc.triggerFirst {
					<-fired // the hedge has started
				}
				return 1, nil
			})
			close(answered)
			require.NoError(t, err)
			assert.Equal(t, 1, v, "the first attempt's result")
			<-fired
			if tc.wantDiscarded > 0 {
				d.wait(t)
			}
			assert.Equal(t, tc.wantAttempts, attempts.Load(), "attempts")
			assert.Equal(t, tc.wantDiscarded, d.sum.Load(), "discarded")
		})
	}
}

// TestHedgeTimerRacesTheAnswer is TestHedgeTriggerRacesTheAnswer for a
// runtime timer (an injected clock here), each order forced by calling the
// timer's function and the caller's claim by hand: the caller first, the
// timer starts nothing; the timer first, its hedge loses to the first
// attempt's result and is discarded once.
func TestHedgeTimerRacesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		timerFirst    bool
		wantAttempts  int64
		wantDiscarded int64
	}{
		{"the caller first", false, 0, 0},
		{"the timer first", true, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDiscards()
			h := Hedge[int](WithHedgeDelay(time.Hour), WithClock(stepClock{}), WithDiscard(d.hook)).(*hedge[int])
			var attempts atomic.Int64 // the hedges'
			r, _ := h.begin(context.Background(), h.self.next, func(ctx context.Context) (int, error) {
				attempts.Add(1)
				<-ctx.Done()
				return 2, nil
			}, time.Hour)
			if tc.timerFirst {
				r.fire()
			}
			s := h.claim(&r.hedges) // the first attempt has returned 1
			if !tc.timerFirst {
				require.Nil(t, s, "the caller's claim, first, makes the first attempt the answer")
				r.fire()
				r.endFirst()
			} else {
				require.NotNil(t, s, "the timer, first, started the hedges")
				v, err := s.join(1, nil)
				require.NoError(t, err)
				assert.Equal(t, 1, v, "the first attempt's result")
				d.wait(t)
			}
			assert.Equal(t, tc.wantAttempts, attempts.Load(), "hedges run")
			assert.Equal(t, tc.wantDiscarded, d.sum.Load(), "discarded")
		})
	}
}

// TestHedgeFirstAttemptParentEnds: the caller's cancellation reaches the
// first attempt's context and a child derived from it, which attaches
// without a goroutine; the call returns the caller's error.
func TestHedgeFirstAttemptParentEnds(t *testing.T) {
	errGone := errors.New("gone")
	parent, cancel := context.WithCancelCause(context.Background())
	p := Hedge[int](WithHedgeDelay(time.Hour))
	_, err := p.Execute(parent, func(ctx context.Context) (int, error) {
		c := ctx.(*deadlineCtx)
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		c.mu.Lock()
		attached := c.funcs != nil
		c.mu.Unlock()
		assert.True(t, attached, "the child attaches through AfterFunc")
		cancel(errGone)
		<-ctx.Done()
		<-child.Done()
		assert.Equal(t, errGone, context.Cause(ctx))
		assert.Equal(t, errGone, context.Cause(child))
		assert.False(t, onWheel(c), "an ended context's trigger leaves the wheel")
		return 0, ctx.Err()
	})
	assert.ErrorIs(t, err, context.Canceled)
}

// TestHedgeFirstAttemptPanics: a panic in the first attempt reaches the
// caller and takes the trigger off the wheel.
func TestHedgeFirstAttemptPanics(t *testing.T) {
	p := Hedge[int](WithHedgeDelay(time.Hour))
	var c *deadlineCtx
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = p.Execute(context.Background(), func(ctx context.Context) (int, error) {
			c = ctx.(*deadlineCtx)
			panic("boom")
		})
	})
	require.NotNil(t, c)
	assert.False(t, onWheel(c))
	assert.Equal(t, context.Canceled, c.Err())
}

// TestWheelContextSizes: the contexts a Timeout and a Hedge allocate on
// each call stay in the allocator's size classes they were measured in (a
// larger class costs more here: 128 bytes about 58ns, 256 about 110). A
// hedgeFirst holds no value of T, so its size does not depend on it.
func TestWheelContextSizes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max uintptr
	}{
		{"Timeout's deadlineCtx", unsafe.Sizeof(deadlineCtx{}), 112},
		{"Hedge's hedgeFirst of an int", unsafe.Sizeof(hedgeFirst[int]{}), 128},
		{"Hedge's hedgeFirst of a large array", unsafe.Sizeof(hedgeFirst[[1 << 10]byte]{}), 128},
	} {
		if tc.size > tc.max {
			t.Errorf("%s: %d bytes, more than %d", tc.name, tc.size, tc.max)
		}
	}
}

package resilience_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steppedClock is a fake clock of another shape than benbjohnson/clock's,
// like the fakes of k8s.io/utils/clock: time moves with Step, and timers
// are functions run when it passes them.
type steppedClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*steppedTimer
}

type steppedTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f when the clock has stepped d past now.
func (c *steppedClock) AfterFunc(d time.Duration, f func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &steppedTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() {
		c.mu.Lock()
		t.stopped = true
		c.mu.Unlock()
	}
}

// Step moves the clock and runs the timers it passes, in order.
func (c *steppedClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*steppedTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			due = append(due, t)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// pending returns the number of timers not yet run or stopped.
func (c *steppedClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// adapted is the whole adapter: the package needs Now, and a context that
// ends at a deadline, which the fake clock's own timer can cancel.
type adapted struct{ *steppedClock }

func (a adapted) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := a.AfterFunc(d.Sub(a.Now()), cancel)
	return ctx, func() { stop(); cancel() }
}

func TestForeignFakeClock(t *testing.T) {
	t.Run("retry waits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &steppedClock{now: time.Unix(1_000_000, 0)}
			clk := resilience.WithClock(adapted{fake})
			p := resilience.Retry[int](clk, resilience.WithBackoff(resilience.Constant(time.Hour)))
			calls := 0
			done := make(chan error, 1)
			go func() {
				_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
					calls++
					if calls == 1 {
						return 0, errors.New("once")
					}
					return calls, nil
				})
				done <- err
			}()
			synctest.Wait()
			require.Equal(t, 1, fake.pending(), "the retry waits on the fake clock")
			fake.Step(time.Hour)
			require.NoError(t, <-done)
			assert.Equal(t, 2, calls)
		})
	})

	t.Run("timeout ends at the deadline with ErrTimeout as cause", func(t *testing.T) {
		for _, mode := range []struct {
			name string
			opts []resilience.TimeoutOption
		}{{"default", nil}, {"cooperative", []resilience.TimeoutOption{resilience.WithTimeoutCooperative()}}} {
			t.Run(mode.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fake := &steppedClock{now: time.Unix(1_000_000, 0)}
					clk := resilience.WithClock(adapted{fake})
					p := resilience.Timeout[int](time.Second, append(mode.opts, clk)...)
					var cause, fnErr error
					done := make(chan error, 1)
					go func() {
						_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
							<-ctx.Done()
							cause, fnErr = context.Cause(ctx), ctx.Err()
							return 0, ctx.Err()
						})
						done <- err
					}()
					synctest.Wait()
					fake.Step(time.Second)
					err := <-done
					assert.ErrorIs(t, err, resilience.ErrTimeout)
					if mode.name == "cooperative" {
						assert.Equal(t, resilience.ErrTimeout, cause)
						assert.Equal(t, context.DeadlineExceeded, fnErr)
					}
				})
			})
		}
	})

	t.Run("bulkhead wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &steppedClock{now: time.Unix(1_000_000, 0)}
			clk := resilience.WithClock(adapted{fake})
			bh := resilience.NewBulkhead(1, clk, resilience.WithBulkheadWait(time.Minute))
			require.NoError(t, bh.Acquire(context.Background()))
			done := make(chan error, 1)
			go func() { done <- bh.Acquire(context.Background()) }()
			synctest.Wait()
			fake.Step(time.Minute)
			assert.ErrorIs(t, <-done, resilience.ErrBulkheadFull)
			bh.Release()
		})
	})
}

// TestTimeoutCauseUnderMockClock: fn's context reports the deadline and
// ErrTimeout as its cause on an injected clock too, and a child context fn
// derives from it ends with it.
func TestTimeoutCauseUnderMockClock(t *testing.T) {
	synctest.Test(t, testTimeoutCauseUnderMockClock)
}

func testTimeoutCauseUnderMockClock(t *testing.T) {
	mock := clock.NewMock()
	p := resilience.Timeout[int](time.Second, resilience.WithClock(mock), resilience.WithTimeoutCooperative())
	type seen struct {
		err, cause, childCause error
		deadline               time.Time
	}
	got := make(chan seen, 1)
	done := make(chan error, 1)
	go func() {
		_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			d, _ := ctx.Deadline()
			<-child.Done()
			got <- seen{ctx.Err(), context.Cause(ctx), context.Cause(child), d}
			return 0, ctx.Err()
		})
		done <- err
	}()
	synctest.Wait()
	mock.Add(time.Second)
	s := <-got
	assert.ErrorIs(t, <-done, resilience.ErrTimeout)
	assert.Equal(t, context.DeadlineExceeded, s.err)
	assert.Equal(t, resilience.ErrTimeout, s.cause)
	assert.Equal(t, resilience.ErrTimeout, s.childCause)
	assert.Equal(t, time.Unix(1, 0), s.deadline)
}

func TestWithClockRefusesNil(t *testing.T) {
	assert.PanicsWithValue(t, "resilience: WithClock: clock is nil", func() { resilience.WithClock(nil) })
	assert.PanicsWithValue(t, "resilience: WithClock: clock is a nil *clock.Mock", func() { resilience.WithClock((*clock.Mock)(nil)) })
	assert.PanicsWithValue(t, "resilience: WithObserver: observer is nil", func() { resilience.WithObserver(nil) })
	assert.PanicsWithValue(t, "resilience: WithObserver: observer is a nil resilience.ObserverFunc", func() {
		resilience.WithObserver(resilience.ObserverFunc(nil))
	})
}

// A context's deadline may lie further ahead than the largest
// time.Duration (292 years): the time left until it then saturates, and
// must never be negated into the smallest Duration, which reads as a
// deadline long past.

// TestRateLimiterWaitWithAFarDeadline waits for a token under a deadline
// further ahead than the largest time.Duration: the token comes in a
// second, well before it.
func TestRateLimiterWaitWithAFarDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().AddDate(300, 0, 0))
		defer cancel()
		l := resilience.NewRateLimiter(1, 1)
		keyed := resilience.NewKeyedRateLimiter[string](1, 1)
		guarded := resilience.Guarded[int](resilience.NewRateLimiter(1, 1, resilience.WithRateLimitWait(time.Hour)))
		start := time.Now()
		require.NoError(t, l.Wait(ctx))
		require.NoError(t, l.Wait(ctx))
		require.NoError(t, keyed.Wait(ctx, "k"))
		require.NoError(t, keyed.Wait(ctx, "k"))
		_, err := guarded.Execute(ctx, okFunc)
		require.NoError(t, err)
		_, err = guarded.Execute(ctx, okFunc)
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

// TestRetryWithAFarDeadline retries under a deadline further ahead than
// the largest time.Duration: the wait ends well before it.
func TestRetryWithAFarDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().AddDate(300, 0, 0))
		defer cancel()
		fn, calls := script(errFlaky, nil)
		start := time.Now()
		_, err := resilience.Retry[int](resilience.WithBackoff(resilience.Constant(time.Second))).Execute(ctx, fn)
		require.NoError(t, err)
		assert.Equal(t, 2, *calls)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

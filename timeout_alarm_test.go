package resilience_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file run the default mode on the real clock, outside
// testing/synctest bubbles, with a caller's context that cannot end: the
// case where a call waits for its worker or its alarm, not for the end of
// fn's context (the other tests run in bubbles). Their verdicts depend on
// no machine's speed: a call never ends before its deadline, and the
// upper bounds are generous.

// slack bounds how late past its deadline an abandoned call may return on
// a machine however slow.
const slack = 10 * time.Second

// stuck returns a fn that ignores its context until release is closed, and
// sends the context it was given to got.
func stuck(release <-chan struct{}, got chan<- context.Context) resilience.Func[int] {
	return func(ctx context.Context) (int, error) {
		if got != nil {
			got <- ctx
		}
		<-release
		return 7, nil
	}
}

// TestTimeoutAlarmAbandons: a fn that ignores its context is abandoned at
// the deadline, not before, with the error and cause of a timeout, which
// fn's context carries from then on; its late result goes to the discard
// hook.
func TestTimeoutAlarmAbandons(t *testing.T) {
	const d = 20 * time.Millisecond
	discarded := make(chan int, 1)
	p := resilience.Timeout[int](d, resilience.WithDiscard(func(v int) { discarded <- v }))
	release := make(chan struct{})
	got := make(chan context.Context, 1)
	start := time.Now()
	_, err := p.Execute(context.Background(), stuck(release, got))
	elapsed := time.Since(start)
	require.ErrorIs(t, err, resilience.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.GreaterOrEqual(t, elapsed, d, "Execute returned before the deadline")
	assert.Less(t, elapsed, d+slack)
	fctx := <-got
	assert.Equal(t, context.DeadlineExceeded, fctx.Err())
	assert.Equal(t, resilience.ErrTimeout, context.Cause(fctx))
	close(release)
	assert.Equal(t, 7, <-discarded)
}

// TestTimeoutAlarmAfterQuickCalls: calls that return at once, for longer
// than the timeout, and then one that does not. The alarm set for an
// earlier call's deadline fires while later calls run, and is set again
// for theirs; the call that does not return is abandoned at its own
// deadline, not at an earlier call's.
func TestTimeoutAlarmAfterQuickCalls(t *testing.T) {
	const d = 10 * time.Millisecond
	p := resilience.Timeout[int](d)
	for start := time.Now(); time.Since(start) < 3*d; {
		v, err := p.Execute(context.Background(), okFunc)
		if err != nil { // a machine too busy to run okFunc within d
			require.ErrorIs(t, err, resilience.ErrTimeout)
			continue
		}
		require.Equal(t, 1, v)
	}
	for range 3 {
		release := make(chan struct{})
		start := time.Now()
		_, err := p.Execute(context.Background(), stuck(release, nil))
		elapsed := time.Since(start)
		close(release)
		require.ErrorIs(t, err, resilience.ErrTimeout)
		assert.GreaterOrEqual(t, elapsed, d, "Execute returned before the deadline")
		assert.Less(t, elapsed, d+slack)
		time.Sleep(d / 3) // so that the next call starts at another point of the alarm's period
	}
}

// TestTimeoutAlarmConcurrent: callers on every core, each call returning
// at once or after the deadline, over one policy: every call that returns
// in time has its result, every other is abandoned no earlier than its
// deadline, and each late result goes to the discard hook once.
func TestTimeoutAlarmConcurrent(t *testing.T) {
	const d = 5 * time.Millisecond
	late := make(chan int, 8*40)
	p := resilience.Timeout[int](d, resilience.WithDiscard(func(v int) { late <- v }))
	var abandoned atomic.Int64
	var callers sync.WaitGroup
	for g := range 8 {
		callers.Go(func() {
			for i := range 40 {
				if (g+i)%5 != 0 {
					v, err := p.Execute(context.Background(), okFunc)
					switch {
					case errors.Is(err, resilience.ErrTimeout): // a machine too busy to run okFunc within d
						abandoned.Add(1)
					case err != nil || v != 1:
						t.Errorf("Execute = %v, %v; want 1, nil", v, err)
					}
					continue
				}
				start := time.Now()
				_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					<-ctx.Done() // returns once its deadline has passed: too late
					return 2, nil
				})
				if elapsed := time.Since(start); !errors.Is(err, resilience.ErrTimeout) || elapsed < d {
					t.Errorf("Execute = %v after %v, want ErrTimeout after %v at least", err, elapsed, d)
				}
				abandoned.Add(1)
			}
		})
	}
	callers.Wait()
	for range abandoned.Load() {
		<-late // each abandoned call's late result goes to the discard hook
	}
}

// TestTimeoutAlarmPanics: a panic in fn, or runtime.Goexit, happens again
// in the caller's goroutine, as in a bubble.
func TestTimeoutAlarmPanics(t *testing.T) {
	p := resilience.Timeout[int](time.Minute)
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { panic("boom") })
	})
	exited := make(chan bool)
	go func() {
		returned := false
		defer func() { exited <- returned }()
		_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { runtimeGoexit(); return 0, nil })
		returned = true
	}()
	assert.False(t, <-exited, "Execute returned after fn called runtime.Goexit")
	v, err := p.Execute(context.Background(), okFunc)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
}

// TestTimeoutAllocatesAsItsContext pins the default mode's cost on the
// real clock: a call that returns in time allocates what its context does
// and nothing more, with a caller's context that cannot end. (The race
// detector makes sync.Pool drop items at random.)
func TestTimeoutAllocatesAsItsContext(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	ctx := context.Background()
	floor := testing.AllocsPerRun(1000, func() {
		c, cancel := context.WithTimeoutCause(ctx, time.Second, resilience.ErrTimeout)
		_, _ = okFunc(c)
		cancel()
	})
	p := resilience.Timeout[int](time.Second)
	got := testing.AllocsPerRun(1000, func() { _, _ = p.Execute(ctx, okFunc) })
	assert.Equal(t, floor, got, "a call allocates %v times, its context %v", got, floor)
}

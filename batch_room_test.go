package resilience_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

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
				r := recorder{block: make(chan struct{})}
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
				r := recorder{block: make(chan struct{})}
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

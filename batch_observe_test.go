package resilience_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

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
				var o guardEvents
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
				var o guardEvents
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
			o := guardEvents{outcomes: outcomes}
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

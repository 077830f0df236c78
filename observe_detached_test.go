package resilience_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// dyingObserver ends Observe with die on every event of one kind, and
// counts them. It is safe for concurrent use.
type dyingObserver struct {
	kind resilience.EventKind
	die  func()
	seen atomic.Int32
}

func (o *dyingObserver) Observe(_ context.Context, e resilience.Event) {
	if e.Kind == o.kind {
		o.seen.Add(1)
		o.die()
	}
}

// TestObserverPanicDetached: an event emitted in a goroutine no caller
// waits on (an abandoned fn's, a losing hedge's, a hedge timer's, a
// batch's) drops a panic of the observer, and a runtime.Goexit in it ends
// only that goroutine: the program goes on, every caller gets its answer,
// the component stays usable and nothing is left running (synctest.Test
// fails otherwise).
func TestObserverPanicDetached(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		kind resilience.EventKind
		// run makes the component emit the event in a goroutine of its own,
		// checks the caller's answer, and that the component still works.
		run func(t *testing.T, o resilience.Option)
	}{
		{"timeout: late panic", resilience.EventLatePanic, func(t *testing.T, o resilience.Option) {
			p := resilience.Timeout[int](10*time.Millisecond, o)
			_, err := p.Execute(ctx, func(context.Context) (int, error) {
				time.Sleep(time.Second)
				panic("too late")
			})
			require.ErrorIs(t, err, resilience.ErrTimeout)
			time.Sleep(2 * time.Second) // fake time: fn panics, then the observer
			synctest.Wait()
			v, err := p.Execute(ctx, func(context.Context) (int, error) { return 1, nil })
			assert.NoError(t, err)
			assert.Equal(t, 1, v)
		}},
		{"timeout: late result discarded", resilience.EventDiscarded, func(t *testing.T, o resilience.Option) {
			var discarded atomic.Int32
			p := resilience.Timeout[int](10*time.Millisecond, o,
				resilience.WithDiscard(func(v int) { discarded.Add(int32(v)) }))
			_, err := p.Execute(ctx, func(context.Context) (int, error) {
				time.Sleep(time.Second)
				return 7, nil
			})
			require.ErrorIs(t, err, resilience.ErrTimeout)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			assert.Equal(t, int32(7), discarded.Load())
		}},
		{"hedge: a loser's panic", resilience.EventLatePanic, func(t *testing.T, o resilience.Option) {
			p := resilience.Hedge[int](o, resilience.WithHedgeDelay(10*time.Millisecond))
			var n atomic.Int32
			v, err := p.Execute(ctx, func(context.Context) (int, error) {
				if n.Add(1) == 2 {
					time.Sleep(time.Second)
					panic("too late")
				}
				time.Sleep(50 * time.Millisecond)
				return 1, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			time.Sleep(2 * time.Second)
			synctest.Wait()
		}},
		{"hedge: a loser's result discarded", resilience.EventDiscarded, func(t *testing.T, o resilience.Option) {
			var discarded atomic.Int32
			p := resilience.Hedge[int](o, resilience.WithHedgeDelay(10*time.Millisecond),
				resilience.WithDiscard(func(v int) { discarded.Add(int32(v)) }))
			var n atomic.Int32
			v, err := p.Execute(ctx, func(context.Context) (int, error) {
				if n.Add(1) == 2 {
					time.Sleep(time.Second)
					return 2, nil
				}
				time.Sleep(50 * time.Millisecond)
				return 1, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			assert.Equal(t, int32(2), discarded.Load())
		}},
		{"hedge: started by its timer", resilience.EventHedge, func(t *testing.T, o resilience.Option) {
			p := resilience.Hedge[int](o, resilience.WithHedgeDelay(10*time.Millisecond))
			var n atomic.Int32
			v, err := p.Execute(ctx, func(ctx context.Context) (int, error) {
				if n.Add(1) == 1 {
					<-ctx.Done() // the hedge wins, and this loser is cancelled
					return 0, ctx.Err()
				}
				return 2, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 2, v, "the hedge ran although Observe failed")
		}},
		{"batcher: batch sent", resilience.EventBatchSent, func(t *testing.T, o resilience.Option) {
			b := resilience.NewBatcher(func(_ context.Context, in []int) ([]int, error) {
				return in, nil
			}, resilience.WithBatchMaxWait(0), o)
			for i := 1; i <= 2; i++ {
				v, err := b.Do(ctx, i)
				require.NoError(t, err)
				assert.Equal(t, i, v)
			}
			require.NoError(t, b.Close(ctx))
		}},
	}
	dies := []struct {
		name string
		die  func()
	}{
		{"panic", func() { panic("observer failed") }},
		{"Goexit", runtimeGoexit},
	}
	for _, tc := range tests {
		for _, d := range dies {
			t.Run(tc.name+"/"+d.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					o := &dyingObserver{kind: tc.kind, die: d.die}
					tc.run(t, resilience.WithObserver(o))
					synctest.Wait()
					assert.NotZero(t, o.seen.Load(), "no %v was emitted", tc.kind)
				})
			})
		}
	}
}

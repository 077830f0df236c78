package resilience_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// guardEvents records the events it observes; outcomes says whether it asks
// for EventCallEnded.
type guardEvents struct {
	mu       sync.Mutex
	events   []resilience.Event
	outcomes bool
}

func (o *guardEvents) Observe(_ context.Context, e resilience.Event) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

func (o *guardEvents) ObserveOutcomes() bool { return o.outcomes }

func (o *guardEvents) take() []resilience.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.events
	o.events = nil
	return e
}

func TestBulkheadEvents(t *testing.T) {
	ev := func(kind resilience.EventKind, err error, wait time.Duration) resilience.Event {
		return resilience.Event{Kind: kind, Component: "bulkhead", Name: "db", Err: err, Wait: wait}
	}
	full := resilience.ErrBulkheadFull
	tests := []struct {
		name    string
		opts    []resilience.BulkheadOption
		held    bool
		release time.Duration // when the holder releases; 0: never
		ctxEnds time.Duration // when the caller's context ends; 0: never
		want    []resilience.Event
	}{
		{"a free slot: nothing", nil, false, 0, 0, nil},
		{"refused at once", nil, true, 0, 0, []resilience.Event{ev(resilience.EventRefused, full, 0)}},
		{"refused: the queue is full", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Second), resilience.WithBulkheadQueue(0)}, true, 0, 0,
			[]resilience.Event{ev(resilience.EventRefused, full, 0)}},
		{"admitted after a wait", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Hour)}, true, 3 * time.Second, 0,
			[]resilience.Event{ev(resilience.EventWaitStarted, nil, 0), ev(resilience.EventWaitEnded, nil, 3*time.Second)}},
		{"the wait runs out", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Second)}, true, 0, 0,
			[]resilience.Event{ev(resilience.EventWaitStarted, nil, 0), ev(resilience.EventWaitEnded, full, time.Second), ev(resilience.EventRefused, full, 0)}},
		{"the context ends", []resilience.BulkheadOption{resilience.WithBulkheadWait(time.Hour)}, true, 0, 2 * time.Second,
			[]resilience.Event{ev(resilience.EventWaitStarted, nil, 0), ev(resilience.EventWaitEnded, context.DeadlineExceeded, 2*time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var o guardEvents
				b := resilience.NewBulkhead(1, append(tc.opts, resilience.WithObserver(&o), resilience.WithName("db"))...)
				if tc.held {
					require.True(t, b.TryAcquire())
				}
				if tc.release > 0 {
					go func() {
						time.Sleep(tc.release)
						b.Release()
					}()
				}
				ctx := context.Background()
				if tc.ctxEnds > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxEnds)
					defer cancel()
				}
				if err := b.Acquire(ctx); err == nil {
					b.Release()
				}
				assert.Equal(t, tc.want, o.take())
			})
		})
	}
}

// TestBulkheadCallEnded: a call through the bulkhead as a guard ends with
// an EventCallEnded only when the observer asks for outcomes.
func TestBulkheadCallEnded(t *testing.T) {
	errDown := errors.New("down")
	for _, outcomes := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			o := guardEvents{outcomes: outcomes}
			b := resilience.NewBulkhead(1, resilience.WithObserver(&o))
			p := resilience.Guarded[int](b)
			_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
				time.Sleep(5 * time.Millisecond)
				return 0, errDown
			})
			require.ErrorIs(t, err, errDown)
			done, err := b.Enter(context.Background())
			require.NoError(t, err)
			_, err = b.Enter(context.Background())
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			time.Sleep(time.Millisecond)
			done(nil)
			want := []resilience.Event{{Kind: resilience.EventRefused, Component: "bulkhead", Err: resilience.ErrBulkheadFull}}
			if outcomes {
				want = []resilience.Event{
					{Kind: resilience.EventCallEnded, Component: "bulkhead", Err: errDown, Duration: 5 * time.Millisecond},
					want[0],
					{Kind: resilience.EventCallEnded, Component: "bulkhead", Err: resilience.ErrBulkheadFull},
					{Kind: resilience.EventCallEnded, Component: "bulkhead", Duration: time.Millisecond},
				}
			}
			assert.Equal(t, want, o.take(), "outcomes %v", outcomes)
			assert.Zero(t, b.InUse())
		})
	}
}

// TestBulkheadObserverPanics: an observer that panics while a call waits,
// or just as it is admitted, takes the call down with it, and the call
// gives back its place in the queue or its slot on the way.
func TestBulkheadObserverPanics(t *testing.T) {
	for _, kind := range []resilience.EventKind{resilience.EventWaitStarted, resilience.EventWaitEnded} {
		t.Run(kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
					if e.Kind == kind {
						panic("observer failed")
					}
				})
				b := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Hour), resilience.WithObserver(o))
				require.True(t, b.TryAcquire())
				panicked := make(chan any, 1)
				go func() {
					defer func() { panicked <- recover() }()
					_ = b.Acquire(context.Background())
				}()
				synctest.Wait()
				b.Release()
				assert.Equal(t, "observer failed", <-panicked)
				assert.Zero(t, b.InUse(), "no slot is lost")
				assert.Zero(t, b.Waiting())
				assert.True(t, b.TryAcquire())
			})
		})
	}
}

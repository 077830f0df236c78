package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// panickyObserver panics with its value on events of one kind, once armed,
// and counts the events of that kind it saw.
type panickyObserver struct {
	kind  resilience.EventKind
	armed bool
	seen  int
}

func (o *panickyObserver) Observe(_ context.Context, e resilience.Event) {
	if e.Kind != o.kind {
		return
	}
	o.seen++
	if o.armed {
		o.armed = false
		panic("observer failed")
	}
}

// recovered runs f and returns what it panicked with, nil if nothing.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestObserverPanicGoesUp: a panic in Observe goes up through the call that
// emitted the event, and leaves the component consistent and usable. Each
// case skips while its component emits no event of the kind.
func TestObserverPanicGoesUp(t *testing.T) {
	ctx := context.Background()
	errDown := errors.New("down")
	down := func(context.Context) (int, error) { return 0, errDown }
	up := okFunc
	tests := []struct {
		name string
		kind resilience.EventKind
		// run makes the component emit the event with the observer armed,
		// then checks, with the observer disarmed, that it still works.
		run func(t *testing.T, o resilience.Option) (panicked any)
	}{
		{"retry", resilience.EventRetry, func(t *testing.T, o resilience.Option) any {
			p := resilience.Retry[int](o, resilience.WithBackoff(resilience.Constant(0)))
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"breaker", resilience.EventStateChange, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBreaker(o, resilience.WithBreakerThreshold(1))
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			assert.Equal(t, resilience.BreakerOpen, b.State(), "the breaker opened before Observe ran")
			_, err := p.Execute(ctx, up)
			assert.ErrorIs(t, err, resilience.ErrBreakerOpen)
			return r
		}},
		{"breaker refusal", resilience.EventRefused, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBreaker(o, resilience.WithClock(clock.NewMock()))
			b.Trip()
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			b.Reset()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"bulkhead wait", resilience.EventWaitStarted, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBulkhead(1, o, resilience.WithBulkheadWait(time.Hour))
			require.True(t, b.TryAcquire())
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			assert.Equal(t, 1, b.InFlight(), "the call that panicked took no slot")
			assert.Equal(t, 0, b.Waiting(), "the call that panicked left the queue")
			b.Release()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"timeout", resilience.EventTimeout, func(t *testing.T, o resilience.Option) (r any) {
			synctest.Test(t, func(t *testing.T) {
				p := resilience.Timeout[int](time.Second, o)
				r = recovered(func() {
					_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) {
						<-ctx.Done()
						return 0, ctx.Err()
					})
				})
				v, err := p.Execute(ctx, up)
				assert.Equal(t, 1, v)
				assert.NoError(t, err)
			})
			return r
		}},
		{"fallback", resilience.EventFallback, func(t *testing.T, o resilience.Option) any {
			calls := 0
			p := resilience.Fallback(func(context.Context, error) (int, error) { calls++; return 2, nil }, o)
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			assert.Zero(t, calls, "the fallback ran after Observe panicked")
			v, err := p.Execute(ctx, down)
			assert.Equal(t, 2, v)
			assert.NoError(t, err)
			return r
		}},
		{"hedge", resilience.EventHedge, func(t *testing.T, o resilience.Option) (r any) {
			// A delay of 0 starts the hedges in the caller's goroutine.
			synctest.Test(t, func(t *testing.T) {
				p := resilience.Hedge[int](o, resilience.WithHedgeDelay(0))
				var cancelled atomic.Int32
				r = recovered(func() {
					_, _ = p.Execute(ctx, func(ctx context.Context) (int, error) {
						<-ctx.Done()
						cancelled.Add(1)
						return 0, ctx.Err()
					})
				})
				synctest.Wait()
				assert.Equal(t, int32(1), cancelled.Load(), "the hedge started before the panic was cancelled")
				v, err := p.Execute(ctx, up)
				assert.Equal(t, 1, v)
				assert.NoError(t, err)
			})
			return r
		}},
		{"bulkhead", resilience.EventRefused, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBulkhead(1, o)
			require.True(t, b.TryAcquire())
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			assert.Equal(t, 1, b.InFlight(), "the refused call took no slot")
			assert.Equal(t, 0, b.Waiting(), "the refused call left no waiter")
			b.Release()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			assert.Equal(t, 0, b.InFlight())
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := &panickyObserver{kind: tc.kind, armed: true}
			r := tc.run(t, resilience.WithObserver(obs))
			if obs.seen == 0 {
				t.Skipf("%s emits no %v yet", tc.name, tc.kind)
			}
			assert.Equal(t, "observer failed", r, "the observer's panic did not go up through the call")
		})
	}
}

type callKey struct{}

// labelled returns each event rec kept, as its kind with the call label
// its context carries ("-" for none).
func labelled(rec *recorder) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []string
	for i, e := range rec.events {
		label, ok := rec.ctxs[i].Value(callKey{}).(string)
		if !ok {
			label = "-"
		}
		s := e.Kind.String() + " " + label
		if e.Kind == resilience.EventStateChange {
			s = fmt.Sprintf("%s %v>%v %s", e.Kind, e.From, e.To, label)
		}
		got = append(got, s)
	}
	return got
}

// TestGuardEventsCarryTheCallersContext: a guard's events carry the
// context of the call they belong to, through Guarded and through Enter:
// the end of a call, and a breaker's change of state, with the call that
// made it (a method such as Trip has none).
func TestGuardEventsCarryTheCallersContext(t *testing.T) {
	errDown := errors.New("down")
	call := func(label string) context.Context {
		return context.WithValue(context.Background(), callKey{}, label)
	}
	// enter runs a call through g's Enter.
	enter := func(g resilience.Guard, ctx context.Context, err error) {
		done, e := g.Enter(ctx)
		if e == nil {
			done(err)
		}
	}
	guarded := func(g resilience.Guard, ctx context.Context, err error) {
		_, _ = resilience.Guarded[int](g).Execute(ctx, func(context.Context) (int, error) { return 0, err })
	}
	for name, through := range map[string]func(resilience.Guard, context.Context, error){"Guarded": guarded, "Enter": enter} {
		t.Run(name+"/breaker", func(t *testing.T) {
			o := &recorder{outcomes: true}
			clk := clock.NewMock()
			b := resilience.NewBreaker(resilience.WithObserver(o), resilience.WithClock(clk),
				resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second))
			through(b, call("a"), nil)
			through(b, call("b"), errDown) // trips
			through(b, call("c"), nil)     // refused
			clk.Add(time.Second)
			through(b, call("d"), nil) // half-opens, probes, closes
			b.Trip()
			assert.Equal(t, []string{
				"call-ended a",
				"state-change closed>open b",
				"call-ended b",
				"refused c",
				"state-change open>half-open d",
				"state-change half-open>closed d",
				"call-ended d",
				"state-change closed>open -",
			}, labelled(o))
		})
		t.Run(name+"/bulkhead", func(t *testing.T) {
			o := &recorder{outcomes: true}
			b := resilience.NewBulkhead(1, resilience.WithObserver(o))
			through(b, call("a"), nil)
			through(b, call("b"), errDown)
			assert.True(t, b.TryAcquire())
			through(b, call("c"), nil) // refused
			b.Release()
			assert.Equal(t, []string{"call-ended a", "call-ended b", "refused c", "call-ended c"}, labelled(o))
		})
	}
}

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
			v, err := p.Execute(ctx, okFunc)
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

// TestEventKindString: every EventKind has a String: the kind's name, one
// for each kind, or "EventKind(n)" for a value that is no kind, up to the
// largest.
func TestEventKindString(t *testing.T) {
	names := map[string]resilience.EventKind{}
	for k := range resilience.EventKind(255) {
		s := k.String()
		if s == fmt.Sprintf("EventKind(%d)", k) {
			continue
		}
		if other, ok := names[s]; ok {
			t.Errorf("EventKind(%d) and EventKind(%d) are both %q", other, k, s)
		}
		names[s] = k
	}
	assert.Equal(t, "EventKind(255)", resilience.EventKind(255).String())
	assert.Equal(t, "EventKind(0)", resilience.EventKind(0).String())
	assert.Equal(t, resilience.EventAttemptFailed, names[resilience.EventAttemptFailed.String()])
	assert.Equal(t, resilience.EventChaos, names["chaos"])
}

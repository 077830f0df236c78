package resilience_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// timeoutModes are the two ways a Timeout runs fn.
var timeoutModes = []struct {
	name string
	opts []resilience.TimeoutOption
}{
	{"default", nil},
	{"cooperative", []resilience.TimeoutOption{resilience.WithTimeoutCooperative()}},
}

// timeoutRecorder is an observer that keeps every event, and a discard hook that
// keeps every discarded result.
type timeoutRecorder struct {
	mu        sync.Mutex
	events    []resilience.Event
	discarded []int
	outcomes  bool
}

func (r *timeoutRecorder) Observe(_ context.Context, e resilience.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *timeoutRecorder) ObserveOutcomes() bool { return r.outcomes }

func (r *timeoutRecorder) discard(v int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discarded = append(r.discarded, v)
}

// kinds returns how many events of each kind arrived.
func (r *timeoutRecorder) kinds() map[resilience.EventKind]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[resilience.EventKind]int{}
	for _, e := range r.events {
		n[e.Kind]++
	}
	return n
}

func (r *timeoutRecorder) opts(mode []resilience.TimeoutOption) []resilience.TimeoutOption {
	return append([]resilience.TimeoutOption{
		resilience.WithObserver(r), resilience.WithDiscard(r.discard), resilience.WithName("t"),
	}, mode...)
}

// TestTimeoutDeadlineDecides: a fn that notices its context ended and
// returns a result at once used to win the race with the caller in the
// default mode about half the time, and came back as a success after the
// deadline. The deadline passed first: the outcome is ErrTimeout in both
// timeoutModes, and each late result goes to the discard hook exactly once.
func TestTimeoutDeadlineDecides(t *testing.T) {
	const calls = 100
	for _, mode := range timeoutModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec timeoutRecorder
				p := resilience.Timeout[int](time.Second, rec.opts(mode.opts)...)
				for i := 1; i <= calls; i++ {
					got, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
						<-ctx.Done()
						return i, nil // noticed at once, and answered
					})
					require.ErrorIs(t, err, resilience.ErrTimeout, "call %d: Execute = %d, %v", i, got, err)
					require.Zero(t, got)
				}
				synctest.Wait() // the late fns have handed over their results
				want := make([]int, calls)
				for i := range want {
					want[i] = i + 1
				}
				assert.ElementsMatch(t, want, rec.discarded, "each late result is discarded exactly once")
				n := rec.kinds()
				assert.Equal(t, calls, n[resilience.EventTimeout])
				assert.Equal(t, calls, n[resilience.EventDiscarded])
			})
		})
	}
}

// TestTimeoutParentEndsFirst: on the worker pool (outside any bubble), a
// fn that answers once its context ended gives the caller's error, and its
// result goes to the discard hook. No real time passes: the parent is
// cancelled while fn waits.
func TestTimeoutParentEndsFirst(t *testing.T) {
	for _, mode := range timeoutModes {
		t.Run(mode.name, func(t *testing.T) {
			var rec timeoutRecorder
			p := resilience.Timeout[int](time.Hour, rec.opts(mode.opts)...)
			for i := 1; i <= 50; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				got, err := p.Execute(ctx, func(fctx context.Context) (int, error) {
					cancel()
					<-fctx.Done()
					return i, nil
				})
				require.ErrorIs(t, err, context.Canceled)
				require.NotErrorIs(t, err, resilience.ErrTimeout)
				require.Zero(t, got)
			}
			require.Eventually(t, func() bool {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				return len(rec.discarded) == 50
			}, 10*time.Second, time.Millisecond, "a late result was not discarded")
			assert.Zero(t, rec.kinds()[resilience.EventTimeout], "the caller's cancellation is no timeout")
		})
	}
}

// TestTimeoutLateError: an error after the deadline is a timeout too; in
// the cooperative mode fn's own error stays reachable.
func TestTimeoutLateError(t *testing.T) {
	errLate := errors.New("late")
	for _, mode := range timeoutModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec timeoutRecorder
				p := resilience.Timeout[int](time.Second, rec.opts(mode.opts)...)
				_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					<-ctx.Done()
					return 7, errLate
				})
				require.ErrorIs(t, err, resilience.ErrTimeout)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				if mode.opts != nil {
					require.ErrorIs(t, err, errLate)
				}
				synctest.Wait()
				assert.Empty(t, rec.discarded, "a result that came with an error is not discarded")
				assert.Equal(t, 1, rec.kinds()[resilience.EventTimeout])
			})
		})
	}
}

// TestTimeoutEvents: what an observer receives for a call that succeeds,
// one that times out, and with or without per-call outcomes.
func TestTimeoutEvents(t *testing.T) {
	tests := []struct {
		name     string
		outcomes bool
		slow     bool
		want     map[resilience.EventKind]int
	}{
		{"success, events only", false, false, map[resilience.EventKind]int{}},
		{"success, outcomes", true, false, map[resilience.EventKind]int{resilience.EventCallEnded: 1}},
		{"timeout, events only", false, true, map[resilience.EventKind]int{resilience.EventTimeout: 1, resilience.EventDiscarded: 1}},
		{"timeout, outcomes", true, true, map[resilience.EventKind]int{
			resilience.EventTimeout: 1, resilience.EventDiscarded: 1, resilience.EventCallEnded: 1}},
	}
	for _, mode := range timeoutModes {
		for _, tc := range tests {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rec := timeoutRecorder{outcomes: tc.outcomes}
					p := resilience.Timeout[int](time.Second, rec.opts(mode.opts)...)
					_, _ = p.Execute(context.Background(), func(context.Context) (int, error) {
						if tc.slow {
							time.Sleep(2 * time.Second)
						}
						return 1, nil
					})
					synctest.Wait()
					time.Sleep(2 * time.Second) // fake time: a late fn returns
					synctest.Wait()
					assert.Equal(t, tc.want, rec.kinds())
					for _, e := range rec.events {
						assert.Equal(t, "timeout", e.Component)
						assert.Equal(t, "t", e.Name)
						switch e.Kind {
						case resilience.EventTimeout:
							assert.Equal(t, time.Second, e.Wait)
						case resilience.EventCallEnded:
							if tc.slow {
								assert.ErrorIs(t, e.Err, resilience.ErrTimeout)
							} else {
								assert.NoError(t, e.Err)
							}
						}
					}
				})
			})
		}
	}
}

// expiredClock is a clock on which every deadline has passed already, so
// that a Timeout times out at once and deterministically.
type expiredClock struct{}

func (expiredClock) Now() time.Time { return time.Unix(0, 0) }
func (expiredClock) WithDeadline(parent context.Context, _ time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, time.Unix(0, 0))
}

// TestTimeoutEventsAllocateNothing: observing a Timeout adds no
// allocation, for a timeout event and for per-call outcomes.
func TestTimeoutEventsAllocateNothing(t *testing.T) {
	ctx := context.Background()
	var seen atomic.Int64
	obs := resilience.ObserverFunc(func(context.Context, resilience.Event) { seen.Add(1) })
	outcomes := &outcomeObserver{ObserverFunc: obs}
	fn := func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }
	for _, mode := range timeoutModes {
		for _, o := range []resilience.Observer{obs, outcomes} {
			bare := resilience.Timeout[int](time.Hour, append([]resilience.TimeoutOption{resilience.WithClock(expiredClock{})}, mode.opts...)...)
			watched := resilience.Timeout[int](time.Hour, append([]resilience.TimeoutOption{resilience.WithClock(expiredClock{}), resilience.WithObserver(o)}, mode.opts...)...)
			run := func(p resilience.Policy[int]) float64 {
				return testing.AllocsPerRun(200, func() {
					if _, err := p.Execute(ctx, fn); !errors.Is(err, resilience.ErrTimeout) {
						t.Fatalf("Execute = %v, want ErrTimeout", err)
					}
				})
			}
			base := seen.Load()
			a, b := run(bare), run(watched)
			if raceEnabled {
				// Under the race detector sync.Pool drops items at random, so
				// either run may miss its pool once in a while.
				assert.InDelta(t, a, b, 1, "%s, %T: observed call allocates %v, unobserved %v", mode.name, o, b, a)
			} else {
				assert.Equal(t, a, b, "%s, %T: observed call allocates %v, unobserved %v", mode.name, o, b, a)
			}
			assert.Greater(t, seen.Load(), base, "no event seen")
		}
	}
}

type outcomeObserver struct{ resilience.ObserverFunc }

func (*outcomeObserver) ObserveOutcomes() bool { return true }

// TestNilFn: every policy's Execute refuses a nil fn with the panic Do
// gives, naming the policy.
func TestNilFn(t *testing.T) {
	ctx := context.Background()
	pf := resilience.PolicyFunc[int](func(ctx context.Context, fn resilience.Func[int]) (int, error) { return fn(ctx) })
	tests := []struct {
		name string
		p    resilience.Policy[int]
		want string
	}{
		{"Timeout", resilience.Timeout[int](time.Second), "resilience: Timeout: fn is nil"},
		{"Timeout cooperative", resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative()), "resilience: Timeout: fn is nil"},
		{"Timeout of zero", resilience.Timeout[int](0), "resilience: Timeout: fn is nil"},
		{"Guarded", resilience.Guarded[int](resilience.NewBulkhead(1)), "resilience: Guarded: fn is nil"},
		{"Guarded own guard", resilience.Guarded[int](&countingGuard{}), "resilience: Guarded: fn is nil"},
		{"Compose", resilience.Compose(resilience.Timeout[int](time.Second), pf), "resilience: Compose: fn is nil"},
		{"Compose of none", resilience.Compose[int](), "resilience: Compose: fn is nil"},
		{"PolicyFunc", pf, "resilience: PolicyFunc: fn is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, func() { _, _ = tc.p.Execute(ctx, nil) })
		})
	}
}

// TestDiscardHookPanicsWithoutACaller: a discard hook that panics in a
// goroutine no caller waits for is reported as a late panic, and does not
// end the program.
func TestDiscardHookPanicsWithoutACaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var late atomic.Pointer[resilience.PanicError]
		obs := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
			if e.Kind == resilience.EventLatePanic {
				late.Store(e.Panic)
			}
		})
		p := resilience.Timeout[int](time.Second, resilience.WithObserver(obs),
			resilience.WithDiscard(func(int) { panic("hook broke") }))
		_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(2 * time.Second)
			return 1, nil
		})
		require.ErrorIs(t, err, resilience.ErrTimeout)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.NotNil(t, late.Load())
		assert.Equal(t, "hook broke", late.Load().Value)
	})
}

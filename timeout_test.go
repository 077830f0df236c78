package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// sleeper returns a fn that takes d, honouring ctx only if polite.
func sleeper(d time.Duration, polite bool, v int, err error) resilience.Func[int] {
	return func(ctx context.Context) (int, error) {
		if !polite {
			time.Sleep(d)
			return v, err
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return v, err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func TestTimeout(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name        string
		d           time.Duration
		opts        []resilience.TimeoutOption
		fn          resilience.Func[int]
		parent      time.Duration // a deadline on the caller's ctx; 0 for none
		want        int
		wantErr     []error // each must match with errors.Is
		notErr      []error // none may match
		wantElapsed time.Duration
	}{
		{
			name: "fast fn returns its result", d: 50 * time.Millisecond,
			fn: sleeper(10*time.Millisecond, false, 7, nil), want: 7, wantElapsed: 10 * time.Millisecond,
		},
		{
			name: "fast fn returns its error", d: 50 * time.Millisecond,
			fn: sleeper(10*time.Millisecond, false, 0, errBoom), wantErr: []error{errBoom},
			notErr: []error{resilience.ErrTimeout}, wantElapsed: 10 * time.Millisecond,
		},
		{
			name: "fn ignoring ctx is abandoned at the deadline", d: 20 * time.Millisecond,
			fn:      sleeper(200*time.Millisecond, false, 1, nil),
			wantErr: []error{resilience.ErrTimeout, context.DeadlineExceeded}, wantElapsed: 20 * time.Millisecond,
		},
		{
			name: "polite fn ends at the deadline", d: 20 * time.Millisecond,
			fn:      sleeper(200*time.Millisecond, true, 1, nil),
			wantErr: []error{resilience.ErrTimeout, context.DeadlineExceeded}, wantElapsed: 20 * time.Millisecond,
		},
		{
			name: "parent deadline first gives the parent's error", d: 50 * time.Millisecond, parent: 10 * time.Millisecond,
			fn:      sleeper(200*time.Millisecond, false, 1, nil),
			wantErr: []error{context.DeadlineExceeded}, notErr: []error{resilience.ErrTimeout},
			wantElapsed: 10 * time.Millisecond,
		},
		{
			name: "cooperative: fast fn", d: 50 * time.Millisecond, opts: []resilience.TimeoutOption{resilience.WithTimeoutCooperative()},
			fn: sleeper(10*time.Millisecond, true, 3, nil), want: 3, wantElapsed: 10 * time.Millisecond,
		},
		{
			name: "cooperative: polite fn's error is a timeout", d: 20 * time.Millisecond,
			opts:    []resilience.TimeoutOption{resilience.WithTimeoutCooperative()},
			fn:      sleeper(200*time.Millisecond, true, 1, nil),
			wantErr: []error{resilience.ErrTimeout, context.DeadlineExceeded}, wantElapsed: 20 * time.Millisecond,
		},
		{
			name: "cooperative: fn ignoring ctx holds the caller, and its late result is a timeout", d: 20 * time.Millisecond,
			opts:    []resilience.TimeoutOption{resilience.WithTimeoutCooperative()},
			fn:      sleeper(200*time.Millisecond, false, 5, nil),
			wantErr: []error{resilience.ErrTimeout, context.DeadlineExceeded}, wantElapsed: 200 * time.Millisecond,
		},
		{
			name: "cooperative: late error keeps fn's error", d: 20 * time.Millisecond,
			opts:    []resilience.TimeoutOption{resilience.WithTimeoutCooperative()},
			fn:      sleeper(200*time.Millisecond, false, 0, io.ErrUnexpectedEOF),
			wantErr: []error{resilience.ErrTimeout, io.ErrUnexpectedEOF}, wantElapsed: 200 * time.Millisecond,
		},
		{
			name: "cooperative: parent deadline first", d: 50 * time.Millisecond, parent: 10 * time.Millisecond,
			opts:    []resilience.TimeoutOption{resilience.WithTimeoutCooperative()},
			fn:      sleeper(200*time.Millisecond, true, 1, nil),
			wantErr: []error{context.DeadlineExceeded}, notErr: []error{resilience.ErrTimeout},
			wantElapsed: 10 * time.Millisecond,
		},
		{
			name: "zero duration calls fn directly", d: 0,
			fn: sleeper(time.Hour, false, 9, nil), want: 9, wantElapsed: time.Hour,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tc.parent > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.parent)
					defer cancel()
				}
				p := resilience.Timeout[int](tc.d, tc.opts...)
				var running sync.WaitGroup
				running.Add(1)
				fn := func(ctx context.Context) (int, error) {
					defer running.Done()
					return tc.fn(ctx)
				}
				start := time.Now()
				got, err := resilience.Do(ctx, p, fn)
				elapsed := time.Since(start)
				for _, want := range tc.wantErr {
					assert.ErrorIs(t, err, want)
				}
				for _, not := range tc.notErr {
					assert.NotErrorIs(t, err, not)
				}
				if len(tc.wantErr) == 0 {
					require.NoError(t, err)
					assert.Equal(t, tc.want, got)
				}
				assert.Equal(t, tc.wantElapsed, elapsed, "Do returned after %v, want %v", elapsed, tc.wantElapsed)
				// An abandoned fn finishes in its own time, and then
				// nothing is left: synctest.Test fails otherwise.
				running.Wait()
			})
		})
	}
}

// TestTimeoutContextGivenToFn checks the deadline and the cause fn sees.
func TestTimeoutContextGivenToFn(t *testing.T) {
	for _, coop := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "cooperative"}[coop]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opts []resilience.TimeoutOption
				if coop {
					opts = append(opts, resilience.WithTimeoutCooperative())
				}
				p := resilience.Timeout[int](time.Second, opts...)
				start := time.Now()
				var deadline time.Time
				var hasDeadline bool
				var cause, ctxErr error
				_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					deadline, hasDeadline = ctx.Deadline()
					<-ctx.Done()
					ctxErr, cause = ctx.Err(), context.Cause(ctx)
					return 0, ctx.Err()
				})
				require.ErrorIs(t, err, resilience.ErrTimeout)
				synctest.Wait() // let an abandoned fn record what it saw
				require.True(t, hasDeadline)
				assert.Equal(t, start.Add(time.Second), deadline)
				assert.Equal(t, context.DeadlineExceeded, ctxErr)
				assert.Equal(t, resilience.ErrTimeout, cause)
			})
		})
	}
}

// TestTimeoutMockClock drives the deadline from an injected clock.Mock.
func TestTimeoutMockClock(t *testing.T) {
	for _, coop := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "cooperative"}[coop]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mock := clock.NewMock()
				opts := []resilience.TimeoutOption{resilience.WithClock(mock)}
				if coop {
					opts = append(opts, resilience.WithTimeoutCooperative())
				}
				p := resilience.Timeout[int](time.Minute, opts...)
				var fnDeadline time.Time
				errc := make(chan error, 1)
				go func() {
					_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
						fnDeadline, _ = ctx.Deadline()
						<-ctx.Done()
						return 0, ctx.Err()
					})
					errc <- err
				}()
				synctest.Wait()
				select {
				case err := <-errc:
					t.Fatalf("Execute returned %v before the mock clock moved", err)
				default:
				}
				assert.Equal(t, mock.Now().Add(time.Minute), fnDeadline)
				mock.Add(time.Minute)
				err := <-errc
				assert.ErrorIs(t, err, resilience.ErrTimeout)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			})
		})
	}
}

func TestTimeoutParentCancelled(t *testing.T) {
	for _, coop := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "cooperative"}[coop]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opts []resilience.TimeoutOption
				if coop {
					opts = append(opts, resilience.WithTimeoutCooperative())
				}
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(5*time.Millisecond, cancel)
				_, err := resilience.Do(ctx, resilience.Timeout[int](time.Second, opts...), sleeper(time.Minute, true, 1, nil))
				assert.ErrorIs(t, err, context.Canceled)
				assert.NotErrorIs(t, err, resilience.ErrTimeout)
			})
		})
	}
}

func TestTimeoutPanic(t *testing.T) {
	for _, coop := range []bool{false, true} {
		name := map[bool]string{false: "default", true: "cooperative"}[coop]
		t.Run(name, func(t *testing.T) {
			var opts []resilience.TimeoutOption
			if coop {
				opts = append(opts, resilience.WithTimeoutCooperative())
			}
			p := resilience.Timeout[int](time.Hour, opts...)
			value := errors.New("fn panicked")
			defer func() {
				assert.Equal(t, value, recover(), "the panic reaches the caller with its value")
			}()
			_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { panic(value) })
			t.Fatal("Execute returned after fn panicked")
		})
	}
}

// TestTimeoutLatePanic checks that a panic after the deadline, with no
// caller left, goes to the observer and nowhere else.
func TestTimeoutLatePanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{only: resilience.EventLatePanic}
		p := resilience.Timeout[int](10*time.Millisecond, resilience.WithObserver(obs))
		_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(time.Second)
			panic("too late")
		})
		require.ErrorIs(t, err, resilience.ErrTimeout)
		time.Sleep(time.Second) // fake time: fn panics now
		synctest.Wait()
		late := obs.take()
		require.Len(t, late, 1, "EventLatePanic")
		pe := late[0].Panic
		assert.Equal(t, "too late", pe.Value)
		assert.Contains(t, string(pe.Stack), "TestTimeoutLatePanic")
	})
}

// TestTimeoutLatePanicWithoutHandler: a late panic must not crash the process.
func TestTimeoutLatePanicWithoutHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := resilience.Timeout[int](10 * time.Millisecond)
		_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(time.Second)
			panic("nobody listens")
		})
		require.ErrorIs(t, err, resilience.ErrTimeout)
		time.Sleep(2 * time.Second) // fake time: fn panics, unheard
		synctest.Wait()
	})
}

func TestTimeoutBadOptions(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative duration", func() { resilience.Timeout[int](-time.Second) }, "resilience: Timeout: duration must not be negative, got -1s"},
		{"nil option", func() { resilience.Timeout[int](time.Second, nil) }, "resilience: Timeout: option is nil"},
		{"nil clock", func() { resilience.WithClock(nil) }, "resilience: WithClock: clock is nil"},
		{"nil discard hook", func() { resilience.WithDiscard[int](nil) }, "resilience: WithDiscard: hook is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestTimeoutReuse runs many calls through one policy, some abandoned, to
// exercise the reuse of per-call state under the race detector.
func TestTimeoutReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := resilience.Timeout[int](5 * time.Millisecond)
		for i := range 200 {
			d := time.Duration(i%10) * time.Millisecond
			got, err := p.Execute(context.Background(), sleeper(d, false, i, nil))
			switch {
			case d < 5*time.Millisecond:
				require.NoError(t, err)
				require.Equal(t, i, got)
			case d > 5*time.Millisecond:
				require.ErrorIs(t, err, resilience.ErrTimeout)
			default: // fn returns at the deadline: either outcome, whole
				if err == nil {
					require.Equal(t, i, got)
				} else {
					require.ErrorIs(t, err, resilience.ErrTimeout)
					require.Zero(t, got)
				}
			}
		}
		time.Sleep(time.Second) // fake time: the abandoned calls finish
		synctest.Wait()
	})
}

// BenchmarkTimeout measures the policy's two modes; the floors and the
// peers stand beside them in the benchmarks module.
func BenchmarkTimeout(b *testing.B) {
	ctx := context.Background()
	b.Run("cooperative", func(b *testing.B) {
		p := resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative())
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("default", func(b *testing.B) {
		p := resilience.Timeout[int](time.Second)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
}

// timeoutOpts returns the options of a Timeout in mode that reports to r.
func timeoutOpts(r *recorder, mode []resilience.TimeoutOption) []resilience.TimeoutOption {
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
				var rec recorder
				p := resilience.Timeout[int](time.Second, timeoutOpts(&rec, mode.opts)...)
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
			var rec recorder
			p := resilience.Timeout[int](time.Hour, timeoutOpts(&rec, mode.opts)...)
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
				var rec recorder
				p := resilience.Timeout[int](time.Second, timeoutOpts(&rec, mode.opts)...)
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
					rec := recorder{outcomes: tc.outcomes}
					p := resilience.Timeout[int](time.Second, timeoutOpts(&rec, mode.opts)...)
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

// TestTimeoutEventsAllocateNothing: observing a Timeout adds no
// allocation, for a timeout event and for per-call outcomes.
func TestTimeoutEventsAllocateNothing(t *testing.T) {
	ctx := context.Background()
	events, outcomes := &counter{}, &counter{Outcomes: true}
	fn := func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }
	clk := newManualClock()
	clk.Waits = resilience.WaitsOver // the Timeout times out at once, deterministically
	for _, mode := range timeoutModes {
		for _, o := range []*counter{events, outcomes} {
			bare := resilience.Timeout[int](time.Hour, append([]resilience.TimeoutOption{resilience.WithClock(clk)}, mode.opts...)...)
			watched := resilience.Timeout[int](time.Hour, append([]resilience.TimeoutOption{resilience.WithClock(clk), resilience.WithObserver(o)}, mode.opts...)...)
			run := func(p resilience.Policy[int]) float64 {
				return testing.AllocsPerRun(200, func() {
					if _, err := p.Execute(ctx, fn); !errors.Is(err, resilience.ErrTimeout) {
						t.Fatalf("Execute = %v, want ErrTimeout", err)
					}
				})
			}
			base := o.Total()
			a, b := run(bare), run(watched)
			if raceEnabled {
				// Under the race detector sync.Pool drops items at random, so
				// either run may miss its pool once in a while.
				assert.InDelta(t, a, b, 1, "%s, outcomes %v: observed call allocates %v, unobserved %v", mode.name, o.Outcomes, b, a)
			} else {
				assert.Equal(t, a, b, "%s, outcomes %v: observed call allocates %v, unobserved %v", mode.name, o.Outcomes, b, a)
			}
			assert.Greater(t, o.Total(), base, "no event seen")
		}
	}
}

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
		obs := &recorder{only: resilience.EventLatePanic}
		p := resilience.Timeout[int](time.Second, resilience.WithObserver(obs),
			resilience.WithDiscard(func(int) { panic("hook broke") }))
		_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(2 * time.Second)
			return 1, nil
		})
		require.ErrorIs(t, err, resilience.ErrTimeout)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		late := obs.take()
		require.Len(t, late, 1, "EventLatePanic")
		assert.Equal(t, "hook broke", late[0].Panic.Value)
	})
}

// clientCall does what a network client does with the context it is given:
// it derives a context of its own for the request and checks it.
func clientCall(ctx context.Context) (int, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := cctx.Err(); err != nil {
		return 0, err
	}
	return 1, nil
}

// realistic is the usual composition: Timeout, Retry, a breaker and a
// bulkhead.
func realistic(opts ...resilience.TimeoutOption) resilience.Policy[int] {
	return resilience.Compose(
		resilience.Timeout[int](time.Second, opts...),
		resilience.Retry[int](),
		resilience.Guarded[int](resilience.NewBreaker()),
		resilience.Guarded[int](resilience.NewBulkhead(64)),
	)
}

// BenchmarkTimeoutRealistic measures a timeout in the setting it lives in:
// "background" is a background context and a call that ignores its
// context; "request" is a server request's cancelable context and a call
// that derives a context of its own, as every network client does. Each
// runs through the timeout alone, beside context.WithTimeout, and through
// the usual composition, serially and in parallel.
func BenchmarkTimeoutRealistic(b *testing.B) {
	cases := []struct {
		name string
		fn   resilience.Func[int]
	}{
		{"background", okFunc},
		{"request", clientCall},
	}
	for _, c := range cases {
		parent := func() (context.Context, context.CancelFunc) {
			if c.name == "background" {
				return context.Background(), func() {}
			}
			return context.WithCancel(context.Background())
		}
		b.Run(c.name+"/context.WithTimeout", func(b *testing.B) {
			ctx, cancel := parent()
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				tctx, cancel := context.WithTimeout(ctx, time.Second)
				_, _ = c.fn(tctx)
				cancel()
			}
		})
		for _, mode := range []struct {
			name string
			opts []resilience.TimeoutOption
		}{{"default", nil}, {"cooperative", []resilience.TimeoutOption{resilience.WithTimeoutCooperative()}}} {
			alone := resilience.Timeout[int](time.Second, mode.opts...)
			composed := realistic(mode.opts...)
			for _, p := range []struct {
				name string
				p    resilience.Policy[int]
			}{{"timeout", alone}, {"composed", composed}} {
				b.Run(c.name+"/"+p.name+"/"+mode.name, func(b *testing.B) {
					ctx, cancel := parent()
					defer cancel()
					b.ReportAllocs()
					for b.Loop() {
						_, _ = p.p.Execute(ctx, c.fn)
					}
				})
			}
			b.Run(c.name+"/composed-parallel/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx, cancel := parent()
					defer cancel()
					for pb.Next() {
						_, _ = composed.Execute(ctx, c.fn)
					}
				})
			})
		}
	}
}

// TestPoliciesCrossBubbles: one policy used outside a testing/synctest
// bubble, inside one, and outside again, as a policy shared by a package's
// synctest tests and its ordinary tests is. Nothing made inside the bubble
// may reach a caller outside it: the runtime would end the process.
func TestPoliciesCrossBubbles(t *testing.T) {
	policies := []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"Timeout", resilience.Timeout[int](time.Second)},
		{"Timeout cooperative", resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative())},
		{"Timeout short", resilience.Timeout[int](time.Millisecond)},
		{"Hedge under a millisecond", resilience.Hedge[int](resilience.WithHedgeDelay(100 * time.Microsecond))},
		{"Hedge at once", resilience.Hedge[int](resilience.WithHedgeDelay(0))},
		{"Hedge learned", resilience.Hedge[int]()},
		{"Compose", resilience.Compose(resilience.Hedge[int](resilience.WithHedgeDelay(50*time.Microsecond)),
			resilience.Timeout[int](time.Second), resilience.Retry[int]())},
	}
	quick := okFunc
	// slow outlasts a hedge's delay and the short Timeout, so that timers
	// fire and hedges start.
	slow := func(ctx context.Context) (int, error) {
		select {
		case <-time.After(2 * time.Millisecond):
			return 2, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			use := func() {
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for range 4 {
							_, _ = pc.p.Execute(context.Background(), quick)
							_, _ = pc.p.Execute(context.Background(), slow)
						}
					})
				}
				wg.Wait()
			}
			inBubble := func() {
				synctest.Test(t, func(t *testing.T) {
					use()
					time.Sleep(time.Second) // fake time: every late attempt ends
					synctest.Wait()
				})
			}
			inBubble() // first, so that the policy's first objects are made there
			use()
			inBubble()
			use()
		})
	}
}

// TestTimeoutParentEndsWithAnError: when the caller's context ends first,
// the caller gets its context's error in both modes, also when fn then
// returns an error of its own.
func TestTimeoutParentEndsWithAnError(t *testing.T) {
	errOwn := errors.New("fn's own")
	for _, mode := range timeoutModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := resilience.Timeout[int](time.Hour, mode.opts...)
				ctx, cancel := context.WithCancel(context.Background())
				_, err := p.Execute(ctx, func(fctx context.Context) (int, error) {
					cancel()
					<-fctx.Done()
					return 0, errOwn
				})
				if !errors.Is(err, context.Canceled) || errors.Is(err, errOwn) || errors.Is(err, resilience.ErrTimeout) {
					t.Errorf("Execute = %v, want the caller's context.Canceled alone", err)
				}
				synctest.Wait()
			})
		})
	}
}

// TestTimeoutCauseSettles: once Execute returned, the error and the cause
// of fn's context never change, whatever later happens to the caller's.
func TestTimeoutCauseSettles(t *testing.T) {
	errLater := errors.New("the caller's later cause")
	for _, mode := range timeoutModes {
		for _, tc := range []struct {
			name      string
			fn        func(ctx context.Context) (int, error)
			wantErr   error
			wantCause error
		}{
			{"answered", okFunc, context.Canceled, context.Canceled},
			{"timed out", func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() },
				context.DeadlineExceeded, resilience.ErrTimeout},
		} {
			check := func(t *testing.T) {
				p := resilience.Timeout[int](time.Second, mode.opts...)
				parent, cancel := context.WithCancelCause(context.Background())
				got := make(chan context.Context, 1)
				_, _ = p.Execute(parent, func(ctx context.Context) (int, error) {
					got <- ctx
					return tc.fn(ctx)
				})
				fctx := <-got
				cancel(errLater)
				if err, cause := fctx.Err(), context.Cause(fctx); err != tc.wantErr || cause != tc.wantCause {
					t.Errorf("after the caller's cancellation: Err %v, Cause %v; want %v, %v", err, cause, tc.wantErr, tc.wantCause)
				}
			}
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				if tc.wantErr == context.Canceled {
					check(t) // no wait: on the real clock
					return
				}
				synctest.Test(t, check)
			})
		}
	}
}

// TestTimeoutLeavesNoGoroutine: a user's leak check with goleak's default
// options, right after calls through default-mode Timeouts have returned
// and their fns have finished, passes: the pool's workers exit on their
// own, soon enough.
func TestTimeoutLeavesNoGoroutine(t *testing.T) {
	p := resilience.Timeout[int](time.Second)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if _, err := p.Execute(context.Background(), okFunc); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	goleak.VerifyNone(t)
}

// TestTimeoutProfilerLabels: fn runs with the profiler labels of the
// caller's context, on a parked worker as on a new goroutine, so that a
// CPU profile charges its work to the request.
func TestTimeoutProfilerLabels(t *testing.T) {
	p := resilience.Timeout[int](time.Minute)
	for _, request := range []string{"r1", "r2", "r3"} {
		ctx := pprof.WithLabels(context.Background(), pprof.Labels("request", request))
		release := make(chan struct{})
		profile := make(chan string, 1)
		go func() {
			// fn waits in labelledWait until the profile is taken.
			for {
				var buf bytes.Buffer
				_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
				if s := buf.String(); strings.Contains(s, "labelledWait") {
					profile <- s
					close(release)
					return
				}
			}
		}()
		if _, err := p.Execute(ctx, func(context.Context) (int, error) { labelledWait(release); return 1, nil }); err != nil {
			t.Fatal(err)
		}
		var record string
		for r := range strings.SplitSeq(<-profile, "\n\n") {
			if strings.Contains(r, "labelledWait") {
				record = r
			}
		}
		require.Contains(t, record, `# labels: {"request":"`+request+`"}`, "fn's goroutine in the profile:\n%s", record)
	}
}

//go:noinline
func labelledWait(release chan struct{}) { <-release }

// TestTimeoutErrorAtTheDeadline: an error fn returns once the deadline has
// passed, before the context's timer has ended the context (a client that
// checks deadlines itself, as gRPC does), is a timeout, with fn's error
// kept reachable. On a clock whose timers never fire, so that the context
// cannot end first; the cooperative mode alone, as the default mode's
// caller waits for the context's end.
func TestTimeoutErrorAtTheDeadline(t *testing.T) {
	errDeadline := errors.New("the client's own deadline error")
	clk := newManualClock()
	clk.Waits = resilience.WaitsNeverEnd // its time moves, its timers never fire
	p := resilience.Timeout[int](time.Second, resilience.WithClock(clk), resilience.WithTimeoutCooperative())
	_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
		clk.Add(time.Second)
		return 0, errDeadline
	})
	require.ErrorIs(t, err, resilience.ErrTimeout)
	require.ErrorIs(t, err, errDeadline)

	_, err = p.Execute(context.Background(), func(ctx context.Context) (int, error) { return 0, errDeadline })
	require.Equal(t, errDeadline, err, "before the deadline, fn's error as it is")
}

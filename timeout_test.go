package resilience_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
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
		var late atomic.Pointer[resilience.PanicError]
		p := resilience.Timeout[int](10*time.Millisecond,
			resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
				if e.Kind == resilience.EventLatePanic {
					late.Store(e.Panic)
				}
			})))
		_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(time.Second)
			panic("too late")
		})
		require.ErrorIs(t, err, resilience.ErrTimeout)
		time.Sleep(time.Second) // fake time: fn panics now
		synctest.Wait()
		pe := late.Load()
		require.NotNil(t, pe, "no EventLatePanic")
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

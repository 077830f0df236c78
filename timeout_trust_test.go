package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/faf87a20/resilience"
)

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
	quick := func(context.Context) (int, error) { return 1, nil }
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
			{"answered", func(context.Context) (int, error) { return 1, nil }, context.Canceled, context.Canceled},
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
				if _, err := p.Execute(context.Background(), func(context.Context) (int, error) { return 1, nil }); err != nil {
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

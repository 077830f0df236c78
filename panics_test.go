package resilience_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
)

// callOutcome is what became of the goroutine that called Execute.
type callOutcome struct {
	returned bool  // Execute returned
	err      error // what it returned
	panicked any   // the value it panicked with, if it did
	exited   bool  // the goroutine exited by runtime.Goexit
}

// callIn calls p.Execute(fn) in a goroutine of its own and tells what
// became of that goroutine.
func callIn(p resilience.Policy[int], fn resilience.Func[int]) callOutcome {
	out := make(chan callOutcome, 1)
	go func() {
		var o callOutcome
		normal := false
		defer func() {
			if !normal {
				if r := recover(); r != nil {
					o.panicked = r
				} else {
					o.exited = true
				}
			}
			out <- o
		}()
		_, o.err = p.Execute(context.Background(), fn)
		o.returned = true
		normal = true
	}()
	return <-out
}

// TestPanicRule holds every policy to the package's one rule (doc.go,
// Panics): a panic or runtime.Goexit in fn happens to the caller as
// though fn ran in the caller's goroutine; every layer releases what it
// holds and no policy takes it for a failure (no retry, no fallback).
func TestPanicRule(t *testing.T) {
	type build func(fallbacks *atomic.Int32) resilience.Policy[int]
	policies := []struct {
		name string
		p    build
		// second: fn misbehaves on its second call only, the hedge's;
		// the first waits for its context to end.
		second bool
	}{
		{"Timeout", func(*atomic.Int32) resilience.Policy[int] { return resilience.Timeout[int](time.Hour) }, false},
		{"Timeout cooperative", func(*atomic.Int32) resilience.Policy[int] {
			return resilience.Timeout[int](time.Hour, resilience.WithTimeoutCooperative())
		}, false},
		{"Retry", func(*atomic.Int32) resilience.Policy[int] { return resilience.Retry[int](resilience.WithAttempts(3)) }, false},
		{"Guarded breaker", func(*atomic.Int32) resilience.Policy[int] { return resilience.Guarded[int](resilience.NewBreaker()) }, false},
		{"Hedge, first attempt", func(*atomic.Int32) resilience.Policy[int] {
			return resilience.Hedge[int](resilience.WithHedgeDelay(time.Hour))
		}, false},
		{"Hedge, the hedge", func(*atomic.Int32) resilience.Policy[int] {
			return resilience.Hedge[int](resilience.WithHedgeDelay(time.Second))
		}, true},
		{"Fallback", func(n *atomic.Int32) resilience.Policy[int] {
			return resilience.Fallback(func(context.Context, error) (int, error) { n.Add(1); return 7, nil })
		}, false},
		{"Compose", func(n *atomic.Int32) resilience.Policy[int] {
			return resilience.Compose(
				resilience.Fallback(func(context.Context, error) (int, error) { n.Add(1); return 7, nil }),
				resilience.Timeout[int](time.Hour),
				resilience.Retry[int](resilience.WithAttempts(3)),
				resilience.Guarded[int](resilience.NewBreaker()),
			)
		}, false},
	}
	misdeeds := []struct {
		name string
		do   func()
		want func(t *testing.T, o callOutcome)
	}{
		{"panic", func() { panic("boom") }, func(t *testing.T, o callOutcome) {
			if o.panicked != "boom" {
				t.Errorf("caller: %+v, want a panic with \"boom\"", o)
			}
		}},
		{"Goexit", runtimeGoexit, func(t *testing.T, o callOutcome) {
			if !o.exited {
				t.Errorf("caller: %+v, want its goroutine to exit", o)
			}
		}},
	}
	for _, pc := range policies {
		for _, m := range misdeeds {
			t.Run(pc.name+"/"+m.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var fallbacks, calls atomic.Int32
					g := &countingGuard{}
					bh := resilience.NewBulkhead(4)
					p := resilience.Compose(pc.p(&fallbacks), resilience.Guarded[int](g), resilience.Guarded[int](bh))
					o := callIn(p, func(ctx context.Context) (int, error) {
						if n := calls.Add(1); pc.second && n == 1 {
							<-ctx.Done()
							return 0, ctx.Err()
						}
						m.do()
						return 1, nil
					})
					synctest.Wait()
					m.want(t, o)
					if want := int32(1); !pc.second && calls.Load() != want {
						t.Errorf("fn called %d times, want %d: no policy retries a panic", calls.Load(), want)
					}
					if n := fallbacks.Load(); n != 0 {
						t.Errorf("fallback called %d times, want 0", n)
					}
					g.mu.Lock()
					outcomes := g.outcomes
					g.mu.Unlock()
					if !slices.ContainsFunc(outcomes, func(err error) bool {
						var pe *resilience.PanicError
						return errors.As(err, &pe)
					}) {
						t.Errorf("the guard was told %v, want a *PanicError among them", outcomes)
					}
					if n := bh.InFlight(); n != 0 {
						t.Errorf("bulkhead InUse() = %d after the call, want 0", n)
					}
				})
			})
		}
	}
}

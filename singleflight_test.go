package resilience_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// heldCall is one call of a heldFn: it returns when the test releases it,
// with what the release runs in fn's goroutine.
type heldCall struct {
	n        int // from 1
	key      string
	ctx      context.Context
	release  chan func() (int, error)
	released bool // guarded by heldFns.mu
}

// heldFns makes fns that wait to be released, and keeps their calls.
type heldFns struct {
	mu    sync.Mutex
	calls []*heldCall
}

func (h *heldFns) fn(key string) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		c := &heldCall{key: key, ctx: ctx, release: make(chan func() (int, error))}
		h.mu.Lock()
		h.calls = append(h.calls, c)
		c.n = len(h.calls)
		h.mu.Unlock()
		return (<-c.release)()
	}
}

func (h *heldFns) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

func (h *heldFns) call(n int) *heldCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[n-1]
}

// returns releases call n with its number as the result.
func (h *heldFns) returns(n int) {
	h.releases(n, func() (int, error) { return n, nil })
}

// releases makes call n run f in fn's goroutine and return what it
// returns.
func (h *heldFns) releases(n int, f func() (int, error)) {
	c := h.call(n)
	h.mu.Lock()
	c.released = true
	h.mu.Unlock()
	c.release <- f
}

// releaseAll releases every call not released yet, at the end of a test
// that failed half-way, so that the goroutines of its bubble end. Call it
// once the bubble's goroutines are blocked.
func (h *heldFns) releaseAll() {
	for n := 1; n <= h.count(); n++ {
		h.mu.Lock()
		released := h.calls[n-1].released
		h.mu.Unlock()
		if !released {
			h.returns(n)
		}
	}
}

// doResult is what became of a caller of Do.
type doResult struct {
	v        int
	err      error
	panicked any  // the value its goroutine panicked with
	exited   bool // its goroutine ended by runtime.Goexit
}

// goDo calls s.Do in a goroutine of its own; the result comes on the
// channel.
func goDo(s *resilience.Singleflight[string, int], ctx context.Context, key string, fn func(context.Context) (int, error)) <-chan doResult {
	out := make(chan doResult, 1)
	go func() {
		var r doResult
		normal := false
		defer func() {
			if !normal {
				if p := recover(); p != nil {
					r.panicked = p
				} else {
					r.exited = true
				}
			}
			out <- r
		}()
		r.v, r.err = s.Do(ctx, key, fn)
		normal = true
	}()
	return out
}

// ready returns the result on ch, failing if there is none yet: call it
// after synctest.Wait.
func ready(t *testing.T, ch <-chan doResult) doResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("the caller has not returned")
		return doResult{}
	}
}

func waiting(t *testing.T, ch <-chan doResult, msg string) {
	t.Helper()
	if len(ch) != 0 {
		t.Fatalf("%s: the caller returned %+v, want it still waiting", msg, <-ch)
	}
}

// callerCtx is a caller's context: one that can end (fn then runs in a
// goroutine of its own), or context.Background() (fn then runs in the
// first caller's goroutine).
var callerCtxs = []struct {
	name string
	ctx  func(t *testing.T) context.Context
}{
	{"cancellable", func(t *testing.T) context.Context { return t.Context() }},
	{"background", func(*testing.T) context.Context { return context.Background() }},
}

// TestSingleflightShares: concurrent calls for a key share one call of
// fn; calls for other keys do not; and a call after fn returned calls it
// again (nothing is cached).
func TestSingleflightShares(t *testing.T) {
	for _, cc := range callerCtxs {
		t.Run(cc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := resilience.NewSingleflight[string, int]()
				h := &heldFns{}
				var as, bs []<-chan doResult
				for range 5 {
					as = append(as, goDo(s, cc.ctx(t), "a", h.fn("a")))
					synctest.Wait()
				}
				for range 2 {
					bs = append(bs, goDo(s, cc.ctx(t), "b", h.fn("b")))
					synctest.Wait()
				}
				require.Equal(t, 2, h.count(), "calls of fn")
				h.returns(1)
				synctest.Wait()
				for _, a := range as {
					assert.Equal(t, doResult{v: 1}, ready(t, a))
				}
				for _, b := range bs {
					waiting(t, b, "b")
				}
				h.returns(2)
				synctest.Wait()
				for _, b := range bs {
					assert.Equal(t, doResult{v: 2}, ready(t, b))
				}

				again := goDo(s, cc.ctx(t), "a", h.fn("a"))
				synctest.Wait()
				require.Equal(t, 3, h.count(), "a call after fn returned calls it again")
				h.returns(3)
				synctest.Wait()
				assert.Equal(t, doResult{v: 3}, ready(t, again))
			})
		})
	}
}

type valueKey struct{}

// TestSingleflightLastWaiterLeaves: fn's context carries the values of the
// caller who started the call, and no caller's deadline or cancellation; a
// caller whose context ends returns at once; fn's context is cancelled
// when the last caller has gone, and the next caller starts a call of its
// own. The abandoned call's result goes to the discard hook.
func TestSingleflightLastWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var discarded []int
		log := &recorder{}
		s := resilience.NewSingleflight[string, int](
			resilience.WithDiscard(func(v int) { discarded = append(discarded, v) }),
			resilience.WithObserver(log), resilience.WithName("users"))
		h := &heldFns{}
		ctx1, cancel1 := context.WithTimeout(context.WithValue(context.Background(), valueKey{}, "first caller's"), time.Hour)
		defer cancel1()
		ctx2, cancel2 := context.WithCancel(context.WithValue(context.Background(), valueKey{}, "second caller's"))
		defer cancel2()
		r1 := goDo(s, ctx1, "k", h.fn("k"))
		synctest.Wait()
		r2 := goDo(s, ctx2, "k", h.fn("k"))
		synctest.Wait()
		require.Equal(t, 1, h.count())
		fctx := h.call(1).ctx
		assert.Equal(t, "first caller's", fctx.Value(valueKey{}), "the value fn's context carries")
		_, hasDeadline := fctx.Deadline()
		assert.False(t, hasDeadline, "fn's context carries a caller's deadline")

		cancel1()
		synctest.Wait()
		assert.Equal(t, doResult{err: context.Canceled}, ready(t, r1), "the first caller leaves at once")
		assert.NoError(t, fctx.Err(), "fn's context ended while a caller still waits")
		waiting(t, r2, "the second caller")

		cancel2()
		synctest.Wait()
		assert.Equal(t, doResult{err: context.Canceled}, ready(t, r2))
		assert.ErrorIs(t, fctx.Err(), context.Canceled, "fn's context once the last caller has gone")

		r3 := goDo(s, context.Background(), "k", h.fn("k"))
		synctest.Wait()
		require.Equal(t, 2, h.count(), "a caller after the last one left starts a call of its own")
		h.returns(1) // the abandoned call returns late
		synctest.Wait()
		waiting(t, r3, "the third caller, as the abandoned call returns")
		assert.Equal(t, []int{1}, discarded, "the abandoned call's result")
		assert.Equal(t, []resilience.Event{{Kind: resilience.EventDiscarded, Component: "singleflight", Name: "users"}}, log.events)
		h.returns(2)
		synctest.Wait()
		assert.Equal(t, doResult{v: 2}, ready(t, r3))
	})
}

// TestSingleflightLeaverKeepsCall: a caller who leaves while others wait
// leaves the call in place: a caller who comes next joins it, rather than
// starting a duplicate (resenje.org/singleflight's bug, janos/singleflight#4).
func TestSingleflightLeaverKeepsCall(t *testing.T) {
	for _, leaver := range []string{"first caller", "joiner"} {
		t.Run(leaver, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := resilience.NewSingleflight[string, int]()
				h := &heldFns{}
				ctx1, cancel1 := context.WithCancel(context.Background())
				defer cancel1()
				ctx2, cancel2 := context.WithCancel(context.Background())
				defer cancel2()
				r1 := goDo(s, ctx1, "k", h.fn("k"))
				synctest.Wait()
				r2 := goDo(s, ctx2, "k", h.fn("k"))
				synctest.Wait()
				gone, stays, cancel := r1, r2, cancel1
				if leaver == "joiner" {
					gone, stays, cancel = r2, r1, cancel2
				}
				cancel()
				synctest.Wait()
				assert.Equal(t, doResult{err: context.Canceled}, ready(t, gone))
				r3 := goDo(s, context.Background(), "k", h.fn("k"))
				synctest.Wait()
				require.Equal(t, 1, h.count(), "the caller after the one who left joined the call")
				h.returns(1)
				synctest.Wait()
				assert.Equal(t, doResult{v: 1}, ready(t, stays))
				assert.Equal(t, doResult{v: 1}, ready(t, r3))
			})
		})
	}
}

// TestSingleflightJoinAsCallEnds: a caller that comes in the instant the
// call returns gets either its result, having joined it, or the result of
// a call of its own; never a stale result, never a second call for a
// result it then does not get.
func TestSingleflightJoinAsCallEnds(t *testing.T) {
	for _, cc := range callerCtxs {
		t.Run(cc.name, func(t *testing.T) {
			joined, fresh := 0, 0
			for range 100 {
				synctest.Test(t, func(t *testing.T) {
					s := resilience.NewSingleflight[string, int]()
					var calls atomic.Int32
					fn := func(context.Context) (int, error) {
						n := calls.Add(1)
						time.Sleep(10 * time.Millisecond)
						return int(n), nil
					}
					first := goDo(s, cc.ctx(t), "k", fn)
					late := make(chan doResult, 1)
					go func() {
						time.Sleep(10 * time.Millisecond) // comes as the first call returns
						late <- <-goDo(s, cc.ctx(t), "k", fn)
					}()
					time.Sleep(time.Second)
					assert.Equal(t, doResult{v: 1}, ready(t, first))
					r := ready(t, late)
					require.NoError(t, r.err)
					switch n := int(calls.Load()); {
					case r.v == 1 && n == 1:
						joined++
					case r.v == 2 && n == 2:
						fresh++
					default:
						t.Fatalf("the late caller got %d with %d calls of fn, want 1 with 1 or 2 with 2", r.v, n)
					}
				})
			}
			t.Logf("the late caller joined %d times, called fn again %d times", joined, fresh)
		})
	}
}

// TestSingleflightPanics: a panic or runtime.Goexit in fn reaches every
// caller as a *PanicError; when fn ran in the first caller's goroutine,
// that goroutine panics with the value, or exits. The key is free after.
func TestSingleflightPanics(t *testing.T) {
	misdeeds := []struct {
		name    string
		do      func() (int, error)
		isValue func(any) bool
	}{
		{"panic", func() (int, error) { panic("boom") }, func(v any) bool { return v == "boom" }},
		{"Goexit", func() (int, error) { runtime.Goexit(); return 0, nil }, func(v any) bool {
			err, ok := v.(error)
			return ok && err.Error() == "resilience: fn called runtime.Goexit"
		}},
	}
	for _, cc := range callerCtxs {
		for _, m := range misdeeds {
			t.Run(cc.name+"/"+m.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := resilience.NewSingleflight[string, int]()
					h := &heldFns{}
					first := goDo(s, cc.ctx(t), "k", h.fn("k"))
					synctest.Wait()
					var others []<-chan doResult
					for range 2 {
						others = append(others, goDo(s, callerCtxs[0].ctx(t), "k", h.fn("k")))
					}
					synctest.Wait()
					require.Equal(t, 1, h.count())
					h.releases(1, m.do)
					synctest.Wait()
					isPanicError := func(r doResult) {
						t.Helper()
						var pe *resilience.PanicError
						if assert.ErrorAs(t, r.err, &pe, "%+v", r) {
							assert.True(t, m.isValue(pe.Value), "PanicError.Value = %v", pe.Value)
						}
						assert.Nil(t, r.panicked)
						assert.False(t, r.exited)
					}
					for _, o := range others {
						isPanicError(ready(t, o))
					}
					r := ready(t, first)
					switch {
					case cc.name == "cancellable":
						isPanicError(r)
					case m.name == "panic":
						assert.Equal(t, doResult{panicked: "boom"}, r, "the first caller, whose goroutine ran fn")
					default:
						assert.Equal(t, doResult{exited: true}, r, "the first caller, whose goroutine ran fn")
					}

					again := goDo(s, cc.ctx(t), "k", h.fn("k"))
					synctest.Wait()
					require.Equal(t, 2, h.count(), "a call after the panic calls fn again")
					h.returns(2)
					synctest.Wait()
					assert.Equal(t, doResult{v: 2}, ready(t, again))
				})
			})
		}
	}
}

// TestSingleflightLatePanic: a panic or Goexit in a call every caller
// left reaches the observer, and ends nothing.
func TestSingleflightLatePanic(t *testing.T) {
	for _, m := range []struct {
		name  string
		do    func() (int, error)
		value string
	}{
		{"panic", func() (int, error) { panic("late") }, "resilience: panic: late"},
		{"Goexit", func() (int, error) { runtime.Goexit(); return 0, nil }, "resilience: panic: resilience: fn called runtime.Goexit"},
	} {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &recorder{}
				s := resilience.NewSingleflight[string, int](resilience.WithObserver(log))
				h := &heldFns{}
				ctx, cancel := context.WithCancel(context.Background())
				r := goDo(s, ctx, "k", h.fn("k"))
				synctest.Wait()
				cancel()
				synctest.Wait()
				assert.Equal(t, doResult{err: context.Canceled}, ready(t, r))
				h.releases(1, m.do)
				synctest.Wait()
				require.Len(t, log.events, 1)
				e := log.events[0]
				assert.Equal(t, resilience.EventLatePanic, e.Kind)
				assert.Equal(t, "singleflight", e.Component)
				if assert.NotNil(t, e.Panic) {
					assert.Equal(t, m.value, e.Panic.Error())
				}
			})
		})
	}
}

// TestSingleflightForget: after Forget, the next caller starts a call of
// its own; the forgotten call's callers get its result, and its end does
// not let go of the new call.
func TestSingleflightForget(t *testing.T) {
	for _, cc := range callerCtxs {
		t.Run(cc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := resilience.NewSingleflight[string, int]()
				h := &heldFns{}
				a := goDo(s, cc.ctx(t), "k", h.fn("k"))
				synctest.Wait()
				s.Forget("k")
				s.Forget("never called")
				b := goDo(s, cc.ctx(t), "k", h.fn("k"))
				synctest.Wait()
				c := goDo(s, cc.ctx(t), "k", h.fn("k"))
				synctest.Wait()
				require.Equal(t, 2, h.count(), "calls of fn")
				h.returns(1)
				synctest.Wait()
				assert.Equal(t, doResult{v: 1}, ready(t, a))
				waiting(t, b, "b")
				d := goDo(s, cc.ctx(t), "k", h.fn("k"))
				synctest.Wait()
				require.Equal(t, 2, h.count(), "d joins the call after Forget")
				h.returns(2)
				synctest.Wait()
				for _, r := range []<-chan doResult{b, c, d} {
					assert.Equal(t, doResult{v: 2}, ready(t, r))
				}
			})
		})
	}
}

// TestSingleflightCallerGoneFirst: a caller whose context has ended
// before Do returns its error at once, and neither starts nor joins a call.
func TestSingleflightCallerGoneFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := resilience.NewSingleflight[string, int]()
		h := &heldFns{}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.Do(ended, "k", h.fn("k"))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, h.count())

		live, cancelLive := context.WithCancel(context.Background())
		r := goDo(s, live, "k", h.fn("k"))
		synctest.Wait()
		_, err = s.Do(ended, "k", h.fn("k"))
		assert.ErrorIs(t, err, context.Canceled)
		cancelLive()
		synctest.Wait()
		assert.Equal(t, doResult{err: context.Canceled}, ready(t, r))
		assert.ErrorIs(t, h.call(1).ctx.Err(), context.Canceled, "the ended caller did not join and keep the call alive")
		h.returns(1)
	})
}

type userIDKey struct{}

func userIDOf(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(userIDKey{}).(string)
	return id, ok
}

// TestSingleflightPolicy: as a policy, the key comes from the context;
// the layers within run once for every caller of a shared call, and a
// call with no key goes through alone.
func TestSingleflightPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := resilience.NewSingleflight[string, int]()
		var calls atomic.Int32
		fn := func(context.Context) (int, error) {
			n := calls.Add(1)
			time.Sleep(10 * time.Millisecond)
			if n < 3 {
				return 0, errInjected
			}
			return int(n), nil
		}
		p := resilience.Compose(
			s.Policy(userIDOf),
			resilience.Retry[int](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(time.Millisecond))),
		)
		ctx := context.WithValue(context.Background(), userIDKey{}, "u1")
		var wg sync.WaitGroup
		results := make([]int, 4)
		for i := range results {
			wg.Go(func() {
				v, err := p.Execute(ctx, fn)
				assert.NoError(t, err)
				results[i] = v
			})
		}
		wg.Wait()
		assert.Equal(t, []int{3, 3, 3, 3}, results)
		assert.Equal(t, int32(3), calls.Load(), "one retry loop served every caller")

		calls.Store(2)
		for range 2 {
			wg.Go(func() {
				v, err := p.Execute(context.Background(), fn)
				assert.NoError(t, err)
				assert.Positive(t, v)
			})
		}
		wg.Wait()
		assert.Equal(t, int32(4), calls.Load(), "calls with no key are not coalesced")

		calls.Store(2)
		v, err := s.Policy(userIDOf).Execute(ctx, fn)
		assert.Equal(t, 3, v)
		assert.NoError(t, err)
	})
}

// TestSingleflightPolicyNoKey: a call for which keyOf reports no key goes
// through the layers within the policy, alone, or straight to fn when the
// policy is used alone.
func TestSingleflightPolicyNoKey(t *testing.T) {
	s := resilience.NewSingleflight[string, int]()
	tests := []struct {
		name      string
		p         resilience.Policy[int]
		wantCalls int
	}{
		{"alone", s.Policy(userIDOf), 1},
		{"composed", resilience.Compose(s.Policy(userIDOf), resilience.Retry[int](resilience.WithAttempts(2), zeroWait)), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			v, err := tc.p.Execute(context.Background(), func(context.Context) (int, error) {
				calls++
				if calls == 1 && tc.wantCalls > 1 {
					return 0, errInjected
				}
				return calls, nil
			})
			require.NoError(t, err)
			assert.Equal(t, tc.wantCalls, v)
			assert.Equal(t, tc.wantCalls, calls, "calls of fn")
		})
	}
}

// TestSingleflightZeroValue: the zero Singleflight is ready to use.
func TestSingleflightZeroValue(t *testing.T) {
	var s resilience.Singleflight[int, string]
	v, err := s.Do(context.Background(), 1, func(context.Context) (string, error) { return "one", nil })
	assert.Equal(t, "one", v)
	assert.NoError(t, err)
	s.Forget(1)
}

func TestSingleflightBadInput(t *testing.T) {
	s := resilience.NewSingleflight[string, int]()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"Do with nil fn", func() { _, _ = s.Do(context.Background(), "k", nil) }, "resilience: Singleflight.Do: fn is nil"},
		{"nil keyOf", func() { s.Policy(nil) }, "resilience: Singleflight.Policy: keyOf is nil"},
		{"Execute with nil fn", func() { _, _ = s.Policy(userIDOf).Execute(context.Background(), nil) }, "resilience: Singleflight.Policy: fn is nil"},
		{"nil option", func() { resilience.NewSingleflight[string, int](nil) }, "resilience: NewSingleflight: option is nil"},
		{"zero option", func() { resilience.NewSingleflight[string, int](resilience.Option{}) },
			"resilience: NewSingleflight: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
		{"discard of another type", func() { resilience.NewSingleflight[string, int](resilience.WithDiscard(func(string) {})) },
			"resilience: NewSingleflight: WithDiscard hook is func(string), but the policy's result type is int"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestSingleflightJoinAllocs: joining a call in flight and getting its
// result allocates nothing; the first caller to join makes the channel
// the callers wait on when fn runs in the first caller's goroutine. The
// scenario runs six times, and the least of the last five counts: the
// runtime allocates records of blocked goroutines until its caches hold
// enough, as it does for any wait.
func TestSingleflightJoinAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	// A collection empties the runtime's caches.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, cc := range callerCtxs {
		t.Run(cc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const joiners = 100
				s := resilience.NewSingleflight[string, int]()
				ctx := cc.ctx(t)
				_ = ctx.Done() // made once, by the context package
				least := uint64(math.MaxUint64)
				for round := range 6 {
					gate := make(chan struct{})
					fn := func(context.Context) (int, error) { <-gate; return 1, nil }
					first := goDo(s, ctx, "k", fn)
					start := make(chan struct{})
					var wg sync.WaitGroup
					for range joiners {
						wg.Go(func() {
							<-start
							v, err := s.Do(ctx, "k", fn)
							if v != 1 || err != nil {
								panic("wrong result")
							}
						})
					}
					synctest.Wait()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					close(start)
					synctest.Wait()
					close(gate)
					wg.Wait()
					runtime.ReadMemStats(&after)
					if round > 0 {
						least = min(least, after.Mallocs-before.Mallocs)
					}
					assert.Equal(t, doResult{v: 1}, <-first)
				}
				if least > 1 {
					t.Errorf("%d joiners allocated %d times, want at most 1 (the channel they wait on)", joiners, least)
				}
			})
		})
	}
}

var errFlightFailed = errors.New("flight failed")

// TestSingleflightErrorShared: an error is every caller's, as a result is.
func TestSingleflightErrorShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := resilience.NewSingleflight[string, int]()
		h := &heldFns{}
		a := goDo(s, callerCtxs[0].ctx(t), "k", h.fn("k"))
		b := goDo(s, callerCtxs[0].ctx(t), "k", h.fn("k"))
		synctest.Wait()
		h.releases(1, func() (int, error) { return 5, errFlightFailed })
		synctest.Wait()
		assert.Equal(t, doResult{v: 5, err: errFlightFailed}, ready(t, a))
		assert.Equal(t, doResult{v: 5, err: errFlightFailed}, ready(t, b))
	})
}

// BenchmarkSingleflight measures Do alone; benchmarks/singleflight_test.go
// sets it beside golang.org/x/sync's singleflight in one run. "leader":
// one caller at a time, each starting a call; with a context that can
// end, fn runs on a parked worker. "parallel": callers on every core, one
// key, fn returning at once, as x/sync's own BenchmarkDo. "joiners": 100
// callers a core for one key, fn taking 10µs, so that most calls join.
func BenchmarkSingleflight(b *testing.B) {
	fn := func(context.Context) (int, error) { return 1, nil }
	slow := func(context.Context) (int, error) { time.Sleep(10 * time.Microsecond); return 1, nil }
	for _, cc := range []struct {
		name string
		ctx  func(b *testing.B) context.Context
	}{
		{"background", func(*testing.B) context.Context { return context.Background() }},
		{"cancellable", func(b *testing.B) context.Context { return b.Context() }},
	} {
		b.Run("leader/"+cc.name, func(b *testing.B) {
			s := resilience.NewSingleflight[string, int]()
			ctx := cc.ctx(b)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.Do(ctx, "k", fn)
			}
		})
		b.Run("parallel/"+cc.name, func(b *testing.B) {
			s := resilience.NewSingleflight[string, int]()
			ctx := cc.ctx(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = s.Do(ctx, "k", fn)
				}
			})
		})
		b.Run("joiners/"+cc.name, func(b *testing.B) {
			s := resilience.NewSingleflight[string, int]()
			ctx := cc.ctx(b)
			b.ReportAllocs()
			b.SetParallelism(100)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = s.Do(ctx, "k", slow)
				}
			})
		})
	}
}

// TestSingleflightCallerValues: the layers within a Singleflight's policy,
// and fn, see the values of the context of the caller who started the
// call (its priority, for a limiter that sheds by it), whether fn runs in
// a goroutine of its own or in that caller's.
func TestSingleflightCallerValues(t *testing.T) {
	for _, cc := range callerCtxs {
		t.Run(cc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := resilience.NewSingleflight[string, int]()
				var seen []resilience.Priority // by the layer within, then by fn
				inner := resilience.PolicyFunc[int](func(ctx context.Context, fn resilience.Func[int]) (int, error) {
					seen = append(seen, resilience.PriorityFrom(ctx))
					return fn(ctx)
				})
				p := resilience.Compose(s.Policy(userIDOf), inner)
				ctx := resilience.WithPriority(context.WithValue(cc.ctx(t), userIDKey{}, "u1"), resilience.PriorityCritical)
				v, err := p.Execute(ctx, func(ctx context.Context) (int, error) {
					seen = append(seen, resilience.PriorityFrom(ctx))
					id, _ := userIDOf(ctx)
					return len(id), nil
				})
				require.NoError(t, err)
				assert.Equal(t, 2, v, "fn sees the caller's values")
				assert.Equal(t, []resilience.Priority{resilience.PriorityCritical, resilience.PriorityCritical}, seen)
			})
		})
	}
}

// TestSingleflightBubbleEdge: a caller inside a testing/synctest bubble
// never joins a call started outside it, nor a caller outside one started
// inside: it calls fn on its own, and neither hangs nor ends the program
// (the runtime does when a bubble's channel is used from outside). The
// callers outside run on a goroutine started outside the bubble, told what
// to do, and answering, on channels made outside it.
func TestSingleflightBubbleEdge(t *testing.T) {
	for _, cc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
	} {
		for _, first := range []string{"inside", "outside"} {
			t.Run(cc.name+"/started "+first, func(t *testing.T) {
				s := resilience.NewSingleflight[string, int]()
				work := make(chan func())
				worked := make(chan struct{})
				go func() { // the outside
					defer close(worked)
					for f := range work {
						f()
					}
				}()
				defer func() { close(work); <-worked }()
				outside := make(chan doResult, 1)
				doOutside := func(fn func(context.Context) (int, error)) {
					work <- func() {
						ctx, cancel := cc.ctx()
						defer cancel()
						v, err := s.Do(ctx, "k", fn)
						outside <- doResult{v: v, err: err}
					}
				}
				started, release := make(chan struct{}), make(chan struct{}) // outside's
				synctest.Test(t, func(t *testing.T) {
					ctx, cancel := cc.ctx()
					defer cancel()
					if first == "inside" {
						hold := make(chan struct{})
						in := goDo(s, ctx, "k", func(context.Context) (int, error) { <-hold; return 1, nil })
						synctest.Wait()
						doOutside(func(context.Context) (int, error) { return 2, nil })
						assert.Equal(t, doResult{v: 2}, <-outside, "the caller outside")
						close(hold)
						synctest.Wait()
						assert.Equal(t, doResult{v: 1}, ready(t, in), "the caller inside")
						return
					}
					doOutside(func(context.Context) (int, error) { close(started); <-release; return 1, nil })
					<-started
					in := goDo(s, ctx, "k", func(context.Context) (int, error) { return 2, nil })
					synctest.Wait()
					assert.Equal(t, doResult{v: 2}, ready(t, in), "the caller inside")
					close(release)
					assert.Equal(t, doResult{v: 1}, <-outside, "the caller outside")
				})
			})
		}
	}
}

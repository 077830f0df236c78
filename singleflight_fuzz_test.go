package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/faf87a20/resilience"
)

// sfModel is what a Singleflight promises, written as plainly as
// possible: callers wait on flights; a flight is a call of fn; a key
// names at most one flight that new callers join.
type sfModel struct {
	current map[string]*sfFlight // the flight a caller for the key joins
	flights []*sfFlight          // every call of fn, in order
	callers [sfCallers]sfCaller
	late    int // panics of calls every caller had left
	dropped int // results of such calls, for the discard hook
}

type sfFlight struct {
	n         int // its call of fn, from 1
	key       string
	leader    int // the caller that started it
	waiters   map[int]bool
	inline    bool // fn runs in the first caller's goroutine
	returned  bool // fn has returned
	abandoned bool // every caller left before fn returned
}

type sfCaller struct {
	flight *sfFlight // nil: not waiting
	want   doResult  // what it returns, once its flight or its context decides
	done   bool      // it has returned, and the test is yet to check
}

const sfCallers = 6

// sfCancellable reports whether caller c calls with a context that can
// end; the others call with context.Background().
func sfCancellable(c int) bool { return c < 4 }

func (m *sfModel) start(c int, key string) {
	if m.current == nil {
		m.current = map[string]*sfFlight{}
	}
	f := m.current[key]
	if f == nil {
		f = &sfFlight{n: len(m.flights) + 1, key: key, leader: c, waiters: map[int]bool{}, inline: !sfCancellable(c)}
		m.flights = append(m.flights, f)
		m.current[key] = f
	}
	f.waiters[c] = true
	m.callers[c].flight = f
}

func (m *sfModel) cancel(c int) {
	f := m.callers[c].flight
	m.callers[c] = sfCaller{want: doResult{err: context.Canceled}, done: true}
	delete(f.waiters, c)
	if len(f.waiters) == 0 {
		f.abandoned = true
		if m.current[f.key] == f {
			delete(m.current, f.key)
		}
	}
}

func (m *sfModel) forget(key string) { delete(m.current, key) }

// release makes fn of flight f return: a result, an error or a panic.
func (m *sfModel) release(f *sfFlight, outcome int) {
	f.returned = true
	if m.current[f.key] == f {
		delete(m.current, f.key)
	}
	if f.abandoned {
		switch outcome {
		case 0:
			m.dropped++
		case 2:
			m.late++
		}
		return
	}
	for c := range f.waiters {
		var want doResult
		switch outcome {
		case 0:
			want = doResult{v: f.n}
		case 1:
			want = doResult{v: f.n, err: errFlightFailed}
		default:
			if f.inline && c == f.leader {
				want = doResult{panicked: "boom"}
			} else {
				want = doResult{err: &resilience.PanicError{Value: "boom"}}
			}
		}
		m.callers[c] = sfCaller{want: want, done: true}
	}
}

// FuzzSingleflight runs a Singleflight and its model side by side: ops
// start callers, end their contexts, make calls of fn return (a result,
// an error or a panic) and forget keys, and after each the callers that
// returned, what they returned, the calls of fn made and the state of
// their contexts must be the model's.
func FuzzSingleflight(f *testing.F) {
	f.Add([]byte{0, 0, 0, 6, 2, 0})
	f.Add([]byte{0, 0, 0, 1, 1, 0, 1, 1, 0, 2, 2, 0, 2, 0})
	f.Add([]byte{0, 4, 0, 0, 2, 2, 0, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 128 {
			ops = ops[:128]
		}
		synctest.Test(t, func(t *testing.T) {
			fuzzSingleflight(t, ops)
		})
	})
}

func fuzzSingleflight(t *testing.T, ops []byte) {
	var mu sync.Mutex
	late, dropped := 0, 0
	s := resilience.NewSingleflight[string, int](
		resilience.WithDiscard(func(int) { mu.Lock(); dropped++; mu.Unlock() }),
		resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
			if e.Kind == resilience.EventLatePanic {
				mu.Lock()
				late++
				mu.Unlock()
			}
		})))
	h := &heldFns{}
	m := &sfModel{}
	var results [sfCallers]<-chan doResult
	var cancels [sfCallers]context.CancelFunc
	t.Cleanup(func() { // after a failure, so that the bubble's goroutines end
		synctest.Wait()
		h.releaseAll()
		for _, cancel := range cancels {
			if cancel != nil {
				cancel()
			}
		}
	})
	outcomes := []func(n int) func() (int, error){
		func(n int) func() (int, error) { return func() (int, error) { return n, nil } },
		func(n int) func() (int, error) { return func() (int, error) { return n, errFlightFailed } },
		func(int) func() (int, error) { return func() (int, error) { panic("boom") } },
	}
	keys := []string{"a", "b"}
	check := func(step int, op string) {
		t.Helper()
		synctest.Wait()
		if got, want := h.count(), len(m.flights); got != want {
			t.Fatalf("step %d (%s): %d calls of fn, want %d", step, op, got, want)
		}
		for c := range sfCallers {
			mc := &m.callers[c]
			switch {
			case mc.done:
				r := ready(t, results[c])
				if !sameResult(r, mc.want) {
					t.Fatalf("step %d (%s): caller %d returned %+v, want %+v", step, op, c, r, mc.want)
				}
				mc.done, results[c] = false, nil
			case mc.flight != nil:
				waiting(t, results[c], fmt.Sprintf("step %d (%s): caller %d", step, op, c))
			}
		}
		for _, f := range m.flights {
			if f.returned || f.inline {
				continue
			}
			ctxErr := h.call(f.n).ctx.Err()
			if f.abandoned != errors.Is(ctxErr, context.Canceled) {
				t.Fatalf("step %d (%s): call %d's context: %v, want cancelled %v", step, op, f.n, ctxErr, f.abandoned)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if late != m.late || dropped != m.dropped {
			t.Fatalf("step %d (%s): %d late panics and %d discarded results, want %d and %d", step, op, late, dropped, m.late, m.dropped)
		}
	}
	for i := 0; i+1 < len(ops); i += 2 {
		kind, arg := ops[i]%4, int(ops[i+1])
		var op string
		switch kind {
		case 0: // a caller calls
			c, key := arg%sfCallers, keys[arg/sfCallers%2]
			if m.callers[c].flight != nil {
				continue
			}
			op = fmt.Sprintf("caller %d calls for %q", c, key)
			ctx := context.Background()
			if sfCancellable(c) {
				ctx, cancels[c] = context.WithCancel(context.Background())
			}
			m.start(c, key)
			results[c] = goDo(s, ctx, key, h.fn(key))
		case 1: // a caller's context ends
			c := arg % sfCallers
			if m.callers[c].flight == nil || !sfCancellable(c) {
				continue
			}
			op = fmt.Sprintf("caller %d leaves", c)
			m.cancel(c)
			cancels[c]()
		case 2: // a call of fn returns
			running := slices.DeleteFunc(slices.Clone(m.flights), func(f *sfFlight) bool { return f.returned })
			if len(running) == 0 {
				continue
			}
			f, outcome := running[arg%len(running)], arg/len(running)%3
			op = fmt.Sprintf("call %d returns with outcome %d", f.n, outcome)
			m.release(f, outcome)
			h.releases(f.n, outcomes[outcome](f.n))
		case 3:
			key := keys[arg%2]
			op = fmt.Sprintf("forget %q", key)
			m.forget(key)
			s.Forget(key)
		}
		check(i/2, op)
	}
	// Let every call return, so that every goroutine of the bubble ends.
	for _, f := range m.flights {
		if !f.returned {
			m.release(f, 0)
			h.releases(f.n, outcomes[0](f.n))
		}
	}
	check(len(ops)/2, "the end")
}

// sameResult compares results, a *PanicError by its value.
func sameResult(got, want doResult) bool {
	var gp, wp *resilience.PanicError
	if errors.As(want.err, &wp) {
		return errors.As(got.err, &gp) && gp.Value == wp.Value && got.v == 0 && got.panicked == nil && !got.exited
	}
	return got == want
}

package resilience

import (
	"context"
	"sync"
	"time"

	"github.com/faf87a20/resilience/internal/workers"
)

// Singleflight coalesces concurrent calls for the same key: while a call
// for a key is in flight, further calls for that key wait for it and get
// its result, as golang.org/x/sync's singleflight.Group does, typed, with a
// context for every caller. fn's context carries the values of the caller
// who started the call (its priority, its trace), as context.WithoutCancel
// keeps them, but none of its deadline or cancellation: it belongs to no
// caller, and is cancelled once every caller has gone. A panic in fn
// reaches every caller as a *[PanicError]. A Singleflight is safe for
// concurrent use; its zero value is ready to use.
//
// A caller inside a testing/synctest bubble never joins a call started
// outside it, nor the reverse: it calls fn on its own, for the runtime ends
// a program that uses a bubble's channels from outside it, and a bubble's
// fake time cannot wait for a call outside. Calls started inside bubbles
// are told apart from the others by the time, as testing/synctest
// documents it (a bubble's clock starts in 2000), but not one bubble's
// from another's: give each bubble a Singleflight of its own.
type Singleflight[K comparable, T any] struct {
	singleflightConfig
	discard func(T)

	mu      sync.Mutex
	calls   map[K]*flight[K, T] // the calls in flight that a caller may join
	bubbled map[K]*flight[K, T] // those started inside a testing/synctest bubble
}

// NewSingleflight returns a Singleflight for calls that return a T, keyed
// by a K. With an observer it reports only calls every caller left: a panic
// as an [EventLatePanic], a result handed to [WithDiscard]'s hook as an
// [EventDiscarded]. It panics if an option is nil or invalid.
func NewSingleflight[K comparable, T any](opts ...SingleflightOption) *Singleflight[K, T] {
	s := &Singleflight[K, T]{}
	for _, o := range opts {
		checkOption("NewSingleflight", o)
		o.applySingleflight(&s.singleflightConfig)
	}
	s.discard = discardOf[T]("NewSingleflight", s.singleflightConfig.discard)
	return s
}

// SingleflightOption configures [NewSingleflight]; an [Option] or
// [WithDiscard] is one too.
type SingleflightOption interface {
	applySingleflight(*singleflightConfig)
}

type singleflightConfig struct {
	common
	discard any // func(T), checked by NewSingleflight[K, T]
}

func (o Option) applySingleflight(c *singleflightConfig)        { o.set(&c.common) }
func (o DiscardOption) applySingleflight(c *singleflightConfig) { c.discard = o.f }

// flight is one call of fn and the callers waiting for it. Its fields
// after fn are guarded by the Singleflight's mutex until done is closed,
// and read-only after. It holds no more than a call that runs in its first
// caller's goroutine needs, so that such a call costs one allocation of
// x/sync's size; a call that runs in a goroutine of its own is an ownRun.
type flight[K comparable, T any] struct {
	key  K
	next chain[T] // nil: fn alone
	fn   Func[T]

	own     *ownRun[K, T] // the run holding this flight, if fn runs in a goroutine of its own
	done    chan struct{} // closed when fn has returned; made by the first to wait on it
	leader  *waiter       // an own run's first caller while it waits, told on its own
	waiters int32         // the callers waiting for the result
	bubbled bool          // started inside a testing/synctest bubble
	ended   bool          // fn has returned: v and err are set
	v       T
	err     error // a *PanicError when fn panicked or exited
}

// ownRun is a flight whose fn runs in a goroutine of its own: a
// [workers.Task].
type ownRun[K comparable, T any] struct {
	flight[K, T]
	s      *Singleflight[K, T]
	ctx    context.Context    // fn's
	cancel context.CancelFunc // ends ctx
}

// Do calls fn and returns its result, unless a call for key is in flight
// already: Do then waits for that call's result instead. When ctx ends
// first, Do returns ctx's error at once, and the call goes on for the
// others. Do panics if fn is nil.
func (s *Singleflight[K, T]) Do(ctx context.Context, key K, fn func(ctx context.Context) (T, error)) (T, error) {
	if fn == nil {
		panic("resilience: Singleflight.Do: fn is nil")
	}
	return s.do(ctx, key, nil, fn)
}

// Forget makes the next call for key call fn, even while a call for key is
// in flight; the callers of that call still get its result.
func (s *Singleflight[K, T]) Forget(key K) {
	s.mu.Lock()
	delete(s.calls, key)
	delete(s.bubbled, key)
	s.mu.Unlock()
}

// Policy returns s as a [Policy] that coalesces a call with the calls in
// flight for the key keyOf finds in its context (a call for which keyOf
// reports false goes through alone). The layers within it in a [Compose]
// run once for all the callers, with the fn of the first; put it outside
// the retries; they see the values of the first caller's context. Its
// Execute panics if fn is nil. Policy panics if keyOf is nil.
func (s *Singleflight[K, T]) Policy(keyOf func(ctx context.Context) (key K, ok bool)) Policy[T] {
	if keyOf == nil {
		panic("resilience: Singleflight.Policy: keyOf is nil")
	}
	return &coalesced[K, T]{s: s, keyOf: keyOf}
}

type coalesced[K comparable, T any] struct {
	s     *Singleflight[K, T]
	keyOf func(context.Context) (K, bool)
}

func (p *coalesced[K, T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Singleflight.Policy: fn is nil")
	}
	return p.run(ctx, nil, fn)
}

func (p *coalesced[K, T]) link(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return p.run(ctx, next, fn) }
}

func (p *coalesced[K, T]) run(ctx context.Context, next chain[T], fn Func[T]) (T, error) {
	key, ok := p.keyOf(ctx)
	if !ok {
		if next == nil {
			return fn(ctx)
		}
		return next(ctx, fn)
	}
	return p.s.do(ctx, key, next, fn)
}

// do joins the call in flight for key, or starts one that calls next with
// fn (fn alone if next is nil: a chain made here would be allocated on
// every call), and returns its result.
func (s *Singleflight[K, T]) do(ctx context.Context, key K, next chain[T], fn Func[T]) (T, error) {
	leave := ctx.Done()
	if leave != nil {
		select {
		case <-leave:
			var zero T
			return zero, ctx.Err()
		default:
		}
	}
	now := time.Now()
	bubbled := workers.InBubble(now)
	s.mu.Lock()
	calls := s.flights(bubbled)
	if f, ok := calls[key]; ok {
		f.waiters++
		if f.done == nil {
			f.done = make(chan struct{})
		}
		s.mu.Unlock()
		return s.wait(ctx, leave, f)
	}
	if calls == nil {
		calls = make(map[K]*flight[K, T])
		s.setFlights(bubbled, calls)
	}
	if leave == nil {
		// The caller can never leave, so fn may as well run in its
		// goroutine, with its context, which never ends either: ending it
		// would need every caller gone.
		f := &flight[K, T]{key: key, next: next, fn: fn, waiters: 1, bubbled: bubbled}
		calls[key] = f
		s.mu.Unlock()
		return s.lead(ctx, f)
	}
	w := getWaiter(bubbled)
	r := &ownRun[K, T]{flight: flight[K, T]{key: key, next: next, fn: fn, waiters: 1, bubbled: bubbled, leader: w}, s: s}
	r.own = r
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	calls[key] = &r.flight
	s.mu.Unlock()
	// The shared call belongs to no caller: it runs with no caller's
	// profiler labels either.
	workers.Go(context.Background(), now, r)
	return s.waitFirst(ctx, leave, &r.flight, w)
}

// waiter is what the first caller of a call that runs in a goroutine of
// its own waits on: a channel that the call's end sends one message on, so
// that the call makes no channel to close for that caller alone. Outside
// testing/synctest bubbles waiters are pooled.
type waiter struct{ ch chan struct{} }

var waiters sync.Pool // of *waiter made outside every bubble

func getWaiter(bubbled bool) *waiter {
	if !bubbled {
		if w, _ := waiters.Get().(*waiter); w != nil {
			return w
		}
	}
	return &waiter{ch: make(chan struct{}, 1)}
}

// waitFirst waits for the result of f, a call its caller started and that runs
// in a goroutine of its own, on w, or for ctx to end (leave is its Done);
// then the caller leaves, and w goes back to the pool.
func (s *Singleflight[K, T]) waitFirst(ctx context.Context, leave <-chan struct{}, f *flight[K, T], w *waiter) (v T, err error) {
	select {
	case <-w.ch:
		v, err = f.v, f.err
	case <-leave:
		if s.leave(f, w) {
			<-w.ch // the result came as the caller left: its message is on its way
			v, err = f.v, f.err
		} else {
			err = ctx.Err()
		}
	}
	if !f.bubbled {
		waiters.Put(w)
	}
	return v, err
}

// flights returns the calls in flight that a caller inside a
// testing/synctest bubble (bubbled) or outside every bubble may join, nil
// before the first. The caller holds s.mu.
func (s *Singleflight[K, T]) flights(bubbled bool) map[K]*flight[K, T] {
	if bubbled {
		return s.bubbled
	}
	return s.calls
}

// setFlights sets the map flights returns. The caller holds s.mu.
func (s *Singleflight[K, T]) setFlights(bubbled bool, calls map[K]*flight[K, T]) {
	if bubbled {
		s.bubbled = calls
	} else {
		s.calls = calls
	}
}

// unlist lets f's key go, if f is still the call a caller joins for it,
// so that the next caller for the key starts a call of its own. The caller
// holds s.mu.
func (s *Singleflight[K, T]) unlist(f *flight[K, T]) {
	if calls := s.flights(f.bubbled); calls[f.key] == f {
		delete(calls, f.key)
	}
}

// wait waits for f's result, or for ctx to end (leave is its Done); then
// the caller leaves.
func (s *Singleflight[K, T]) wait(ctx context.Context, leave <-chan struct{}, f *flight[K, T]) (T, error) {
	if leave == nil { // a caller who cannot leave waits on one channel
		<-f.done
		return f.v, f.err
	}
	select {
	case <-f.done:
		return f.v, f.err
	case <-leave:
	}
	if s.leave(f, nil) {
		return f.v, f.err // it came as the caller left
	}
	var zero T
	return zero, ctx.Err()
}

// leave takes a caller off f, and reports whether the result has come.
// The last caller to leave before the result comes cancels fn's context,
// and lets the next caller for the key start a call of its own. w is the
// waiter of f's first caller, if it is the one leaving: unless the result
// has come, and with it a message on w, f then lets go of w.
func (s *Singleflight[K, T]) leave(f *flight[K, T], w *waiter) (ended bool) {
	s.mu.Lock()
	if f.ended {
		s.mu.Unlock()
		return true
	}
	if w != nil {
		f.leader = nil
	}
	f.waiters--
	last := f.waiters == 0
	if last {
		s.unlist(f)
	}
	s.mu.Unlock()
	// Only a call in a goroutine of its own can lose every caller: a
	// first caller that runs fn never leaves.
	if last && f.own != nil {
		f.own.cancel()
	}
	return false
}

// lead runs fn in its first caller's goroutine, with its context ctx,
// which never ends.
func (s *Singleflight[K, T]) lead(ctx context.Context, f *flight[K, T]) (v T, err error) {
	finished := false
	defer func() {
		if !finished {
			r := recover()
			pe := newPanicError(r)
			s.end(f, v, pe)
			if r != nil {
				panic(r)
			}
		}
	}()
	if f.next == nil {
		v, err = f.fn(ctx)
	} else {
		v, err = f.next(ctx, f.fn)
	}
	finished = true
	s.end(f, v, err)
	return v, err
}

// Run runs fn in a goroutine of its own, for [workers.Go]. A panic stops
// here: it reaches the callers as an error. A runtime.Goexit ends the
// goroutine once they are told.
func (r *ownRun[K, T]) Run() {
	var v T
	var err error
	finished := false
	defer func() {
		if !finished {
			pe := newPanicError(recover())
			if r.s.end(&r.flight, v, pe) && r.s.observer != nil {
				r.s.observeDetached(r.ctx, Event{Kind: EventLatePanic, Component: KindSingleflight, Panic: pe})
			}
		}
	}()
	if r.next == nil {
		v, err = r.fn(r.ctx)
	} else {
		v, err = r.next(r.ctx, r.fn)
	}
	finished = true
	if r.s.end(&r.flight, v, err) && err == nil {
		r.discard(v)
	}
}

// discard hands the result of a call every caller left to the discard
// hook, in the call's own goroutine, which no one waits on.
func (r *ownRun[K, T]) discard(v T) {
	s := r.s
	if s.discard == nil {
		return
	}
	callDiscard(r.ctx, &s.common, KindSingleflight, s.discard, v, true)
	if s.observer != nil {
		s.observeDetached(r.ctx, Event{Kind: EventDiscarded, Component: KindSingleflight})
	}
}

// end hands fn's outcome to the callers waiting for it, and reports
// whether none was left. The key is let go first, so that a caller who
// comes later calls fn again. When fn panicked, v is the zero T and err
// the *PanicError.
func (s *Singleflight[K, T]) end(f *flight[K, T], v T, err error) (abandoned bool) {
	s.mu.Lock()
	f.v, f.err, f.ended = v, err, true
	s.unlist(f)
	abandoned = f.waiters == 0
	done, leader := f.done, f.leader
	f.leader = nil
	s.mu.Unlock()
	if leader != nil {
		leader.ch <- struct{}{}
	}
	if done != nil {
		close(done)
	}
	if f.own != nil {
		f.own.cancel()
	}
	return abandoned
}

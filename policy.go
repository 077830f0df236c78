package resilience

import (
	"context"
	"fmt"
)

// Policy guards calls that return a T. Execute runs fn, perhaps more than
// once, perhaps not at all, and returns a result or an error. The policies
// of this package are safe for concurrent use, built once and shared.
type Policy[T any] interface {
	Execute(ctx context.Context, fn Func[T]) (T, error)
}

// PolicyFunc adapts an ordinary function to a [Policy], as http.HandlerFunc
// does for handlers.
type PolicyFunc[T any] func(ctx context.Context, fn Func[T]) (T, error)

// Execute calls f(ctx, fn). It panics if fn is nil, as [Do] does.
func (f PolicyFunc[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: PolicyFunc: fn is nil")
	}
	return f(ctx, fn)
}

// Guard is a shared, untyped gate in front of calls. One guard can protect
// calls of any result type through [Guarded]. The guards of the package are
// *[Breaker], *[Bulkhead], *[RateLimiter], the guard of a [KeyedRateLimiter]
// ([KeyedRateLimiter.Guard]), *[AdaptiveLimiter] and *[AdaptiveThrottler];
// a type of your own that implements Enter is a Guard too.
type Guard interface {
	// Enter admits the call or refuses it with an error. An admitted call is
	// followed by exactly one done(err) carrying the call's outcome.
	Enter(ctx context.Context) (done func(err error), err error)
}

// Guarded returns a policy that asks g before each call and tells g how the
// call went (a *[PanicError] when fn panics). Its Execute panics if fn is
// nil.
func Guarded[T any](g Guard) Policy[T] {
	if g == nil {
		panic("resilience: Guarded: guard is nil")
	}
	p := &guarded[T]{g: g}
	p.br, _ = g.(*Breaker)
	p.run = p.link(callsFn[T]())
	return p
}

// ticketGate is implemented by the package's own guards. It is Enter and done
// without the closure, so a guarded call allocates nothing: the ticket carries
// what done would have captured (a breaker's generation, say), and exit is
// given the call's context again, for the events the outcome causes. report
// says whether the call's EventCallEnded is reported, if the observer asks
// for outcomes (reportsOutcomes): not inside a composition whose outer layer
// reports the call.
type ticketGate interface {
	enter(ctx context.Context, report bool) (ticket uint64, err error)
	exit(ctx context.Context, ticket uint64, err error, report bool)
	reportsOutcomes() bool
}

// gateOf returns g as a ticketGate, if it is one that may be called so: a
// Keyed is one only when every guard it hands calls to is.
func gateOf(g Guard) (ticketGate, bool) {
	tg, ok := g.(ticketGate)
	if m, isMaybe := g.(interface{ gatedOK() bool }); ok && isMaybe && !m.gatedOK() {
		return nil, false
	}
	return tg, ok
}

type guarded[T any] struct {
	g   Guard
	br  *Breaker // g, when it is a breaker: Execute calls it directly
	run chain[T] // the guard around fn alone
}

// Execute calls a breaker's gate directly, with no closure or interface
// call between the caller, the gate and fn: a call through a Guarded
// breaker alone then costs little more than fn, and a refusal little more
// than a call that returns an error. The breaker's common cases are
// written out here and in callBreaker, where no call stands between them
// and fn: an untimed call admitted by a closed breaker, whose success in a
// closed state that counts nothing else ends any run of failures, and a
// refusal by an open breaker on the real clock, which Execute returns
// before setting up anything for fn (see Breaker.enter and Breaker.exit).
func (p *guarded[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Guarded: fn is nil")
	}
	b := p.br
	if b == nil {
		return p.run(ctx, fn)
	}
	view := b.view.Load()
	if view.admits {
		return callBreaker(ctx, b, view, view.ticket, fn)
	}
	var zero T
	if view.refusal != nil && !view.ready.Load() {
		return zero, view.refusal
	}
	ticket, err := b.enterOther(ctx)
	if err != nil {
		return zero, err
	}
	return callBreaker(ctx, b, nil, ticket, fn)
}

// callBreaker calls fn for a call b admitted with ticket, and tells b how
// it went. admitted is the view that admitted the call at once, if one
// did: a success it counts nothing but is settled here.
func callBreaker[T any](ctx context.Context, b *Breaker, admitted *breakerView, ticket uint64, fn Func[T]) (T, error) {
	finished := false
	defer func() {
		if !finished {
			r := recover()
			b.exit(ctx, ticket, newPanicError(r), true)
			if r != nil {
				panic(r)
			}
		}
	}()
	v, err := fn(ctx)
	finished = true
	if err == nil && admitted != nil && admitted.lean && b.view.Load() == admitted {
		if admitted.failures.Load() != 0 {
			admitted.failures.Store(0)
		}
		return v, nil
	}
	b.exit(ctx, ticket, err, true)
	return v, err
}

// link returns the guard as a layer around next. With one of the package's
// own guards the layer is a single closure that asks the gate directly.
func (p *guarded[T]) link(next chain[T]) chain[T] { return p.linkReport(next, true) }

// reportsOutcomes reports whether the guard reports an EventCallEnded per
// call: one of the package's guards whose observer asks for outcomes.
func (p *guarded[T]) reportsOutcomes() bool {
	g, ok := gateOf(p.g)
	return ok && g.reportsOutcomes()
}

func (p *guarded[T]) linkQuiet(next chain[T]) chain[T] { return p.linkReport(next, false) }

// linkReport is link; report says whether a guard of the package reports
// each call's EventCallEnded, if its observer asks for outcomes.
func (p *guarded[T]) linkReport(next chain[T], report bool) chain[T] {
	if g, ok := gateOf(p.g); ok {
		return func(ctx context.Context, fn Func[T]) (v T, err error) {
			ticket, err := g.enter(ctx, report)
			if err != nil {
				return v, err
			}
			finished := false
			defer func() {
				if !finished {
					r := recover()
					g.exit(ctx, ticket, newPanicError(r), report)
					if r != nil {
						panic(r)
					}
				}
			}()
			v, err = next(ctx, fn)
			finished = true
			g.exit(ctx, ticket, err, report)
			return v, err
		}
	}
	g := p.g
	return func(ctx context.Context, fn Func[T]) (v T, err error) {
		done, err := g.Enter(ctx)
		if err != nil {
			return v, err
		}
		finished := false
		defer func() {
			if !finished {
				r := recover()
				done(newPanicError(r))
				if r != nil {
					panic(r)
				}
			}
		}()
		v, err = next(ctx, fn)
		finished = true
		done(err)
		return v, err
	}
}

// DiscardOption is the option [WithDiscard] returns, for [Retry],
// [Timeout], [Hedge] and [NewSingleflight].
type DiscardOption struct{ f any }

// WithDiscard sets a hook, called exactly once, never waited for, for each
// result a policy obtained with a nil error and does not return: one
// [WithRetryIfResult] rejected, a [Timeout]'s fn's after the deadline, a
// losing [Hedge] attempt's, a [Singleflight] call's that every caller
// left. Close an *http.Response there. It panics if f is nil, and the
// policy if T is not its result type.
func WithDiscard[T any](f func(result T)) DiscardOption {
	if f == nil {
		panic("resilience: WithDiscard: hook is nil")
	}
	return DiscardOption{f: f}
}

func (o DiscardOption) applyRetry(c *retryConfig)     { c.discard = o.f }
func (o DiscardOption) applyTimeout(c *timeoutConfig) { c.discard = o.f }

// discardOf returns the discard hook given to the constructor fn as a
// func(T), panicking if it is of another type.
func discardOf[T any](fn string, f any) func(T) {
	if f == nil {
		return nil
	}
	d, ok := f.(func(T))
	if !ok {
		var zero T
		panic(fmt.Sprintf("resilience: %s: WithDiscard hook is %T, but the policy's result type is %T", fn, f, zero))
	}
	return d
}

// callDiscard hands v to the discard hook. Where no caller waits for the
// goroutine (detached: an abandoned Timeout's, a losing hedge's), a panic
// in the hook can reach no one: it is recovered and reported as an
// EventLatePanic rather than ending the program.
func callDiscard[T any](ctx context.Context, c *common, component string, hook func(T), v T, detached bool) {
	if !detached {
		hook(v)
		return
	}
	defer func() {
		if r := recover(); r != nil && c.reports() {
			c.observeDetached(ctx, Event{Kind: EventLatePanic, Component: component, Panic: newPanicError(r)})
		}
	}()
	hook(v)
}

package resilience

import "context"

// Policy guards calls that return a T. Execute runs fn, perhaps more than once,
// perhaps not at all, and returns a result or an error.
//
// The policies of this package are safe for concurrent use, and are meant to be
// built once and shared by every call they guard.
type Policy[T any] interface {
	Execute(ctx context.Context, fn Func[T]) (T, error)
}

// PolicyFunc adapts an ordinary function to a [Policy], as http.HandlerFunc
// does for handlers. Inside a [Compose], each PolicyFunc layer costs one small
// allocation per call (the closure that stands for the rest of the chain);
// the package's own policies cost none.
type PolicyFunc[T any] func(ctx context.Context, fn Func[T]) (T, error)

// Execute calls f(ctx, fn).
func (f PolicyFunc[T]) Execute(ctx context.Context, fn Func[T]) (T, error) { return f(ctx, fn) }

// Guard is a shared, untyped gate in front of calls: a [Breaker] or a
// [Bulkhead]. One guard can protect calls of any result type through
// [Guarded].
type Guard interface {
	// Enter admits the call or refuses it with an error. An admitted call is
	// followed by exactly one done(err) carrying the call's outcome.
	Enter(ctx context.Context) (done func(err error), err error)
}

// Guarded returns a policy that asks g before each call and tells g how the
// call went. When fn panics, g's done receives a *[PanicError] (so a
// bulkhead slot or a half-open probe is freed) and the panic continues with
// its original value.
func Guarded[T any](g Guard) Policy[T] {
	if g == nil {
		panic("resilience: Guarded: guard is nil")
	}
	p := &guarded[T]{g: g}
	p.gate, _ = g.(gate)
	return p
}

// gate is implemented by the package's own guards. It is Enter and done
// without the closure, so a guarded call allocates nothing: the ticket carries
// what done would have captured (a breaker's generation, say).
type gate interface {
	enter(ctx context.Context) (ticket uint64, err error)
	exit(ticket uint64, err error)
}

type guarded[T any] struct {
	g    Guard
	gate gate // g, when it is one of ours
}

func (p *guarded[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	return p.around(ctx, nil, fn)
}

func (p *guarded[T]) around(ctx context.Context, next *link[T], fn Func[T]) (v T, err error) {
	if p.gate != nil {
		return p.aroundGate(ctx, next, fn)
	}
	done, err := p.g.Enter(ctx)
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
	v, err = next.call(ctx, fn)
	finished = true
	done(err)
	return v, err
}

func (p *guarded[T]) aroundGate(ctx context.Context, next *link[T], fn Func[T]) (v T, err error) {
	ticket, err := p.gate.enter(ctx)
	if err != nil {
		return v, err
	}
	finished := false
	defer func() {
		if !finished {
			r := recover()
			p.gate.exit(ticket, newPanicError(r))
			if r != nil {
				panic(r)
			}
		}
	}()
	v, err = next.call(ctx, fn)
	finished = true
	p.gate.exit(ticket, err)
	return v, err
}

// stage is implemented by the package's own policies. around runs the policy
// with next.call(ctx, fn) as the guarded call, so a composition is a chain of
// direct calls with no closure per layer.
type stage[T any] interface {
	Policy[T]
	around(ctx context.Context, next *link[T], fn Func[T]) (T, error)
}

// link is one layer of a composition; a nil *link is the end of the chain,
// where fn itself is called.
type link[T any] struct {
	stage  stage[T]  // the layer, when it is one of ours
	policy Policy[T] // the layer, when it is not
	next   *link[T]
}

// call runs the chain from l inwards, ending in fn. It is small enough to
// be inlined into every stage, which keeps the chain one frame a layer.
func (l *link[T]) call(ctx context.Context, fn Func[T]) (T, error) {
	if l == nil {
		return fn(ctx)
	}
	if l.stage != nil {
		return l.stage.around(ctx, l.next, fn)
	}
	return l.callPolicy(ctx, fn)
}

// callPolicy runs a policy that is not one of ours, with the rest of the
// chain as its fn.
func (l *link[T]) callPolicy(ctx context.Context, fn Func[T]) (T, error) {
	next := l.next
	return l.policy.Execute(ctx, func(ctx context.Context) (T, error) { return next.call(ctx, fn) })
}

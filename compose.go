package resilience

import "context"

// Compose returns a policy that runs the given policies around each other,
// the first outermost: Compose(a, b, c).Execute(ctx, fn) is a(b(c(fn))). Nil
// entries are skipped; nested compositions are spliced in place. A call
// through a composition is one [EventCallEnded], from its outermost layer
// whose observer asks for outcomes; the layers inside report none (their
// other events are unchanged), so give that observer to the outermost
// layer. Its Execute panics if fn is nil.
func Compose[T any](policies ...Policy[T]) Policy[T] {
	var layers []Policy[T]
	for _, p := range policies {
		switch p := p.(type) {
		case nil:
		case *composition[T]:
			layers = append(layers, p.layers...)
		default:
			layers = append(layers, p)
		}
	}
	// The outermost layer that reports outcomes reports each call's; the
	// layers inside it report none, so that a call through the composition
	// is one duration and one outcome to an observer.
	outer := len(layers)
	for i, p := range layers {
		if r, ok := p.(reporter[T]); ok && r.reportsOutcomes() {
			outer = i
			break
		}
	}
	head := callsFn[T]()
	for i := len(layers) - 1; i >= 0; i-- {
		if r, ok := layers[i].(reporter[T]); ok && i > outer {
			head = r.linkQuiet(head)
			continue
		}
		head = linkPolicy(layers[i], head)
	}
	return &composition[T]{layers: layers, head: head}
}

// composition is what Compose returns: its layers, for splicing into
// another composition, and the chain they make.
type composition[T any] struct {
	layers []Policy[T]
	head   chain[T]
}

func (c *composition[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	if fn == nil {
		panic("resilience: Compose: fn is nil")
	}
	return c.head(ctx, fn)
}

// chain is the inside of a layer: calling it runs the layers within and then
// fn. The innermost chain is [callsFn]'s, which calls fn.
//
// fn is passed down the chain on every call, never captured: chains are
// built once, when a policy or a composition is made, and shared by every
// call, so a closure over one call's fn would allocate on every call and
// could hand one caller's fn to another.
type chain[T any] func(ctx context.Context, fn Func[T]) (T, error)

// callsFn returns the chain that calls fn and nothing else.
func callsFn[T any]() chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return fn(ctx) }
}

// linker is implemented by the package's own policies. link returns the policy
// as a layer around next: a closure that does the policy's work and calls
// next directly. [Compose] links its layers once, when it is built, so a call
// through a composition costs one closure call a layer, with no interface
// call, wrapper or allocation.
type linker[T any] interface {
	Policy[T]
	link(next chain[T]) chain[T]
}

// reporter is implemented by the package's policies and guarded layers that
// report an [EventCallEnded] per call when their observer asks for outcomes.
// linkQuiet returns the layer around next as link does, without that
// report: Compose links so the layers inside the one that reports the call.
type reporter[T any] interface {
	linker[T]
	reportsOutcomes() bool
	linkQuiet(next chain[T]) chain[T]
}

// linkPolicy returns p as a layer around next. A policy that is not one of
// ours gets the rest of the chain as its fn, a closure made on each call.
// Inside a layer, next is called directly: chains are closures, and the
// compiler does not inline helpers into closures that it copies when it
// inlines link.
func linkPolicy[T any](p Policy[T], next chain[T]) chain[T] {
	if s, ok := p.(linker[T]); ok {
		return s.link(next)
	}
	return func(ctx context.Context, fn Func[T]) (T, error) {
		return p.Execute(ctx, func(ctx context.Context) (T, error) { return next(ctx, fn) })
	}
}

package resilience

import "context"

// Compose returns a policy that runs the given policies around each other,
// the first outermost: Compose(a, b, c).Execute(ctx, fn) is a(b(c(fn))).
// Nil entries are skipped, and with no policies fn is called directly.
// Compositions nest: a composition given to Compose is spliced in place.
//
// The order matters. The usual one is Timeout (a deadline for the whole call,
// waits included), then Retry, then the guards: Guarded(breaker) inside the
// retry so that each attempt is recorded, and Guarded(bulkhead) innermost so
// that a slot is held only while fn runs.
//
// Composing costs nothing per call: the package's own policies are linked by
// direct calls, so a composition of policies that allocate nothing allocates
// nothing.
func Compose[T any](policies ...Policy[T]) Policy[T] {
	var layers []Policy[T]
	for _, p := range policies {
		switch p := p.(type) {
		case nil:
		case *composition[T]:
			for l := p.head; l != nil; l = l.next {
				layers = append(layers, l.policy)
			}
		default:
			layers = append(layers, p)
		}
	}
	var head *link[T]
	for i := len(layers) - 1; i >= 0; i-- {
		l := &link[T]{policy: layers[i], next: head}
		l.stage, _ = layers[i].(stage[T])
		head = l
	}
	return &composition[T]{head: head}
}

// composition is what Compose returns.
type composition[T any] struct {
	head *link[T]
}

func (c *composition[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	return c.head.call(ctx, fn)
}

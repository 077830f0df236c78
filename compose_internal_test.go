package resilience

import (
	"context"
	"fmt"
	"testing"
)

// passThrough is the smallest policy of the package's own kind: it calls the
// rest of the chain and nothing else.
type passThrough[T any] struct{}

func (passThrough[T]) Execute(ctx context.Context, fn Func[T]) (T, error) {
	return fn(ctx)
}

func (passThrough[T]) link(next chain[T]) chain[T] {
	return func(ctx context.Context, fn Func[T]) (T, error) { return next(ctx, fn) }
}

// openGate admits every call and remembers nothing.
type openGate struct{}

func (openGate) Enter(context.Context) (func(error), error)  { return func(error) {}, nil }
func (openGate) enter(context.Context, bool) (uint64, error) { return 0, nil }
func (openGate) exit(context.Context, uint64, error, bool)   {}
func (openGate) reportsOutcomes() bool                       { return false }

func layers(n int) []Policy[int] {
	ps := make([]Policy[int], n)
	for i := range ps {
		ps[i] = passThrough[int]{}
	}
	return ps
}

// TestComposeAllocatesNothing pins the promise that composing the package's
// own policies costs no allocation per call.
func TestComposeAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		p    Policy[int]
	}{
		{"empty", Compose[int]()},
		{"one layer", Compose(layers(1)...)},
		{"eight layers", Compose(layers(8)...)},
		{"nested", Compose(Compose(layers(2)...), nil, Compose(layers(3)...))},
		{"guarded gate", Compose(passThrough[int]{}, Guarded[int](openGate{}))},
		{"zero timeout", Compose(Timeout[int](0), passThrough[int]{})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := tc.p.Execute(ctx, okFunc); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("Execute allocates %v times per call, want 0", allocs)
			}
		})
	}
}

// BenchmarkCompose shows the cost of a layer: compare 1, 4 and 8 layers.
func BenchmarkCompose(b *testing.B) {
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Do(ctx, nil, okFunc)
		}
	})
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("layers=%d", n), func(b *testing.B) {
			p := Compose(layers(n)...)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Do(ctx, p, okFunc)
			}
		})
	}
	b.Run("guarded gate", func(b *testing.B) {
		p := Compose(Guarded[int](openGate{}))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Do(ctx, p, okFunc)
		}
	})
}

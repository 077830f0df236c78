package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

// clientCall does what a network client does with the context it is given:
// it derives a context of its own for the request and checks it.
func clientCall(ctx context.Context) (int, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := cctx.Err(); err != nil {
		return 0, err
	}
	return 1, nil
}

// realistic is the usual composition: Timeout, Retry, a breaker and a
// bulkhead.
func realistic(opts ...resilience.TimeoutOption) resilience.Policy[int] {
	return resilience.Compose(
		resilience.Timeout[int](time.Second, opts...),
		resilience.Retry[int](),
		resilience.Guarded[int](resilience.NewBreaker()),
		resilience.Guarded[int](resilience.NewBulkhead(64)),
	)
}

// BenchmarkTimeoutRealistic measures a timeout in the setting it lives in:
// "background" is a background context and a call that ignores its
// context; "request" is a server request's cancelable context and a call
// that derives a context of its own, as every network client does. Each
// runs through the timeout alone, beside context.WithTimeout, and through
// the usual composition, serially and in parallel.
func BenchmarkTimeoutRealistic(b *testing.B) {
	cases := []struct {
		name string
		fn   resilience.Func[int]
	}{
		{"background", okFunc},
		{"request", clientCall},
	}
	for _, c := range cases {
		parent := func() (context.Context, context.CancelFunc) {
			if c.name == "background" {
				return context.Background(), func() {}
			}
			return context.WithCancel(context.Background())
		}
		b.Run(c.name+"/context.WithTimeout", func(b *testing.B) {
			ctx, cancel := parent()
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				tctx, cancel := context.WithTimeout(ctx, time.Second)
				_, _ = c.fn(tctx)
				cancel()
			}
		})
		for _, mode := range []struct {
			name string
			opts []resilience.TimeoutOption
		}{{"default", nil}, {"cooperative", []resilience.TimeoutOption{resilience.WithTimeoutCooperative()}}} {
			alone := resilience.Timeout[int](time.Second, mode.opts...)
			composed := realistic(mode.opts...)
			for _, p := range []struct {
				name string
				p    resilience.Policy[int]
			}{{"timeout", alone}, {"composed", composed}} {
				b.Run(c.name+"/"+p.name+"/"+mode.name, func(b *testing.B) {
					ctx, cancel := parent()
					defer cancel()
					b.ReportAllocs()
					for b.Loop() {
						_, _ = p.p.Execute(ctx, c.fn)
					}
				})
			}
			b.Run(c.name+"/composed-parallel/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx, cancel := parent()
					defer cancel()
					for pb.Next() {
						_, _ = composed.Execute(ctx, c.fn)
					}
				})
			})
		}
	}
}

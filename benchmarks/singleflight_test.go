package benchmarks

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/faf87a20/resilience"
)

// The Singleflight rows: ours beside golang.org/x/sync's singleflight.Group
// in one run. x/sync's Do takes no context, so it stands beside ours with
// context.Background(), whose first caller runs fn itself as x/sync's
// does; "resilience-cancellable" is ours with a context that can end,
// where fn runs on a parked worker so that every caller can leave at once.

var (
	sfFast = func(context.Context) (int, error) { return 1, nil }
	sfSlow = func(context.Context) (int, error) { time.Sleep(10 * time.Microsecond); return 1, nil }
)

// sfCallers are the columns of a Singleflight row: how each library calls
// fn for key "k", through a group made for the row.
func sfCallers(b *testing.B, fn func(context.Context) (int, error)) []struct {
	name string
	do   func() (int, error)
} {
	ours := resilience.NewSingleflight[string, int]()
	oursCancellable := resilience.NewSingleflight[string, int]()
	var group singleflight.Group
	ctx := b.Context()
	plain := func() (any, error) { return fn(context.Background()) }
	return []struct {
		name string
		do   func() (int, error)
	}{
		{"resilience", func() (int, error) { return ours.Do(context.Background(), "k", fn) }},
		{"resilience-cancellable", func() (int, error) { return oursCancellable.Do(ctx, "k", fn) }},
		{"x-sync", func() (int, error) {
			v, err, _ := group.Do("k", plain)
			return v.(int), err
		}},
	}
}

// BenchmarkSingleflightLeader: one caller at a time, each starting a call
// of a fn that returns at once.
func BenchmarkSingleflightLeader(b *testing.B) {
	for _, c := range sfCallers(b, sfFast) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.do()
			}
		})
	}
}

// BenchmarkSingleflightParallel: callers on every core, one key, a fn that
// returns at once (x/sync's own BenchmarkDo).
func BenchmarkSingleflightParallel(b *testing.B) {
	for _, c := range sfCallers(b, sfFast) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = c.do()
				}
			})
		})
	}
}

// BenchmarkSingleflightJoiners: 100 callers a core, one key, a fn that
// takes 10µs: most calls join one in flight.
func BenchmarkSingleflightJoiners(b *testing.B) {
	for _, c := range sfCallers(b, sfSlow) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(100)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = c.do()
				}
			})
		})
	}
}

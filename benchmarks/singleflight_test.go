package benchmarks

import (
	"context"
	"sync"
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

// sfFloor is the least that a call any caller can leave costs the caller
// who starts it, in a Singleflight of this shape, beside which
// "resilience-cancellable" is measured: an entry for the key in a map
// under a lock, a record of the call, a context for fn that keeps the
// caller's values and ends when the last caller leaves
// (context.WithCancel of context.WithoutCancel: three allocations), and
// fn handed to a parked goroutine, for the caller must be free to leave
// while fn runs, with the caller waiting for the result or for the end of
// its own context. It reuses its goroutine and the channel it answers on,
// and does nothing else: no other caller can join it, none can leave, and
// one caller at a time may use it.
type sfFloor struct {
	mu    sync.Mutex
	calls map[string]*sfFloorCall
	tasks chan *sfFloorCall
	reply chan struct{}
}

type sfFloorCall struct {
	ctx context.Context
	fn  func(context.Context) (int, error)
	v   int
	err error
}

func newSFFloor(b *testing.B) *sfFloor {
	f := &sfFloor{calls: map[string]*sfFloorCall{}, tasks: make(chan *sfFloorCall), reply: make(chan struct{}, 1)}
	go func() {
		for c := range f.tasks {
			c.v, c.err = c.fn(c.ctx)
			f.mu.Lock()
			delete(f.calls, "k")
			f.mu.Unlock()
			f.reply <- struct{}{}
		}
	}()
	b.Cleanup(func() { close(f.tasks) })
	return f
}

func (f *sfFloor) do(ctx context.Context, fn func(context.Context) (int, error)) (int, error) {
	c := &sfFloorCall{fn: fn}
	f.mu.Lock()
	f.calls["k"] = c
	f.mu.Unlock()
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	c.ctx = fctx
	f.tasks <- c
	select {
	case <-f.reply:
		return c.v, c.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

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
// of a fn that returns at once, beside the floor of a call the caller can
// leave (sfFloor).
func BenchmarkSingleflightLeader(b *testing.B) {
	b.Run("cancellable-floor", func(b *testing.B) {
		f := newSFFloor(b)
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = f.do(ctx, sfFast)
		}
	})
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

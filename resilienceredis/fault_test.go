package resilienceredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// recorder keeps the kinds of the events it observes.
type recorder struct {
	mu    sync.Mutex
	kinds []resilience.EventKind
}

func (r *recorder) Observe(_ context.Context, e resilience.Event) {
	if e.Kind == resilience.EventRefused {
		return
	}
	r.mu.Lock()
	r.kinds = append(r.kinds, e.Kind)
	r.mu.Unlock()
}

func (r *recorder) got() []resilience.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]resilience.EventKind(nil), r.kinds...)
}

const (
	faultTimeout = 50 * time.Millisecond
	slack        = 2 * time.Second // generous: the machine may be busy
)

// burstOfCalls makes calls from several goroutines and checks that each is
// answered within the timeout (and slack), counting the answers by kind.
func burstOfCalls(t *testing.T, l *resilienceredis.Limiter, key string) (admitted, limited, unavailable int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				start := time.Now()
				err := l.Allow(ctxBG, key)
				took := time.Since(start)
				mu.Lock()
				switch {
				case err == nil:
					admitted++
				case errors.Is(err, resilience.ErrRateLimited):
					limited++
				case errors.Is(err, resilienceredis.ErrUnavailable):
					unavailable++
				default:
					t.Errorf("unexpected error %v", err)
				}
				mu.Unlock()
				if took > faultTimeout+slack {
					t.Errorf("a call took %v, past the timeout of %v", took, faultTimeout)
				}
			}
		})
	}
	wg.Wait()
	return
}

// waitRecovered makes calls until the limiter has recovered, for at most a
// few seconds.
func waitRecovered(t *testing.T, l *resilienceredis.Limiter, key string) {
	t.Helper()
	for range 250 {
		_ = l.Allow(ctxBG, key)
		if !l.Degraded() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the limiter did not recover")
}

// TestFaults: a server paused (slow) and killed (down), then restarted on
// the same port. Every call is answered within the timeout; the fail-open
// limiter answers from its local share, the fail-closed one refuses with
// ErrUnavailable; both degrade and recover by themselves, with events.
// The same with go-redis's default options (the script runs in a worker)
// and with ContextTimeoutEnabled (on the caller's goroutine).
func TestFaults(t *testing.T) {
	for _, ctxTimeout := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled %v", ctxTimeout), func(t *testing.T) { testFaults(t, ctxTimeout) })
	}
}

func testFaults(t *testing.T, ctxTimeout bool) {
	srv, err := startServer("")
	require.NoError(t, err)
	defer func() { srv.stop() }()
	c := redis.NewClient(&redis.Options{Addr: srv.addr, ContextTimeoutEnabled: ctxTimeout})
	defer c.Close()
	var open, closed recorder
	lo := resilienceredis.NewLimiter(c, 0.1, 4, // the local share refills a token every 20 s: none in the test
		resilienceredis.WithTimeout(faultTimeout),
		resilienceredis.WithProbeInterval(50*time.Millisecond), resilienceredis.WithFailOpen(0.5),
		resilienceredis.WithObserver(&open), resilienceredis.WithName("open"))
	lc := resilienceredis.NewLimiter(c, 0.1, 4,
		resilienceredis.WithTimeout(faultTimeout),
		resilienceredis.WithProbeInterval(50*time.Millisecond), resilienceredis.WithFailClosed(),
		resilienceredis.WithObserver(&closed))

	// Healthy.
	a, _, u := burstOfCalls(t, lo, "open")
	require.Equal(t, 4, a, "the shared burst")
	require.Zero(t, u)
	require.False(t, lo.Degraded())

	// Slow: the server is paused.
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGSTOP))
	a, lim, u := burstOfCalls(t, lo, "open-slow")
	require.True(t, lo.Degraded())
	require.Zero(t, u)
	require.Equal(t, 2, a, "the local share of the burst: 4 × 0.5")
	require.Equal(t, 18, lim)
	_, _, u = burstOfCalls(t, lc, "closed-slow")
	require.Equal(t, 20, u, "fail closed refuses everything")
	require.True(t, lc.Degraded())

	// Back.
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGCONT))
	waitRecovered(t, lo, "open-back")
	waitRecovered(t, lc, "closed-back")

	// Down: killed, then restarted on the same port.
	srv.stop()
	a, _, u = burstOfCalls(t, lo, "open-down")
	require.Zero(t, u)
	require.Equal(t, 2, a)
	_, _, u = burstOfCalls(t, lc, "closed-down")
	require.Equal(t, 20, u)
	srv, err = startServer(srv.addr)
	require.NoError(t, err)
	waitRecovered(t, lo, "open-up")
	waitRecovered(t, lc, "closed-up")
	require.NoError(t, lo.Allow(ctxBG, "after"), "decisions come from Redis again")

	want := []resilience.EventKind{resilience.EventDegraded, resilience.EventRecovered, resilience.EventDegraded, resilience.EventRecovered}
	require.Equal(t, want, open.got())
	require.Equal(t, want, closed.got())
}

// TestCallerContext: a caller's own cancellation is its answer, not a
// fault of Redis.
func TestCallerContext(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: sharedAddr})
	defer c.Close()
	var r recorder
	l := resilienceredis.NewLimiter(c, 10, 1, resilienceredis.WithObserver(&r))
	ctx, cancel := context.WithCancel(ctxBG)
	cancel()
	require.ErrorIs(t, l.Allow(ctx, t.Name()), context.Canceled)
	require.False(t, l.Degraded())
	require.Empty(t, r.got())
}

package resilienceredis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/internal/sat"
)

// health is whether a Limiter reaches Redis, and when it may try again.
type health struct {
	degraded  atomic.Bool
	nextProbe atomic.Int64 // unix nanoseconds: when the next probe may start
	probe     time.Duration
	mu        sync.Mutex // guards err and since
	err       error
	since     time.Time
}

// tryProbe reports whether this call may ask Redis while degraded: one
// call per probe interval may.
func (l *Limiter) tryProbe() bool {
	now := time.Now().UnixNano()
	next := l.nextProbe.Load()
	return now >= next && l.nextProbe.CompareAndSwap(next, l.probeAfter(now))
}

// probeAfter returns when the next probe may start after one at now, in
// unix nanoseconds: the largest int64 for an interval that ends past it,
// rather than a sum that wraps to a time long past.
func (l *Limiter) probeAfter(now int64) int64 {
	return int64(sat.Add(time.Duration(now), l.probe))
}

// fault records that Redis failed, degrading the limiter if it was not.
func (l *Limiter) fault(ctx context.Context, err error) {
	l.nextProbe.Store(l.probeAfter(time.Now().UnixNano()))
	l.mu.Lock()
	l.err = err
	first := !l.degraded.Load()
	if first {
		l.since = time.Now()
		l.degraded.Store(true)
	}
	l.mu.Unlock()
	if first && l.observer != nil {
		l.observer.Observe(ctx, resilience.Event{Kind: resilience.EventDegraded, Component: component, Name: l.name, Err: err})
	}
}

// healthy records that Redis answered, recovering the limiter if it was
// degraded.
func (l *Limiter) healthy(ctx context.Context) {
	if !l.degraded.Load() {
		return
	}
	l.mu.Lock()
	was := l.degraded.Load()
	l.degraded.Store(false)
	since := l.since
	l.err = nil
	l.mu.Unlock()
	if was && l.observer != nil {
		l.observer.Observe(ctx, resilience.Event{Kind: resilience.EventRecovered, Component: component, Name: l.name, Duration: time.Since(since)})
	}
}

// lastErr returns the error that degraded the limiter.
func (l *Limiter) lastErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

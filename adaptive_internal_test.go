package resilience

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

func TestGradientUpdate(t *testing.T) {
	const ms = time.Millisecond
	base := func() gradient {
		return gradient{floor: 1, ceiling: 1000, tolerance: 1.25, window: 100 * ms, probeEvery: 30 * time.Second,
			probeSamples: 50, minSamples: 20, limit: 100, baseline: 10 * ms, nextProbe: time.Hour}
	}
	tests := []struct {
		name      string
		g         func() gradient
		s         windowStats
		wantLimit float64
		wantWhy   error
		wantBase  time.Duration
		probing   bool
	}{
		{"no queue, busy: up by a quarter and the root", base, windowStats{n: 20, sum: 200 * ms, busy: true},
			125 + math.Sqrt(125), reasonLatency, 10 * ms, false},
		{"no queue, idle: stays", base, windowStats{n: 20, sum: 200 * ms},
			100, reasonLatency, 10 * ms, false},
		{"twice as slow: to 62.5 and the root", base, windowStats{n: 20, sum: 400 * ms, busy: true},
			62.5 + math.Sqrt(62.5), reasonLatency, 10 * ms, false},
		{"ten times as slow: halved at most", base, windowStats{n: 20, sum: 2000 * ms, busy: true},
			50 + math.Sqrt(50), reasonLatency, 10 * ms, false},
		{"drops at no-load latency: cut by a tenth", base, windowStats{n: 20, drops: 1, sum: 200 * ms, busy: true},
			90, reasonDrops, 10 * ms, false},
		{"faster than the baseline: the baseline falls", base, windowStats{n: 20, sum: 100 * ms, busy: true},
			125 + math.Sqrt(125), reasonLatency, 5 * ms, false},
		{"floor holds", func() gradient { g := base(); g.limit, g.floor = 2, 2; return g }, windowStats{n: 20, sum: 2000 * ms, busy: true},
			2, reasonLatency, 10 * ms, false},
		{"ceiling holds", func() gradient { g := base(); g.ceiling = 110; return g }, windowStats{n: 20, sum: 200 * ms, busy: true},
			110, reasonLatency, 10 * ms, false},
		{"probe due", func() gradient { g := base(); g.nextProbe = 0; return g }, windowStats{n: 20, sum: 200 * ms, busy: true},
			125 + math.Sqrt(125), reasonProbe, 10 * ms, true},
		{"probe due at this very window", func() gradient { g := base(); g.nextProbe = time.Second; return g }, windowStats{n: 20, sum: 200 * ms, busy: true},
			125 + math.Sqrt(125), reasonProbe, 10 * ms, true},
		{"drops ten times as slow: the latency's deeper cut holds", base, windowStats{n: 20, drops: 1, sum: 2000 * ms, busy: true},
			50 + math.Sqrt(50), reasonLatency, 10 * ms, false},
		{"drops, the latency cutting exactly a tenth: the latency's reason", func() gradient { g := base(); g.limit = 3.125; return g },
			windowStats{n: 20, drops: 1, sum: 2000 * ms, busy: true}, 2.8125, reasonLatency, 10 * ms, false}, // 1.5625 + √1.5625 = 0.9 · 3.125
		{"probe ends: the baseline is its mean, even higher", func() gradient { g := base(); g.probing = true; return g },
			windowStats{n: 50, sum: 1000 * ms}, 100, reasonProbeEnded, 20 * ms, false},
		{"no samples", base, windowStats{}, 100, nil, 10 * ms, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g()
			why := g.update(time.Second, tc.s)
			if math.Abs(g.limit-tc.wantLimit) > 1e-9 || why != tc.wantWhy || g.baseline != tc.wantBase || g.probing != tc.probing {
				t.Errorf("update = limit %v, %v, baseline %v, probing %v; want %v, %v, %v, %v",
					g.limit, why, g.baseline, g.probing, tc.wantLimit, tc.wantWhy, tc.wantBase, tc.probing)
			}
		})
	}
}

// TestGradientPublished: a probe halves the limit calls see, except the
// first, which measures under the initial limit.
func TestGradientPublished(t *testing.T) {
	tests := []struct {
		name string
		g    gradient
		want int64
	}{
		{"steady", gradient{floor: 1, limit: 41.7, baseline: 1}, 41},
		{"probing", gradient{floor: 1, limit: 41.7, baseline: 1, probing: true}, 20},
		{"probing at the floor", gradient{floor: 30, limit: 41.7, baseline: 1, probing: true}, 30},
		{"first probe", gradient{floor: 1, limit: 20, probing: true}, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.g.published(); got != tc.want {
				t.Errorf("published() = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAdaptiveLimiterReleaseHandsOver: a call that comes while a release
// has freed a slot and not yet handed it to the waiters queues behind the
// waiters of its priority: the slot is theirs, the oldest first. The test
// stops the release between its two steps, which a real one runs a few
// instructions apart.
func TestAdaptiveLimiterReleaseHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewAdaptiveLimiter(WithAdaptiveInitial(1), WithAdaptiveWait(time.Hour))
		if _, err := l.Enter(context.Background()); err != nil { // the slot the release frees
			t.Fatal(err)
		}
		type result struct {
			done func(error)
			err  error
		}
		enter := func() chan result {
			c := make(chan result, 1)
			go func() {
				done, err := l.Enter(context.Background())
				c <- result{done, err}
			}()
			synctest.Wait()
			return c
		}
		first := enter()
		l.state.Add(-1) // the release's first step: the slot is free
		second := enter()
		if got := l.Queued(); got != 2 {
			t.Fatalf("Queued() = %d with a slot freed and not handed over, want 2: the second call took it", got)
		}
		l.mu.Lock() // the release's second step
		l.admitWaiters()
		l.mu.Unlock()
		synctest.Wait()
		r := <-first
		if r.err != nil {
			t.Fatalf("the first waiter: %v", r.err)
		}
		r.done(nil)
		synctest.Wait()
		r = <-second
		if r.err != nil {
			t.Fatalf("the second waiter: %v", r.err)
		}
		r.done(nil)
		if l.InFlight() != 0 || l.Queued() != 0 {
			t.Errorf("InFlight() = %d, Queued() = %d at the end, want 0, 0", l.InFlight(), l.Queued())
		}
	})
}

// TestAdaptiveLimiterRiseAdmitsWaiters: a window that raises the limit
// admits the calls waiting at once, as many as the new limit has room
// for, without waiting for a call to end. The test closes a window whose
// samples are as fast as the baseline on a busy limiter (a rise by the
// tolerance and a root) while every slot is held and two calls wait.
func TestAdaptiveLimiterRiseAdmitsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewAdaptiveLimiter(WithAdaptiveInitial(2), WithAdaptiveWait(time.Hour))
		critical := WithPriority(context.Background(), PriorityCritical)
		for range 2 {
			if _, err := l.Enter(critical); err != nil {
				t.Fatal(err)
			}
		}
		results := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := l.Enter(critical) // the slot stays held
				results <- err
			}()
		}
		synctest.Wait()
		if got := l.Queued(); got != 2 {
			t.Fatalf("Queued() = %d with every slot held, want 2", got)
		}
		const latency = 10 * time.Millisecond
		l.g.probing, l.g.baseline, l.g.recent, l.g.windowFrom, l.g.nextProbe = false, latency, latency, 0, time.Hour
		l.n.Store(l.g.minSamples)
		l.sum.Store(l.g.minSamples * int64(latency))
		l.busy.Store(true)
		l.closeWindow(context.Background(), int64(time.Minute))
		if got := l.Limit(); got <= 3 {
			t.Fatalf("Limit() = %d after a fast, busy window, want a rise past 3", got)
		}
		synctest.Wait()
		for range 2 {
			if err := <-results; err != nil {
				t.Errorf("a waiter: %v", err)
			}
		}
		if got := l.Queued(); got != 0 {
			t.Errorf("Queued() = %d after the rise, want 0", got)
		}
	})
}

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
			minSamples: 20, limit: 100, baseline: 10 * ms, nextProbe: time.Hour, measuredAt: 100, noProbe: time.Hour}
	}
	soon := func(g gradient) gradient { g.noProbe = 0; return g }
	tests := []struct {
		name      string
		g         func() gradient
		s         windowStats
		wantLimit float64
		wantWhy   error
		wantBase  time.Duration
		probing   bool
	}{
		{"no queue, busy: up by a quarter and the root", base, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true, bound: true},
			125 + math.Sqrt(125), reasonLatency, 10 * ms, false},
		{"slow, busy, nobody turned away: stays, the server queues by itself", base, windowStats{n: 20, sum: 400 * ms, p50: 20 * ms, busy: true},
			100, reasonLatency, 10 * ms, false},
		{"no queue, busy, nobody turned away: up", base, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true},
			125 + math.Sqrt(125), reasonLatency, 10 * ms, false},
		{"no queue, idle: stays", base, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms},
			100, nil, 10 * ms, false},
		{"slow, idle: stays, the limit did not make the latency", base, windowStats{n: 20, sum: 2000 * ms, p50: 100 * ms},
			100, nil, 10 * ms, false},
		{"idle with drops: cut by a tenth", base, windowStats{n: 20, drops: 1, sum: 200 * ms, p50: 10 * ms},
			90, reasonDrops, 10 * ms, false},
		{"twice as slow: to 62.5 and the root", base, windowStats{n: 20, sum: 400 * ms, p50: 20 * ms, busy: true, bound: true},
			62.5 + math.Sqrt(62.5), reasonLatency, 10 * ms, false},
		{"ten times as slow: halved at most", base, windowStats{n: 20, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true},
			50 + math.Sqrt(50), reasonLatency, 10 * ms, false},
		{"drops at no-load latency: cut by a tenth", base, windowStats{n: 20, drops: 1, sum: 200 * ms, p50: 10 * ms, busy: true, bound: true},
			90, reasonDrops, 10 * ms, false},
		{"at the cap, as slow as the baseline: the cap moves", func() gradient { g := base(); g.limit = 190; return g }, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true, bound: true},
			200, reasonLatency, 10 * ms, false},
		{"faster than the baseline allows, once: the limit holds, no probe", func() gradient { return soon(base()) }, windowStats{n: 20, sum: 100 * ms, p50: 5 * ms, busy: true, bound: true},
			100, reasonLatency, 10 * ms, false},
		{"faster than the baseline allows, twice in a row: a probe", func() gradient { g := soon(base()); g.stale = 1; return g }, windowStats{n: 20, sum: 100 * ms, p50: 5 * ms, busy: true, bound: true},
			100, reasonProbe, 10 * ms, true},
		{"halved since the baseline was measured: a probe", func() gradient { g := soon(base()); g.limit = 60; return g },
			windowStats{n: 20, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true}, 30 + math.Sqrt(30), reasonProbe, 10 * ms, true},
		{"moved, but too soon after the last probe", func() gradient { g := base(); g.limit = 60; return g }, windowStats{n: 20, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true},
			30 + math.Sqrt(30), reasonLatency, 10 * ms, false},
		{"moved by less than half: no probe", func() gradient { return soon(base()) }, windowStats{n: 20, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true},
			50 + math.Sqrt(50), reasonLatency, 10 * ms, false},
		{"floor holds", func() gradient { g := base(); g.limit, g.floor = 2, 2; return g }, windowStats{n: 20, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true},
			2, reasonLatency, 10 * ms, false},
		{"ceiling holds", func() gradient { g := base(); g.ceiling = 110; return g }, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true, bound: true},
			110, reasonLatency, 10 * ms, false},
		{"probe due", func() gradient { g := base(); g.nextProbe = 0; return g }, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true, bound: true},
			125 + math.Sqrt(125), reasonProbe, 10 * ms, true},
		{"probe due, but the limit has turned nobody away since the last", func() gradient { g := base(); g.nextProbe = 0; return g }, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true},
			125 + math.Sqrt(125), reasonLatency, 10 * ms, false},
		{"probe due at this very window", func() gradient { g := base(); g.nextProbe = time.Second; return g }, windowStats{n: 20, sum: 200 * ms, p50: 10 * ms, busy: true, bound: true},
			125 + math.Sqrt(125), reasonProbe, 10 * ms, true},
		{"drops ten times as slow: the latency's deeper cut holds", base, windowStats{n: 20, drops: 1, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true},
			50 + math.Sqrt(50), reasonLatency, 10 * ms, false},
		{"drops, the latency cutting exactly a tenth: the latency's reason", func() gradient { g := base(); g.limit, g.measuredAt = 3.125, 3.125; return g },
			windowStats{n: 20, drops: 1, sum: 2000 * ms, p50: 100 * ms, busy: true, bound: true}, 2.8125, reasonLatency, 10 * ms, false}, // 1.5625 + √1.5625 = 0.9 · 3.125
		{"probe ends: the baseline is its mean, even higher", func() gradient { g := base(); g.probing = true; return g },
			windowStats{n: 50, sum: 1000 * ms, p50: 20 * ms}, 100, reasonProbeEnded, 20 * ms, false},
		{"probe ends: the baseline is its mean, even lower", func() gradient { g := base(); g.probing = true; return g },
			windowStats{n: 50, sum: 250 * ms, p50: 5 * ms}, 100, reasonProbeEnded, 5 * ms, false},
		{"probe ends near the baseline: a quarter of the way to its mean", func() gradient { g := base(); g.probing = true; return g },
			windowStats{n: 50, sum: 600 * ms, p50: 12 * ms}, 100, reasonProbeEnded, 10500 * time.Microsecond, false},
		{"no samples", base, windowStats{}, 100, nil, 10 * ms, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g()
			why := g.update(time.Second, tc.s)
			if tc.name == "at the cap, as slow as the baseline: the cap moves" && g.measuredAt != 200 {
				t.Errorf("measuredAt = %v, want 200", g.measuredAt)
			}
			if math.Abs(g.limit-tc.wantLimit) > 1e-9 || why != tc.wantWhy || g.baseline != tc.wantBase || g.probing != tc.probing {
				t.Errorf("update = limit %v, %v, baseline %v, probing %v; want %v, %v, %v, %v",
					g.limit, why, g.baseline, g.probing, tc.wantLimit, tc.wantWhy, tc.wantBase, tc.probing)
			}
		})
	}
}

// TestGradientProbeEnd: a probe's samples are the calls it admits until
// probeTo (five windows at most; the limiter brings it forward at its
// hundredth sample), and it closes once every one of them is back, so that
// slow calls still running do not leave its mean too low; a call that
// hangs holds it up to twice the longer of a span and the longest sample
// after probeTo. With too few samples by probeTo it takes samples for
// another span. After it, the limit it measured at is the one a moved
// limit is measured against, and a moved limit may start the next probe
// only probeGap windows on.
func TestGradientProbeEnd(t *testing.T) {
	const ms = time.Millisecond
	probe := func() gradient {
		g := gradient{floor: 1, ceiling: 1000, tolerance: 1.25, window: 100 * ms, probeEvery: 30 * time.Second, minSamples: 20, limit: 40, baseline: 10 * ms}
		g.startProbe(time.Second)
		return g
	}
	if g, want := probe(), time.Second+probeWindows*100*ms; g.probeTo != want {
		t.Fatalf("probeTo = %v, want %v", g.probeTo, want)
	}
	tests := []struct {
		name    string
		now     time.Duration
		n       int64
		longest time.Duration
		pending int64
		want    bool
	}{
		{"still taking samples", 1100 * ms, 50, 20 * ms, 0, false},
		{"samples out", 1500 * ms, 50, 20 * ms, 3, false},
		{"every sample back", 1500 * ms, 50, 20 * ms, 0, true},
		{"a call out, not yet two spans on", 1699 * ms, 50, 40 * ms, 1, false},
		{"a call out two spans on: it hangs", 1700 * ms, 50, 40 * ms, 1, true},
		{"a call out, not yet twice the longest on", 1700 * ms, 50, 300 * ms, 1, false},
		{"too few samples", 1500 * ms, 10, 20 * ms, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := probe()
			if got := g.closes(tc.now, tc.n, tc.longest, tc.pending); got != tc.want {
				t.Errorf("closes(%v, %d, %v, %d) = %v, want %v", tc.now, tc.n, tc.longest, tc.pending, got, tc.want)
			}
		})
	}
	g := probe()
	g.closes(1500*ms, 10, 20*ms, 0)
	if g.probeTo != 1600*ms || g.closes(1599*ms, 20, 20*ms, 0) || !g.closes(1600*ms, 20, 20*ms, 0) {
		t.Errorf("with too few samples: probeTo %v, want 1.6s, and a close there", g.probeTo)
	}
	g.update(2*time.Second, windowStats{n: 40, sum: 800 * ms, p50: 20 * ms})
	if g.probing || g.baseline != 20*ms || g.measuredAt != 40 || g.noProbe != 2*time.Second+probeGap*100*ms || g.nextProbe != 32*time.Second {
		t.Errorf("after the probe: probing %v, baseline %v, measured at %v, no probe before %v, next %v; want false, 20ms, 40, 3s, 32s",
			g.probing, g.baseline, g.measuredAt, g.noProbe, g.nextProbe)
	}
}

// TestGradientSaturates: durations at the end of time do not wrap: a probe
// interval of math.MaxInt64 brings no probe while the limit holds, and a
// window of math.MaxInt64 never closes.
func TestGradientSaturates(t *testing.T) {
	const ms = time.Millisecond
	g := gradient{floor: 1, ceiling: 1000, tolerance: 1.25, window: 100 * ms, probeEvery: math.MaxInt64, minSamples: 20, limit: 40, measuredAt: 40}
	g.startProbe(0)
	g.update(time.Second, windowStats{n: 40, sum: 400 * ms, p50: 10 * ms})
	for i := range 100 {
		now := 2*time.Second + time.Duration(i)*100*ms
		if why := g.update(now, windowStats{n: 40, sum: 450 * ms, p50: 11250 * time.Microsecond}); why == reasonProbe {
			t.Fatalf("a probe at %v with the probe interval math.MaxInt64 and the limit at %v", now, g.limit)
		}
	}
	w := gradient{floor: 1, ceiling: 1000, tolerance: 1.25, window: math.MaxInt64, probeEvery: time.Second, minSamples: 20, limit: 40}
	w.startProbe(0)
	if w.closes(100*365*24*time.Hour, 1000, 10*ms, 1) {
		t.Error("a window of math.MaxInt64 closed after 100 years")
	}
	w.probing = false
	w.windowFrom = time.Hour
	if at, _ := w.closesAt(); at != math.MaxInt64 {
		t.Errorf("closesAt() = %v, want math.MaxInt64", at)
	}
}

// TestGradientPublished: a probe halves the limit calls see, or the limit
// the last probe measured at if that is lower, except the first, which
// measures under the initial limit.
func TestGradientPublished(t *testing.T) {
	tests := []struct {
		name string
		g    gradient
		want int64
	}{
		{"steady", gradient{floor: 1, limit: 41.7, baseline: 1, measuredAt: 41.7}, 41},
		{"probing", gradient{floor: 1, limit: 41.7, baseline: 1, measuredAt: 41.7, probing: true}, 20},
		{"probing at the floor", gradient{floor: 30, limit: 41.7, baseline: 1, measuredAt: 41.7, probing: true}, 30},
		{"probing after a rise: half the limit measured at", gradient{floor: 1, limit: 80, baseline: 1, measuredAt: 41.7, probing: true}, 20},
		{"probing after a fall: half the limit", gradient{floor: 1, limit: 20, baseline: 1, measuredAt: 41.7, probing: true}, 10},
		{"first probe", gradient{floor: 1, limit: 20, measuredAt: 20, probing: true}, 20},
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
		if got := l.Waiting(); got != 2 {
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
		if l.InFlight() != 0 || l.Waiting() != 0 {
			t.Errorf("InFlight() = %d, Queued() = %d at the end, want 0, 0", l.InFlight(), l.Waiting())
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
		if got := l.Waiting(); got != 2 {
			t.Fatalf("Queued() = %d with every slot held, want 2", got)
		}
		const latency = 10 * time.Millisecond
		l.g.probing, l.g.baseline, l.g.recent, l.g.windowFrom, l.g.nextProbe, l.g.noProbe = false, latency, latency, 0, time.Hour, time.Hour
		l.n.Store(l.g.minSamples)
		l.sum.Store(l.g.minSamples * int64(latency))
		for range l.g.minSamples {
			l.p50.Record(latency)
		}
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
		if got := l.Waiting(); got != 0 {
			t.Errorf("Queued() = %d after the rise, want 0", got)
		}
	})
}

// TestAdaptiveThrottlerSlideSaturates: a part of a window of math.MaxInt64
// that would end past the end of time never ends, where the sum wrapped
// to a part that ended long ago (and a refusal's hint went wrong).
func TestAdaptiveThrottlerSlideSaturates(t *testing.T) {
	th := NewAdaptiveThrottler(WithThrottleWindow(math.MaxInt64))
	now := int64(math.MaxInt64 - 1) // the last part of the end of time
	th.slide(now)
	if end := th.partEnd.Load(); end < now {
		t.Errorf("partEnd = %d after sliding to %d, want at or past it", end, now)
	}
}

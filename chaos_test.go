package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errInjected = errors.New("injected")

// chaosKinds builds each chaos policy with the options given, and tells
// from a call's outcome whether it was injected into.
var chaosKinds = []struct {
	name     string
	build    func(opts ...resilience.ChaosOption) resilience.Policy[int]
	injected func(v int, err error, fnCalled bool, behaved int) bool
}{
	{"fault", func(opts ...resilience.ChaosOption) resilience.Policy[int] {
		return resilience.ChaosFault[int](errInjected, opts...)
	}, func(v int, err error, fnCalled bool, _ int) bool {
		return errors.Is(err, errInjected) && v == 0 && !fnCalled
	}},
	{"latency", func(opts ...resilience.ChaosOption) resilience.Policy[int] {
		return resilience.ChaosLatency[int](time.Second, opts...)
	}, nil}, // told by the time the call took, in TestChaosTriggers
	{"outcome", func(opts ...resilience.ChaosOption) resilience.Policy[int] {
		return resilience.ChaosOutcome(-1, opts...)
	}, func(v int, err error, fnCalled bool, _ int) bool { return v == -1 && err == nil && !fnCalled }},
	{"behavior", func(opts ...resilience.ChaosOption) resilience.Policy[int] {
		return resilience.ChaosBehavior[int](func(ctx context.Context) { *ctx.Value(behavedKey{}).(*int) += 1 }, opts...)
	}, func(_ int, _ error, _ bool, behaved int) bool { return behaved == 1 }},
}

type behavedKey struct{}
type tenantKey struct{}

// chaosPattern calls p n times, through Execute or a Compose, and returns
// the numbers (from 1) of the calls it injected into. Calls numbered in
// off are made with a context that WithChaosEnabled in the options turns
// down.
func chaosPattern(t *testing.T, kind int, p resilience.Policy[int], n int, off []int) []int {
	t.Helper()
	var got []int
	for i := 1; i <= n; i++ {
		behaved := 0
		ctx := context.WithValue(context.Background(), behavedKey{}, &behaved)
		if slices.Contains(off, i) {
			ctx = context.WithValue(ctx, tenantKey{}, "off")
		}
		called := false
		start := time.Now()
		v, err := p.Execute(ctx, func(context.Context) (int, error) { called = true; return i, nil })
		var injected bool
		if f := chaosKinds[kind].injected; f != nil {
			injected = f(v, err, called, behaved)
		} else {
			injected = time.Since(start) == time.Second
		}
		if !injected && (v != i || err != nil || !called) {
			t.Fatalf("call %d: Execute = %v, %v (fn called: %v), want %d, nil from fn", i, v, err, called, i)
		}
		if injected {
			got = append(got, i)
		}
	}
	return got
}

// onlyOn is a WithChaosEnabled predicate that turns down calls marked off.
func onlyOn(ctx context.Context) bool { return ctx.Value(tenantKey{}) != "off" }

// seededPattern is the calls among the first n that a rate draws from
// math/rand/v2's PCG seeded with (1, 2) inject into, skipping the draws
// of calls in off: what WithRand promises, written from its doc.
func seededPattern(rate float64, n int, off []int) []int {
	r := rand.New(rand.NewPCG(1, 2))
	var want []int
	for i := 1; i <= n; i++ {
		if slices.Contains(off, i) {
			continue
		}
		if float64(r.Uint64()>>11)/(1<<53) < rate {
			want = append(want, i)
		}
	}
	return want
}

// TestChaosTriggers: which calls each chaos policy injects into, under
// every trigger, through Execute and in a Compose.
func TestChaosTriggers(t *testing.T) {
	off := []int{2, 5, 6}
	seeded := func() resilience.ChaosOption { return resilience.WithRand(rand.New(rand.NewPCG(1, 2))) }
	triggers := []struct {
		name string
		opts func() []resilience.ChaosOption
		off  []int
		want []int
	}{
		{"default: every call", func() []resilience.ChaosOption { return nil }, nil, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"rate 1", func() []resilience.ChaosOption { return []resilience.ChaosOption{resilience.WithChaosRate(1)} }, nil, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"rate 0", func() []resilience.ChaosOption { return []resilience.ChaosOption{resilience.WithChaosRate(0)} }, nil, nil},
		{"every call", func() []resilience.ChaosOption { return []resilience.ChaosOption{resilience.WithChaosEvery(1)} }, nil, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"every 3rd", func() []resilience.ChaosOption { return []resilience.ChaosOption{resilience.WithChaosEvery(3)} }, nil, []int{3, 6, 9}},
		{"every 3rd enabled call", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{resilience.WithChaosEvery(3), resilience.WithChaosEnabled(onlyOn)}
		}, off, []int{4, 9}},
		{"disabled", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{resilience.WithChaosEnabled(func(context.Context) bool { return false })}
		}, nil, nil},
		{"rate 0.3 seeded", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{resilience.WithChaosRate(0.3), seeded()}
		}, nil, seededPattern(0.3, 10, nil)},
		{"rate 0.3 seeded, enabled calls only draw", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{resilience.WithChaosRate(0.3), seeded(), resilience.WithChaosEnabled(onlyOn)}
		}, off, seededPattern(0.3, 10, off)},
		{"rate 0.5, draws of 2^63: none below it", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{resilience.WithChaosRate(0.5), resilience.WithRand(randSeq{1 << 63})}
		}, nil, nil},
		{"rate 0.5, draws of 2^63-1: all below it", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{resilience.WithChaosRate(0.5), resilience.WithRand(randSeq{1<<63 - 1})}
		}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"rate 0.7 seeded", func() []resilience.ChaosOption {
			return []resilience.ChaosOption{seeded(), resilience.WithChaosRate(0.7)}
		}, nil, seededPattern(0.7, 10, nil)},
	}
	for k, kind := range chaosKinds {
		for _, tc := range triggers {
			for _, composed := range []bool{false, true} {
				name := kind.name + "/" + tc.name
				if composed {
					name += "/composed"
				}
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						p := kind.build(tc.opts()...)
						if composed {
							p = resilience.Compose(resilience.Retry[int](resilience.WithAttempts(1)), p)
						}
						got := chaosPattern(t, k, p, 10, tc.off)
						assert.Equal(t, tc.want, got, "the calls injected into")
					})
				})
			}
		}
	}
}

// TestChaosRateShare: a rate is the share of calls injected into.
func TestChaosRateShare(t *testing.T) {
	for _, rate := range []float64{0.001, 0.2, 0.5, 0.999} {
		p := resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(rate), resilience.WithRand(rand.New(rand.NewPCG(3, 4))))
		const n = 100_000
		faults := 0
		for range n {
			if _, err := p.Execute(context.Background(), okFunc); err != nil {
				faults++
			}
		}
		// Five standard deviations either way: a seeded run is fixed, and
		// this checks the threshold's arithmetic, not the generator.
		share := float64(faults) / n
		assert.InDelta(t, rate, share, 5*math.Sqrt(rate*(1-rate)/n)+1e-9, "rate %v: share of calls injected into", rate)
	}
	t.Run("math/rand/v2's draws", func(t *testing.T) {
		// Unseeded: 25 standard deviations either way, which no run of a
		// sound generator leaves.
		const rate, n = 0.2, 10_000
		p := resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(rate))
		faults := 0
		for range n {
			if _, err := p.Execute(context.Background(), okFunc); err != nil {
				faults++
			}
		}
		assert.InDelta(t, rate, float64(faults)/n, 0.1, "share of calls injected into")
	})
}

// TestChaosLatencyWaits: the latency is waited on the policy's clock, and
// a caller whose context ends stops waiting at once, without calling fn.
func TestChaosLatencyWaits(t *testing.T) {
	t.Run("real clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := resilience.ChaosLatency[int](200 * time.Millisecond)
			start := time.Now()
			v, err := p.Execute(context.Background(), okFunc)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			assert.Equal(t, 200*time.Millisecond, time.Since(start))

			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start = time.Now()
			called := false
			_, err = p.Execute(ctx, func(context.Context) (int, error) { called = true; return 1, nil })
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, 50*time.Millisecond, time.Since(start), "the caller stopped waiting when its context ended")
			assert.False(t, called, "fn called after the caller's context ended")
		})
	})
	t.Run("injected clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			clk := clock.NewMock()
			p := resilience.Compose(resilience.ChaosLatency[int](time.Second, resilience.WithClock(clk)))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type out struct {
				v   int
				err error
			}
			done := make(chan out, 1)
			call := func() {
				v, err := p.Execute(ctx, okFunc)
				done <- out{v, err}
			}
			go call()
			synctest.Wait()
			clk.Add(999 * time.Millisecond)
			synctest.Wait()
			require.Empty(t, done, "the call returned before the latency had passed on the clock")
			clk.Add(time.Millisecond)
			assert.Equal(t, out{1, nil}, <-done)

			go call()
			synctest.Wait()
			cancel()
			o := <-done
			assert.ErrorIs(t, o.err, context.Canceled, "a cancelled caller stops waiting without the clock moving")
		})
	})
	t.Run("zero", func(t *testing.T) {
		log := &recorder{}
		p := resilience.ChaosLatency[int](0, resilience.WithObserver(log))
		v, err := p.Execute(context.Background(), okFunc)
		assert.Equal(t, 1, v)
		assert.NoError(t, err)
		assert.Len(t, log.events, 1, "a latency of 0 is still an injection")
	})
}

// TestChaosEvents: every injection is reported, with the component, the
// policy's name and what was injected, and only injections are.
func TestChaosEvents(t *testing.T) {
	type ev = resilience.Event
	tests := []struct {
		name  string
		build func(o ...resilience.ChaosOption) resilience.Policy[int]
		want  ev
	}{
		{"fault", func(o ...resilience.ChaosOption) resilience.Policy[int] {
			return resilience.ChaosFault[int](errInjected, o...)
		},
			ev{Kind: resilience.EventChaos, Component: "chaos-fault", Name: "db", Err: errInjected}},
		{"latency", func(o ...resilience.ChaosOption) resilience.Policy[int] {
			return resilience.ChaosLatency[int](time.Millisecond, o...)
		}, ev{Kind: resilience.EventChaos, Component: "chaos-latency", Name: "db", Wait: time.Millisecond}},
		{"outcome", func(o ...resilience.ChaosOption) resilience.Policy[int] { return resilience.ChaosOutcome(7, o...) },
			ev{Kind: resilience.EventChaos, Component: "chaos-outcome", Name: "db"}},
		{"behavior", func(o ...resilience.ChaosOption) resilience.Policy[int] {
			return resilience.ChaosBehavior[int](func(context.Context) {}, o...)
		}, ev{Kind: resilience.EventChaos, Component: "chaos-behavior", Name: "db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &recorder{}
				p := tc.build(resilience.WithObserver(log), resilience.WithName("db"), resilience.WithChaosEvery(2))
				for range 4 {
					_, _ = p.Execute(context.Background(), okFunc)
				}
				assert.Equal(t, []ev{tc.want, tc.want}, log.events)
				assert.Equal(t, "chaos", resilience.EventChaos.String())
			})
		})
	}
}

// TestChaosBadOptions: bad values panic at construction, naming the
// function or option and the value.
func TestChaosBadOptions(t *testing.T) {
	seeded := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"rate above 1", func() { resilience.WithChaosRate(1.5) }, "resilience: WithChaosRate: rate must be in [0, 1], got 1.5"},
		{"negative rate", func() { resilience.WithChaosRate(-0.1) }, "resilience: WithChaosRate: rate must be in [0, 1], got -0.1"},
		{"NaN rate", func() { resilience.WithChaosRate(nan()) }, "resilience: WithChaosRate: rate must be in [0, 1], got NaN"},
		{"every 0", func() { resilience.WithChaosEvery(0) }, "resilience: WithChaosEvery: n must be at least 1, got 0"},
		{"nil rand", func() { resilience.WithRand(nil) }, "resilience: WithRand: rand is nil"},
		{"typed nil rand", func() { resilience.WithRand((*rand.Rand)(nil)) }, "resilience: WithRand: rand is a nil *rand.Rand"},
		{"nil predicate", func() { resilience.WithChaosEnabled(nil) }, "resilience: WithChaosEnabled: predicate is nil"},
		{"negative latency", func() { resilience.ChaosLatency[int](-time.Millisecond) }, "resilience: ChaosLatency: latency must not be negative, got -1ms"},
		{"nil fault", func() { resilience.ChaosFault[int](nil) }, "resilience: ChaosFault: error is nil"},
		{"nil behavior", func() { resilience.ChaosBehavior[int](nil) }, "resilience: ChaosBehavior: behavior is nil"},
		{"every and rate", func() {
			resilience.ChaosFault[int](errInjected, resilience.WithChaosEvery(2), resilience.WithChaosRate(0.5))
		}, "resilience: ChaosFault: WithChaosEvery(2) and WithChaosRate(0.5) both decide which calls to inject into; give one"},
		{"every and rand", func() {
			resilience.ChaosOutcome(1, resilience.WithRand(seeded), resilience.WithChaosEvery(3))
		}, "resilience: ChaosOutcome: WithChaosEvery(3) and WithRand both decide which calls to inject into; give one"},
		{"nil option", func() { resilience.ChaosLatency[int](time.Second, nil) }, "resilience: ChaosLatency: option is nil"},
		{"zero option", func() { resilience.ChaosBehavior[int](func(context.Context) {}, resilience.Option{}) },
			"resilience: ChaosBehavior: option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
	for _, kind := range chaosKinds {
		assert.PanicsWithValue(t, "resilience: Chaos"+map[string]string{"fault": "Fault", "latency": "Latency", "outcome": "Outcome", "behavior": "Behavior"}[kind.name]+": fn is nil", func() {
			_, _ = kind.build().Execute(context.Background(), nil)
		})
	}
}

// TestChaosDisabledAllocs: a chaos policy that is disabled (a rate of 0,
// a predicate that says no) allocates nothing, nor does an injected fault
// or outcome, through Execute or in a Compose.
func TestChaosDisabledAllocs(t *testing.T) {
	ctx := context.Background()
	no := resilience.WithChaosEnabled(func(context.Context) bool { return false })
	tests := []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"fault rate 0", resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0))},
		{"fault disabled", resilience.ChaosFault[int](errInjected, no)},
		{"latency rate 0", resilience.ChaosLatency[int](time.Second, resilience.WithChaosRate(0))},
		{"latency disabled", resilience.ChaosLatency[int](time.Second, no)},
		{"outcome disabled", resilience.ChaosOutcome(2, no)},
		{"behavior disabled", resilience.ChaosBehavior[int](func(context.Context) {}, no)},
		{"fault injected", resilience.ChaosFault[int](errInjected)},
		{"fault injected every 2nd", resilience.ChaosFault[int](errInjected, resilience.WithChaosEvery(2))},
		{"fault at a rate", resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0.5))},
		{"outcome injected", resilience.ChaosOutcome(2)},
		{"all disabled, composed", resilience.Compose(
			resilience.Retry[int](),
			resilience.ChaosFault[int](errInjected, no),
			resilience.ChaosLatency[int](time.Second, resilience.WithChaosRate(0)),
			resilience.ChaosOutcome(2, no),
			resilience.ChaosBehavior[int](func(context.Context) {}, no),
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []resilience.Policy[int]{tc.p, resilience.Compose(tc.p)} {
				if allocs := testing.AllocsPerRun(1000, func() { _, _ = p.Execute(ctx, okFunc) }); allocs != 0 {
					t.Errorf("%T: %v allocations a call, want 0", p, allocs)
				}
			}
		})
	}
}

// TestChaosUnderRetry: a Retry outside sees an injected fault as the
// service's own, and the enabled predicate reads the caller's context.
func TestChaosUnderRetry(t *testing.T) {
	var calls atomic.Int32
	fn := func(context.Context) (int, error) { return int(calls.Add(1)), nil }
	p := resilience.Compose(
		resilience.Retry[int](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0))),
		resilience.ChaosFault[int](errInjected, resilience.WithChaosEvery(2), resilience.WithChaosEnabled(onlyOn)),
	)
	ctx := context.Background()
	for i, want := range []int{1, 2, 3, 4} {
		v, err := p.Execute(ctx, fn)
		require.NoError(t, err, "call %d", i+1)
		assert.Equal(t, want, v, "call %d", i+1)
	}
	assert.Equal(t, int32(4), calls.Load(), "the 2nd and 4th attempts were faults, retried")

	off := context.WithValue(ctx, tenantKey{}, "off")
	_, err := p.Execute(off, fn)
	assert.NoError(t, err)
	assert.Equal(t, int32(5), calls.Load())

	always := resilience.Compose(
		resilience.Retry[int](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0))),
		resilience.ChaosFault[int](errInjected),
	)
	_, err = always.Execute(ctx, fn)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	assert.ErrorIs(t, err, errInjected)
	assert.Equal(t, int32(5), calls.Load(), "fn is never called under a fault at rate 1")
}

// TestChaosBehaviorPanics: a panic in the injected behavior happens to the
// caller, as one in fn would, and fn is not called.
func TestChaosBehaviorPanics(t *testing.T) {
	p := resilience.ChaosBehavior[int](func(context.Context) { panic("chaos") })
	called := false
	r := recovered(func() {
		_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { called = true; return 1, nil })
	})
	assert.Equal(t, "chaos", r)
	assert.False(t, called)
}

// TestChaosConcurrentRand: a source that is not safe for concurrent use
// is drawn from one call at a time (the race detector checks).
func TestChaosConcurrentRand(t *testing.T) {
	p := resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0.5), resilience.WithRand(rand.New(rand.NewPCG(5, 6))))
	var faults atomic.Int32
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 1000 {
				if _, err := p.Execute(context.Background(), okFunc); err != nil {
					faults.Add(1)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	// The draws are PCG(5, 6)'s first 4,000 in some order: the count is fixed.
	assert.Equal(t, int32(len(seededPatternFrom(rand.New(rand.NewPCG(5, 6)), 0.5, 4000))), faults.Load())
}

func seededPatternFrom(r *rand.Rand, rate float64, n int) []int {
	var want []int
	for i := 1; i <= n; i++ {
		if float64(r.Uint64()>>11)/(1<<53) < rate {
			want = append(want, i)
		}
	}
	return want
}

// benchFn is fn for BenchmarkChaos, in a variable so that the bare call
// is not inlined away.
var benchFn resilience.Func[int] = okFunc

func BenchmarkChaos(b *testing.B) {
	ctx := context.Background()
	no := resilience.WithChaosEnabled(func(context.Context) bool { return false })
	fn := benchFn
	b.Run("bare-call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = fn(ctx)
		}
	})
	rows := []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"fault-rate-0", resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0))},
		{"fault-rate-0-composed", resilience.Compose(resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0)))},
		{"fault-predicate-off", resilience.ChaosFault[int](errInjected, no)},
		{"fault-predicate-off-composed", resilience.Compose(resilience.ChaosFault[int](errInjected, no))},
		{"latency-predicate-off-composed", resilience.Compose(resilience.ChaosLatency[int](time.Second, no))},
		{"fault-injected", resilience.ChaosFault[int](errInjected)},
		{"fault-rate-0.2", resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0.2))},
		{"fault-rate-0.2-seeded", resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0.2), resilience.WithRand(rand.New(rand.NewPCG(1, 2))))},
		{"fault-every-5th", resilience.ChaosFault[int](errInjected, resilience.WithChaosEvery(5))},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = r.p.Execute(ctx, fn)
			}
		})
	}
}

// This file is the proof docs/chaos.md walks through: a composition of
// Timeout, Retry, Hedge and Breaker under load, with chaos injected
// innermost, in virtual time. Its figures are the guide's; the test pins
// them, so that the guide says what the code does.

var errUnavailable = errors.New("503 service unavailable")

// proofFigures is what one run of the proof measured.
type proofFigures struct {
	Requests, Failed int    // requests made, and those that failed
	FnCalls          int    // calls that reached the service
	Faults, Delays   int    // chaos injections
	Retries, Hedges  int    // retries and hedges started
	RetriesRefused   int    // retries the retry quota refused
	HedgesRefused    int    // hedges the hedge's budget refused
	Trips            int    // times the breaker opened
	Refused          int    // calls the open breaker refused
	Breaker          string // the breaker's changes of state, and when
	P50, P90, P99    time.Duration
	Max              time.Duration
}

func (f proofFigures) String() string {
	return fmt.Sprintf("requests %d, failed %d (%.1f%%), service calls %d, faults %d, delays %d, retries %d (%d refused), hedges %d (%d refused), breaker trips %d (%d calls refused: %s), p50 %v, p90 %v, p99 %v, max %v",
		f.Requests, f.Failed, 100*float64(f.Failed)/float64(f.Requests), f.FnCalls, f.Faults, f.Delays,
		f.Retries, f.RetriesRefused, f.Hedges, f.HedgesRefused, f.Trips, f.Refused, f.Breaker, f.P50, f.P90, f.P99, f.Max)
}

// countEvents adds up the events of every policy of the proof, and the
// breaker's changes of state with their times since start.
func countEvents(fig *proofFigures, rec *recorder, start time.Time) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, e := range rec.events {
		switch {
		case e.Kind == resilience.EventChaos && e.Component == "chaos-fault":
			fig.Faults++
		case e.Kind == resilience.EventChaos && e.Component == "chaos-latency":
			fig.Delays++
		case e.Kind == resilience.EventRetry:
			fig.Retries++
		case e.Kind == resilience.EventHedge:
			fig.Hedges++
		case e.Kind == resilience.EventStateChange:
			if e.To == resilience.BreakerOpen {
				fig.Trips++
			}
			if fig.Breaker != "" {
				fig.Breaker += ", "
			}
			fig.Breaker += fmt.Sprintf("%v at %v", e.To, rec.times[i].Sub(start).Truncate(time.Millisecond))
		case e.Kind == resilience.EventRefused && e.Component == "breaker":
			fig.Refused++
		case e.Kind == resilience.EventRefused && e.Component == resilience.KindRetryBudget:
			fig.RetriesRefused++
		case e.Kind == resilience.EventRefused && e.Component == "hedge":
			fig.HedgesRefused++
		}
	}
}

// proofSetup is one scenario: which policies, which chaos.
type proofSetup struct {
	policies bool          // Timeout, Retry and Breaker around the service
	hedge    bool          // and a Hedge
	budget   float64       // the Hedge's budget, a share of calls; 0: its default (0.1)
	faults   float64       // the share of calls that fail
	delays   float64       // the share of calls delayed by 200ms
	outage   time.Duration // every call fails in [2s, 2s+outage)
}

const (
	proofRequests = 2500                 // one every 2ms: 500 a second for 5s
	proofSpacing  = 2 * time.Millisecond // between two requests
	proofService  = 20 * time.Millisecond
	proofLatency  = 200 * time.Millisecond
)

// runProof sends proofRequests requests through the scenario's
// composition and measures what happened. It must run in a synctest
// bubble.
//
// Every wait in it is a whole number of milliseconds, and request i
// starts i nanoseconds past a millisecond, so no two requests ever act in
// the same instant and the seeded chaos draws come in one order: the
// figures repeat exactly from run to run.
func runProof(su proofSetup) proofFigures {
	start := time.Now()
	rec := &recorder{}
	observe := resilience.WithObserver(rec)
	outage := func(context.Context) bool {
		since := time.Since(start)
		return since >= 2*time.Second && since < 2*time.Second+su.outage
	}
	layers := []resilience.Policy[int]{}
	if su.policies {
		breaker := resilience.NewBreaker(observe,
			resilience.WithBreakerThreshold(0),                   // no rule of consecutive failures:
			resilience.WithBreakerFailureRate(0.5, 20, 50),       // half of the last 50 calls, at least 20
			resilience.WithBreakerCoolDown(500*time.Millisecond)) // then a probe after 0.5s
		layers = append(layers,
			resilience.Timeout[int](time.Second, observe),
			resilience.Retry[int](observe,
				resilience.WithAttempts(3),
				resilience.WithBackoff(resilience.Exponential(10*time.Millisecond, 2)),
				resilience.WithAbortOn(resilience.ErrBreakerOpen)))
		if su.hedge {
			opts := []resilience.HedgeOption{observe, resilience.WithHedgeDelay(100 * time.Millisecond)}
			if su.budget > 0 {
				opts = append(opts, resilience.WithHedgeBudget(resilience.NewRetryBudget(su.budget, 1)))
			}
			layers = append(layers, resilience.Hedge[int](opts...))
		}
		layers = append(layers, resilience.Guarded[int](breaker))
	}
	if su.outage > 0 {
		layers = append(layers, resilience.ChaosFault[int](errUnavailable, observe, resilience.WithChaosEnabled(outage)))
	}
	if su.faults > 0 {
		layers = append(layers, resilience.ChaosFault[int](errUnavailable, observe,
			resilience.WithChaosRate(su.faults), resilience.WithRand(rand.New(rand.NewPCG(1, 2)))))
	}
	if su.delays > 0 {
		layers = append(layers, resilience.ChaosLatency[int](proofLatency, observe,
			resilience.WithChaosRate(su.delays), resilience.WithRand(rand.New(rand.NewPCG(3, 4)))))
	}
	p := resilience.Compose(layers...)

	var mu sync.Mutex
	fnCalls := 0
	service := func(ctx context.Context) (int, error) {
		mu.Lock()
		fnCalls++
		mu.Unlock()
		t := time.NewTimer(proofService)
		defer t.Stop()
		select {
		case <-t.C:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	latencies := make([]time.Duration, proofRequests)
	failed := make([]bool, proofRequests)
	var wg sync.WaitGroup
	for i := range proofRequests {
		wg.Go(func() {
			t0 := time.Now()
			_, err := p.Execute(context.Background(), service)
			latencies[i], failed[i] = time.Since(t0), err != nil
		})
		time.Sleep(proofSpacing + time.Nanosecond)
	}
	wg.Wait()
	synctest.Wait() // and the hedges' timers, which report too

	var fig proofFigures
	countEvents(&fig, rec, start)
	fig.Requests, fig.FnCalls = proofRequests, fnCalls
	for _, f := range failed {
		if f {
			fig.Failed++
		}
	}
	slices.Sort(latencies)
	fig.P50 = latencies[len(latencies)*50/100]
	fig.P90 = latencies[len(latencies)*90/100]
	fig.P99 = latencies[len(latencies)*99/100]
	fig.Max = latencies[len(latencies)-1]
	return fig
}

// TestChaosProof runs the guide's scenarios and checks the figures it
// quotes.
func TestChaosProof(t *testing.T) {
	tests := []struct {
		name string
		su   proofSetup
		want proofFigures
	}{
		{"no chaos", proofSetup{policies: true, hedge: true},
			proofFigures{Requests: 2500, Failed: 0, FnCalls: 2500, Faults: 0, Delays: 0, Retries: 0, Hedges: 0, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 20 * time.Millisecond, P99: 20 * time.Millisecond, Max: 20 * time.Millisecond}},
		{"chaos, no policies", proofSetup{faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 497, FnCalls: 2003, Faults: 497, Delays: 378, Retries: 0, Hedges: 0, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 220 * time.Millisecond, P99: 220 * time.Millisecond, Max: 220 * time.Millisecond}},
		{"chaos, timeout+retry+breaker", proofSetup{policies: true, faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 18, FnCalls: 2482, Faults: 613, Delays: 462, Retries: 595, Hedges: 0, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 220 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
		{"chaos, timeout+retry+hedge+breaker", proofSetup{policies: true, hedge: true, faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 19, FnCalls: 2481, Faults: 677, Delays: 514, Retries: 597, Hedges: 314, HedgesRefused: 147, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 220 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
		{"chaos, hedge budget 25%", proofSetup{policies: true, hedge: true, budget: 0.25, faults: 0.2, delays: 0.2},
			proofFigures{Requests: 2500, Failed: 28, FnCalls: 2472, Faults: 715, Delays: 542, Retries: 602, RetriesRefused: 1, Hedges: 472, HedgesRefused: 0, Trips: 0, Refused: 0,
				P50: 20 * time.Millisecond, P90: 120 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
		{"chaos and a 1s outage, hedge budget 25%", proofSetup{policies: true, hedge: true, budget: 0.25, faults: 0.2, delays: 0.2, outage: time.Second},
			proofFigures{Requests: 2500, Failed: 795, FnCalls: 1705, Faults: 509, Delays: 370, Retries: 418, RetriesRefused: 13, Hedges: 316, HedgesRefused: 0, Trips: 3, Refused: 769,
				Breaker: "open at 2.022s, half-open at 2.522s, open at 2.522s, half-open at 3.022s, open at 3.022s, half-open at 3.522s, closed at 3.542s",
				P50:     20 * time.Millisecond, P90: 120 * time.Millisecond, P99: 230 * time.Millisecond, Max: 250 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got := runProof(tc.su)
				t.Logf("%v", got)
				if got != tc.want {
					t.Errorf("figures changed (docs/chaos.md quotes them):\n got %v\nwant %v", got, tc.want)
				}
			})
		})
	}
}

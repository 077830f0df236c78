package resilienceotel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// watch reports reg through h's Observer until the test ends.
func (h *harness) watch(t *testing.T, reg *resilience.Registry) {
	t.Helper()
	registration, err := h.obs.RegisterRegistry(reg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = registration.Unregister() })
}

// TestRegistryGauges: every guard of a registry has its series from the
// moment it is registered, before any call, and has none once it is
// unregistered.
func TestRegistryGauges(t *testing.T) {
	h := newHarness(t)
	reg := resilience.NewRegistry()
	h.watch(t, reg)
	assert.Empty(t, h.metrics(t), "an empty registry")

	guards := map[string]resilience.Inspector{
		"br":  resilience.NewBreaker(resilience.WithBreakerFailureRate(0.5, 10, 20)),
		"bh":  resilience.NewBulkhead(4),
		"rl":  resilience.NewRateLimiter(10, 5),
		"krl": resilience.NewKeyedRateLimiter[string](10, 5),
		"rq":  resilience.NewRetryQuota(100),
		"al":  resilience.NewAdaptiveLimiter(),
		"at":  resilience.NewAdaptiveThrottler(),
		"hdg": resilience.Hedge[int](resilience.WithHedgeDelay(25 * time.Millisecond)).(resilience.Inspector),
	}
	for name, g := range guards {
		require.NoError(t, reg.Register(name, g))
	}
	want := map[string]float64{
		"resilience.breaker.state{breaker.state=closed,name=br}":    1,
		"resilience.breaker.state{breaker.state=open,name=br}":      0,
		"resilience.breaker.state{breaker.state=half_open,name=br}": 0,
		"resilience.breaker.failure_ratio{name=br}":                 0,
		"resilience.breaker.consecutive_failures{name=br}":          0,
		"resilience.bulkhead.in_flight{name=bh}":                    0,
		"resilience.bulkhead.limit{name=bh}":                        4,
		"resilience.bulkhead.waiting{name=bh}":                      0,
		"resilience.rate_limiter.tokens{name=rl}":                   5,
		"resilience.keyed_rate_limiter.keys{name=krl}":              0,
		"resilience.retry_budget.tokens{name=rq}":                   100,
		"resilience.adaptive_limiter.limit{name=al}":                20,
		"resilience.adaptive_limiter.in_flight{name=al}":            0,
		"resilience.adaptive_limiter.waiting{name=al}":              0,
		"resilience.adaptive_throttler.rejection_ratio{name=at}":    0,
		"resilience.hedge.delay{name=hdg}":                          0.025,
	}
	for name := range guards { // each well, and shedding nothing
		want[healthSeries(name, resilience.HealthOK)] = 1
		want[healthSeries(name, resilience.HealthWarning)] = 0
		want[healthSeries(name, resilience.HealthCritical)] = 0
		want["resilience.guard.shedding{name="+name+"}"] = 0
	}
	assert.Equal(t, want, h.metrics(t), "right after registration")

	// The gauges follow the guards.
	br := guards["br"].(*resilience.Breaker)
	br.Trip()
	bh := guards["bh"].(*resilience.Bulkhead)
	require.True(t, bh.TryAcquire())
	got := h.metrics(t)
	assert.Equal(t, 1.0, got["resilience.breaker.state{breaker.state=open,name=br}"])
	assert.Equal(t, 0.0, got["resilience.breaker.state{breaker.state=closed,name=br}"])
	assert.Equal(t, 1.0, got["resilience.bulkhead.in_flight{name=bh}"])
	assert.Equal(t, 1.0, got[healthSeries("br", resilience.HealthCritical)])
	assert.Equal(t, 0.0, got[healthSeries("br", resilience.HealthOK)])
	bh.Release()

	for name := range guards {
		require.True(t, reg.Unregister(name))
	}
	assert.Empty(t, h.metrics(t), "after every guard is unregistered")
}

// TestRegisterRegistryUnregister: a registration undone reports nothing
// more, and a nil registry is refused.
func TestRegisterRegistryUnregister(t *testing.T) {
	h := newHarness(t)
	reg := resilience.NewRegistry()
	require.NoError(t, reg.Register("bh", resilience.NewBulkhead(2)))
	registration, err := h.obs.RegisterRegistry(reg)
	require.NoError(t, err)
	assert.Len(t, h.metrics(t), 3+4, "the bulkhead's, its health's and its shedding")
	require.NoError(t, registration.Unregister())
	assert.Empty(t, h.metrics(t))
	require.PanicsWithValue(t, "resilienceotel: Observer.RegisterRegistry: registry is nil", func() { _, _ = h.obs.RegisterRegistry(nil) })
}

// TestComposedCallRecordsOneDuration: a call through a composition whose
// every layer has the Observer records one duration and one outcome, by
// default.
func TestComposedCallRecordsOneDuration(t *testing.T) {
	h := newHarness(t)
	o, n := resilience.WithObserver(h.obs), resilience.WithName("api")
	p := resilience.Compose(
		resilience.Timeout[int](time.Hour, o, n),
		resilience.Retry[int](o, n),
		resilience.Guarded[int](resilience.NewBreaker(o, n)),
		resilience.Guarded[int](resilience.NewBulkhead(4, o, n)),
	)
	_, err := resilience.Do(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	got := h.metrics(t)
	var calls float64
	for k, v := range got {
		if len(k) > len("resilience.call.duration.count") && k[:len("resilience.call.duration.count")] == "resilience.call.duration.count" {
			calls += v
		}
	}
	assert.Equal(t, 1.0, calls, "call durations recorded: %v", got)
	assert.Equal(t, 1.0, got["resilience.call.duration.count{component=timeout,name=api,outcome=success}"], "%v", got)
}

// nilPointerError is an error type whose Error method reads its receiver:
// a typed nil of it panics when put in words.
type nilPointerError struct{ msg string }

func (e *nilPointerError) Error() string { return e.msg }

// TestRegistryGaugesBrokenError: an event whose error panics when put in
// words does not stop the registry's gauges from being read.
func TestRegistryGaugesBrokenError(t *testing.T) {
	h := newHarness(t)
	reg := resilience.NewRegistry()
	require.NoError(t, reg.Register("bh", resilience.NewBulkhead(2)))
	h.watch(t, reg)
	var typedNil *nilPointerError
	reg.Observe(context.Background(), resilience.Event{Kind: resilience.EventRefused, Component: "bulkhead", Name: "bh", Err: typedNil})
	var got map[string]float64
	require.NotPanics(t, func() { got = h.metrics(t) })
	assert.Equal(t, 2.0, got["resilience.bulkhead.limit{name=bh}"])
}

// healthSeries is the key of metrics for the series of
// resilience.guard.health of the guard name and health h.
func healthSeries(name string, h resilience.Health) string {
	return "resilience.guard.health{health=" + string(h) + ",name=" + name + "}"
}

// TestRegistryGaugesShedding: a guard of each kind that refused a call
// lately is reported as shedding, with its health, until the registry's
// WithRegistryShedding has passed; time is a synctest bubble's.
func TestRegistryGaugesShedding(t *testing.T) {
	low := resilience.WithPriority(context.Background(), resilience.PrioritySheddable)
	tests := []struct {
		name string
		// refuse builds a guard reporting with obs, registers it with add,
		// makes it refuse a call, and lets go of what it holds.
		refuse        func(t *testing.T, add func(resilience.Inspector), obs ...resilience.Option)
		during, after resilience.Health
	}{
		{"adaptive limiter", func(t *testing.T, add func(resilience.Inspector), obs ...resilience.Option) {
			l := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveInitial(8), obs[0], obs[1])
			add(l)
			var dones []func(error)
			for {
				done, err := l.Enter(low)
				if err != nil {
					break
				}
				dones = append(dones, done)
			}
			require.Less(t, l.InFlight(), l.Limit(), "refused with slots free")
			for _, done := range dones {
				done(nil)
			}
		}, resilience.HealthWarning, resilience.HealthOK},
		{"bulkhead", func(t *testing.T, add func(resilience.Inspector), obs ...resilience.Option) {
			b := resilience.NewBulkhead(1, obs[0], obs[1])
			add(b)
			require.True(t, b.TryAcquire())
			_, err := b.Enter(context.Background())
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			b.Release()
		}, resilience.HealthWarning, resilience.HealthOK},
		{"open breaker", func(t *testing.T, add func(resilience.Inspector), obs ...resilience.Option) {
			b := resilience.NewBreaker(obs[0], obs[1])
			add(b)
			b.Trip()
			_, err := b.Enter(context.Background())
			require.ErrorIs(t, err, resilience.ErrBreakerOpen)
		}, resilience.HealthCritical, resilience.HealthCritical},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				reg := resilience.NewRegistry(resilience.WithRegistryShedding(10 * time.Second))
				h.watch(t, reg)
				add := func(g resilience.Inspector) { require.NoError(t, reg.Register("g", g)) }
				tc.refuse(t, add, resilience.WithName("g"), resilience.WithObserver(reg))
				for _, step := range []struct {
					wait     time.Duration
					shedding float64
					health   resilience.Health
				}{
					{0, 1, tc.during},
					{10*time.Second - time.Nanosecond, 1, tc.during},
					{time.Nanosecond, 0, tc.after},
				} {
					time.Sleep(step.wait)
					got := h.metrics(t)
					assert.Equal(t, step.shedding, got["resilience.guard.shedding{name=g}"], "shedding, %v after", step.wait)
					for _, hl := range []resilience.Health{resilience.HealthOK, resilience.HealthWarning, resilience.HealthCritical} {
						want := 0.0
						if hl == step.health {
							want = 1
						}
						assert.Equal(t, want, got[healthSeries("g", hl)], "health %s", hl)
					}
				}
			})
		})
	}
}

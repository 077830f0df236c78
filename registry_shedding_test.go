package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// refuseAlways draws the smallest number: a throttle with it refuses
// whenever its ratio is above 0.
type refuseAlways struct{}

func (refuseAlways) Uint64() uint64 { return 0 }

// TestRegistryShedding: a guard of each kind that refused a call shows it
// in its snapshot from that refusal until WithRegistryShedding has passed,
// on the registry's clock: Shedding and LastRefused set, and, for a guard
// that says "ok" otherwise, state "shedding", health warning. Each guard
// is driven to refuse a call and back to a state that said "ok" before.
// sheddingCase is a guard of one kind driven to refuse a call.
type sheddingCase struct {
	name string
	// refuse builds the guard on clk, reporting with obs under "g",
	// registers it with add, makes it refuse at least one call, and
	// brings it back to a state that says "ok" but for the refusal,
	// moving clk no more than settle after the refusal.
	refuse func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option)
	settle time.Duration
	state  string
	health resilience.Health
	counts bool // the guard counts its refusals (a registry notices them without events)
}

func sheddingCases() []sheddingCase {
	ctx := context.Background()
	down := errors.New("down")
	return []sheddingCase{
		{"adaptive limiter, slots free", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			l := resilience.NewAdaptiveLimiter(resilience.WithClock(clk), resilience.WithAdaptiveInitial(8), obs[0], obs[1])
			add(l)
			low := resilience.WithPriority(ctx, resilience.PrioritySheddable)
			var dones []func(error)
			for {
				done, err := l.Enter(low)
				if err != nil {
					require.ErrorIs(t, err, resilience.ErrLimitExceeded)
					break
				}
				dones = append(dones, done)
				require.Less(t, len(dones), 8, "no refusal under the limit")
			}
			require.Less(t, l.InFlight(), l.Limit(), "refused with slots free")
		}, 0, "shedding", resilience.HealthWarning, true},
		{"adaptive throttler", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			th := resilience.NewAdaptiveThrottler(resilience.WithClock(clk), obs[0], obs[1],
				resilience.WithRand(refuseAlways{}), resilience.WithThrottleWindow(time.Second))
			add(th)
			for i := 0; ; i++ { // every call refused by the service, until the throttle refuses one
				done, err := th.Enter(ctx)
				if err != nil {
					require.ErrorIs(t, err, resilience.ErrThrottled)
					break
				}
				done(resilience.ErrBulkheadFull)
				require.Less(t, i, 100, "the throttle refuses nothing")
			}
		}, 2 * time.Second, "shedding", resilience.HealthWarning, true},
		{"bulkhead", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			b := resilience.NewBulkhead(1, obs[0], obs[1])
			add(b)
			done, err := b.Enter(ctx)
			require.NoError(t, err)
			_, err = b.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			done(nil)
		}, 0, "shedding", resilience.HealthWarning, true},
		{"rate limiter", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			l := resilience.NewRateLimiter(1, 1, resilience.WithClock(clk), obs[0], obs[1])
			add(l)
			_, err := l.Enter(ctx)
			require.NoError(t, err)
			_, err = l.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrRateLimited)
		}, time.Second, "shedding", resilience.HealthWarning, true},
		{"keyed rate limiter", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			l := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(clk), obs[0], obs[1])
			add(l)
			require.True(t, l.Allow("ann"))
			require.False(t, l.Allow("ann"))
		}, time.Second, "shedding", resilience.HealthWarning, true},
		{"retry quota", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			q := resilience.NewRetryQuota(10, resilience.WithClock(clk), resilience.WithQuotaCost(10), obs[0], obs[1])
			add(q)
			p := resilience.Retry[int](resilience.WithBudget(q), resilience.WithAttempts(2), resilience.WithBackoff(resilience.Constant(0)))
			for range 2 { // the first retry takes the quota, the second is refused
				_, _ = p.Execute(ctx, func(context.Context) (int, error) { return 0, down })
			}
			for q.Available() == 0 { // successes give it back
				_, err := p.Execute(ctx, okFunc)
				require.NoError(t, err)
			}
		}, 0, "shedding", resilience.HealthWarning, false},
		{"breaker closed again", func(t *testing.T, clk *manualClock, add func(resilience.Inspector), obs ...resilience.Option) {
			b := resilience.NewBreaker(resilience.WithClock(clk), obs[0], obs[1])
			add(b)
			b.Trip()
			_, err := b.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrBreakerOpen)
			b.Reset()
		}, 0, "closed", resilience.HealthOK, false},
	}
}

// A guard built with no name and no observer shows them the same: Register
// names it and sends its events to the registry.
func TestRegistryShedding(t *testing.T) {
	tests := sheddingCases()
	for _, observed := range []bool{true, false} {
		for _, window := range []time.Duration{0, 10 * time.Second} { // 0: the default, a minute
			for _, tc := range tests {
				t.Run(fmt.Sprintf("%s/%v/observed=%t", tc.name, window, observed), func(t *testing.T) {
					clk := newManualClock()
					var opts []resilience.RegistryOption
					want := time.Minute
					if window > 0 {
						opts, want = append(opts, resilience.WithRegistryShedding(window)), window
					}
					reg := resilience.NewRegistry(append(opts, resilience.WithClock(clk))...)
					add := func(g resilience.Inspector) { require.NoError(t, reg.Register("g", g)) }
					obs := []resilience.Option{resilience.WithName("g"), resilience.WithObserver(reg)}
					if !observed {
						obs = []resilience.Option{resilience.WithClock(clk), resilience.WithClock(clk)}
					}
					tc.refuse(t, clk, add, obs...)
					refusedAt := clk.Now()
					clk.Add(tc.settle)

					for _, d := range []time.Duration{0, want - tc.settle - time.Nanosecond} {
						clk.Add(d)
						s, _ := reg.Snapshot("g")
						assert.Equal(t, tc.state, s.State, "%v after the refusal", clk.Now().Sub(refusedAt))
						assert.Equal(t, tc.health, s.Health)
						assert.True(t, s.Shedding)
						assert.Equal(t, refusedAt, s.LastRefused)
					}
					clk.Add(time.Nanosecond)
					all := reg.Snapshots()
					require.Len(t, all, 1)
					s := all[0]
					assert.Contains(t, []string{"ok", "closed"}, s.State, "%v after the refusal", want)
					assert.Equal(t, resilience.HealthOK, s.Health)
					assert.False(t, s.Shedding)
					assert.Equal(t, refusedAt, s.LastRefused, "kept")
				})
			}
		}
	}
}

// TestRegistrySheddingBeforeRegister: a guard that counts its refusals
// shows those it made before it was registered, which the registry heard
// nothing of: from the first snapshot that finds its count moved (the
// registry could not know sooner) until WithRegistryShedding after it.
func TestRegistrySheddingBeforeRegister(t *testing.T) {
	for _, tc := range sheddingCases() {
		if !tc.counts {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			reg := resilience.NewRegistry(resilience.WithClock(clk))
			var g resilience.Inspector
			tc.refuse(t, clk, func(x resilience.Inspector) { g = x }, resilience.WithClock(clk), resilience.WithClock(clk))
			clk.Add(tc.settle + time.Second)
			require.NoError(t, reg.Register("g", g))
			noticed := clk.Now()
			for _, d := range []time.Duration{0, time.Minute - time.Nanosecond} {
				clk.Add(d)
				s, _ := reg.Snapshot("g")
				assert.Equal(t, tc.state, s.State, "%v after the first snapshot", clk.Now().Sub(noticed))
				assert.Equal(t, tc.health, s.Health)
				assert.True(t, s.Shedding)
				assert.Equal(t, noticed, s.LastRefused)
			}
			clk.Add(time.Nanosecond)
			s, _ := reg.Snapshot("g")
			assert.Equal(t, "ok", s.State, "a minute after the first snapshot")
			assert.False(t, s.Shedding)
		})
	}
}

// TestRegistrySheddingWithoutRing: a registry that keeps no events still
// hears of refusals, and one made with WithRegistryShedding(0) says
// nothing of them but LastRefused; a guard that does not report to the
// registry shows them too, from the first snapshot that finds its count of
// refusals moved.
func TestRegistrySheddingWithoutRing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name           string
		opts           []resilience.RegistryOption
		report         bool // the guard reports to the registry
		state          string
		shedding, last bool // Shedding, and LastRefused set
	}{
		{"no ring", []resilience.RegistryOption{resilience.WithRegistryEvents(0)}, true, "shedding", true, true},
		{"never shows", []resilience.RegistryOption{resilience.WithRegistryShedding(0)}, true, "ok", false, true},
		{"no ring, never shows", []resilience.RegistryOption{resilience.WithRegistryEvents(0), resilience.WithRegistryShedding(0)}, true, "ok", false, true},
		{"registered without an observer: it reports to the registry all the same", nil, false, "shedding", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			reg := resilience.NewRegistry(append(tc.opts, resilience.WithClock(clk))...)
			var opts []resilience.BulkheadOption
			if tc.report {
				opts = append(opts, resilience.WithName("b"), resilience.WithObserver(reg))
			}
			b := resilience.NewBulkhead(1, opts...)
			require.NoError(t, reg.Register("b", b))
			require.True(t, b.TryAcquire())
			_, err := b.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			b.Release()
			s, _ := reg.Snapshot("b")
			assert.Equal(t, tc.state, s.State)
			assert.Equal(t, tc.shedding, s.Shedding)
			assert.Equal(t, tc.last, !s.LastRefused.IsZero())
		})
	}
}

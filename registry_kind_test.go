package resilience_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// TestRegistryKinds: for each kind a registry can hold, an event the
// guard reports says the same kind as its snapshot, the kind's constant;
// the guard, built with no name and no observer, reports it to the
// registry under the name it is registered under.
func TestRegistryKinds(t *testing.T) {
	ctx := context.Background()
	down := errors.New("down")
	tests := []struct {
		kind string
		// build makes a guard with opts; refuse makes it report an event.
		build  func(opts ...resilience.Option) resilience.Inspector
		refuse func(t *testing.T, g resilience.Inspector)
	}{
		{resilience.KindBreaker, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewBreaker(toBreaker(opts)...)
		}, func(t *testing.T, g resilience.Inspector) { g.(*resilience.Breaker).Trip() }},
		{resilience.KindBulkhead, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewBulkhead(1, toBulkhead(opts)...)
		}, func(t *testing.T, g resilience.Inspector) {
			b := g.(*resilience.Bulkhead)
			require.True(t, b.TryAcquire())
			_, err := b.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrBulkheadFull)
		}},
		{resilience.KindRateLimiter, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewRateLimiter(1, 1, toRateLimit(opts)...)
		}, func(t *testing.T, g resilience.Inspector) {
			l := g.(*resilience.RateLimiter)
			l.Allow()
			_, err := l.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrRateLimited)
		}},
		{resilience.KindKeyedRateLimiter, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewKeyedRateLimiter[string](1, 1, toKeyed(opts)...)
		}, func(t *testing.T, g resilience.Inspector) {
			l := g.(*resilience.KeyedRateLimiter[string])
			l.Allow("ann")
			require.False(t, l.Allow("ann"))
		}},
		{resilience.KindRetryBudget, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewRetryQuota(10, append(toQuota(opts), resilience.WithQuotaCost(10))...)
		}, func(t *testing.T, g resilience.Inspector) {
			p := resilience.Retry[int](resilience.WithBudget(g.(*resilience.RetryBudget)), resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0)))
			_, err := p.Execute(ctx, func(context.Context) (int, error) { return 0, down })
			require.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
		}},
		{resilience.KindAdaptiveLimiter, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewAdaptiveLimiter(append(toAdaptive(opts), resilience.WithAdaptiveLimits(1, 1), resilience.WithAdaptiveInitial(1))...)
		}, func(t *testing.T, g resilience.Inspector) {
			l := g.(*resilience.AdaptiveLimiter)
			_, err := l.Enter(ctx)
			require.NoError(t, err)
			_, err = l.Enter(ctx)
			require.ErrorIs(t, err, resilience.ErrLimitExceeded)
		}},
		{resilience.KindAdaptiveThrottler, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.NewAdaptiveThrottler(append(toThrottler(opts), resilience.WithRand(refuseAlways{}))...)
		}, func(t *testing.T, g resilience.Inspector) {
			th := g.(*resilience.AdaptiveThrottler)
			for i := 0; ; i++ {
				done, err := th.Enter(ctx)
				if err != nil {
					require.ErrorIs(t, err, resilience.ErrThrottled)
					return
				}
				done(resilience.ErrBulkheadFull)
				require.Less(t, i, 100, "the throttle refuses nothing")
			}
		}},
		{resilience.KindHedge, func(opts ...resilience.Option) resilience.Inspector {
			return resilience.Hedge[int](append(toHedge(opts), resilience.WithHedgeDelay(time.Millisecond))...).(resilience.Inspector)
		}, func(t *testing.T, g resilience.Inspector) {
			var n atomic.Int32
			_, err := g.(resilience.Policy[int]).Execute(ctx, func(ctx context.Context) (int, error) {
				if n.Add(1) == 1 { // slow: the hedge wins
					<-ctx.Done()
					return 0, ctx.Err()
				}
				return 1, nil
			})
			require.NoError(t, err)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { // the hedge's delay passes in the bubble
				reg := resilience.NewRegistry(resilience.WithRegistryEvents(100))
				g := tc.build()
				require.NoError(t, reg.Register("g", g))
				tc.refuse(t, g)
				s, ok := reg.Snapshot("g")
				require.True(t, ok)
				assert.Equal(t, tc.kind, s.Kind)
				require.NotEmpty(t, s.Events, "the guard reported nothing to the registry")
				for _, e := range s.Events {
					assert.Equal(t, tc.kind, e.Component, "event %s", e.Text)
				}

				// The same with an observer of its own: the events it hears
				// carry the kind and the registered name.
				own := &recorder{}
				reg2 := resilience.NewRegistry()
				g = tc.build(resilience.WithObserver(own))
				require.NoError(t, reg2.Register("h", g))
				tc.refuse(t, g)
				events := own.take()
				require.NotEmpty(t, events)
				for _, e := range events {
					assert.Equal(t, tc.kind, e.Component)
					assert.Equal(t, "h", e.Name)
				}
			})
		})
	}
}

// The kinds' options, from the common ones.
func toBreaker(o []resilience.Option) (out []resilience.BreakerOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toBulkhead(o []resilience.Option) (out []resilience.BulkheadOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toRateLimit(o []resilience.Option) (out []resilience.RateLimitOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toKeyed(o []resilience.Option) (out []resilience.KeyedRateLimitOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toQuota(o []resilience.Option) (out []resilience.RetryQuotaOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toAdaptive(o []resilience.Option) (out []resilience.AdaptiveLimiterOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toThrottler(o []resilience.Option) (out []resilience.AdaptiveThrottlerOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

func toHedge(o []resilience.Option) (out []resilience.HedgeOption) {
	for _, x := range o {
		out = append(out, x)
	}
	return out
}

// TestRegistryNameGivenOnce: Register names an unnamed guard and sends
// its events to the registry; a guard named otherwise is refused with
// ErrNameMismatch, naming both; a guard built WithName and WithObserver
// of the registry, registered under that name, is heard once per event.
func TestRegistryNameGivenOnce(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		opts    func(reg *resilience.Registry) []resilience.BulkheadOption
		as      string
		wantErr string // "" for none
	}{
		{"unnamed, no observer", func(*resilience.Registry) []resilience.BulkheadOption { return nil }, "a", ""},
		{"named otherwise", func(*resilience.Registry) []resilience.BulkheadOption {
			return []resilience.BulkheadOption{resilience.WithName("a")}
		}, "b", `resilience: Registry.Register: guard "b" is named "a": ` + resilience.ErrNameMismatch.Error()},
		{"named and observed by the registry", func(reg *resilience.Registry) []resilience.BulkheadOption {
			return []resilience.BulkheadOption{resilience.WithName("a"), resilience.WithObserver(reg)}
		}, "a", ""},
		{"named and observed by the registry among others", func(reg *resilience.Registry) []resilience.BulkheadOption {
			return []resilience.BulkheadOption{resilience.WithName("a"), resilience.WithObserver(resilience.MultiObserver(&recorder{}, reg))}
		}, "a", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := resilience.NewRegistry()
			b := resilience.NewBulkhead(1, tc.opts(reg)...)
			err := reg.Register(tc.as, b)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, resilience.ErrNameMismatch)
				assert.Equal(t, tc.wantErr, err.Error())
				_, ok := reg.Lookup(tc.as)
				assert.False(t, ok, "registered")
				return
			}
			require.NoError(t, err)
			require.True(t, b.TryAcquire())
			for range 3 {
				_, err := b.Enter(ctx)
				require.ErrorIs(t, err, resilience.ErrBulkheadFull)
			}
			s, _ := reg.Snapshot(tc.as)
			require.Len(t, s.Events, 1)
			assert.Equal(t, 3, s.Events[0].Count, "each refusal heard once")
			assert.Equal(t, resilience.KindBulkhead, s.Events[0].Component)
		})
	}
}

// TestRegistryUnregisterGivesTheNameBack: a guard that Register named,
// unregistered, may be registered under another name, and reports to the
// registry no longer; its own observer hears its events under its own
// name again.
func TestRegistryUnregisterGivesTheNameBack(t *testing.T) {
	ctx := context.Background()
	own := &recorder{}
	reg := resilience.NewRegistry()
	b := resilience.NewBulkhead(1, resilience.WithObserver(own))
	require.True(t, b.TryAcquire())
	require.NoError(t, reg.Register("a", b))
	_, err := b.Enter(ctx)
	require.Error(t, err)
	require.True(t, reg.Unregister("a"))
	_, err = b.Enter(ctx)
	require.Error(t, err)
	events := own.take()
	require.Len(t, events, 2)
	assert.Equal(t, "a", events[0].Name)
	assert.Empty(t, events[1].Name, "unnamed again")

	require.NoError(t, reg.Register("b", b), "the guard has no name of its own")
	_, err = b.Enter(ctx)
	require.Error(t, err)
	s, _ := reg.Snapshot("b")
	require.Len(t, s.Events, 1)
}

// TestRegistryRegisterRacesCalls: guards serve calls while they are
// registered, unregistered and registered again, and snapshots taken; run
// under -race, nothing races and every event lands somewhere whole.
func TestRegistryRegisterRacesCalls(t *testing.T) {
	ctx := context.Background()
	reg := resilience.NewRegistry()
	b := resilience.NewBulkhead(1)
	br := resilience.NewBreaker()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if done, err := b.Enter(ctx); err == nil {
					done(nil)
				}
				if done, err := br.Enter(ctx); err == nil {
					done(errors.New("down"))
				}
				br.Reset()
			}
		}()
	}
	for range 200 {
		require.NoError(t, reg.Register("pool", b))
		require.NoError(t, reg.Register("db", br))
		_ = reg.Snapshots()
		require.True(t, reg.Unregister("pool"))
		require.True(t, reg.Unregister("db"))
	}
	close(stop)
	wg.Wait()
}

package resilience_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithRand: every component that draws takes its numbers from the
// Rand of WithRand, so that two components given the same seed draw the
// same: a Cursor's and a Retry's backoff jitter, a chaos policy's picks.
func TestWithRand(t *testing.T) {
	jittered := resilience.FullJitter(resilience.Constant(time.Second))
	tests := []struct {
		name string
		run  func(r resilience.Rand) []time.Duration
	}{
		{"Cursor", func(r resilience.Rand) []time.Duration {
			c := resilience.NewCursor(jittered, resilience.WithRand(r))
			var ds []time.Duration
			for range 8 {
				d, _ := c.Next()
				ds = append(ds, d)
			}
			return ds
		}},
		{"Retry", func(r resilience.Rand) []time.Duration {
			var ds []time.Duration
			synctest.Test(t, func(t *testing.T) {
				p := resilience.Retry[int](resilience.WithAttempts(6), resilience.WithBackoff(jittered),
					resilience.WithoutBudget(), resilience.WithRand(r))
				last := time.Now()
				_, _ = resilience.Do(context.Background(), p, func(context.Context) (int, error) {
					now := time.Now()
					ds = append(ds, now.Sub(last))
					last = now
					return 0, errors.New("again")
				})
			})
			return ds[1:]
		}},
		{"ChaosFault", func(r resilience.Rand) []time.Duration {
			p := resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0.5), resilience.WithRand(r))
			var ds []time.Duration
			for i := range 32 {
				if _, err := resilience.Do(context.Background(), p, okFunc); err != nil {
					ds = append(ds, time.Duration(i))
				}
			}
			return ds
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.run(rand.New(rand.NewPCG(1, 2)))
			b := tc.run(rand.New(rand.NewPCG(1, 2)))
			c := tc.run(rand.New(rand.NewPCG(3, 4)))
			require.NotEmpty(t, a)
			assert.Equal(t, a, b, "the same seed draws the same")
			assert.NotEqual(t, a, c, "another seed draws otherwise")
		})
	}
}

// TestWithRandShared: one WithRand of a *rand.Rand, which is not safe for
// concurrent use, shared by components called from many goroutines at
// once: the package draws one number at a time (the race detector checks).
func TestWithRandShared(t *testing.T) {
	opt := resilience.WithRand(rand.New(rand.NewPCG(5, 6)))
	chaos := resilience.ChaosFault[int](errInjected, resilience.WithChaosRate(0.5), opt)
	cursor := resilience.NewCursor(resilience.FullJitter(resilience.Constant(time.Second)), opt)
	var mu sync.Mutex // a Cursor is for one goroutine at a time
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = resilience.Do(context.Background(), chaos, okFunc)
				mu.Lock()
				_, _ = cursor.Next()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestWithRandNil: WithRand refuses a nil Rand by name.
func TestWithRandNil(t *testing.T) {
	tests := []struct {
		name string
		r    resilience.Rand
		want string
	}{
		{"nil", nil, "resilience: WithRand: rand is nil"},
		{"typed nil", (*rand.Rand)(nil), "resilience: WithRand: rand is a nil *rand.Rand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, func() { resilience.WithRand(tc.r) })
		})
	}
}

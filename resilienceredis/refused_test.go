package resilienceredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
)

// TestRefusalsMatchErrRefused: the limiter's refusals, from Redis (the real
// redis-server TestMain started) or from its local share while degraded,
// match resilience.ErrRefused as every guard's do, besides ErrRateLimited;
// a fail-closed limiter's ErrUnavailable is a fault, not a refusal.
func TestRefusalsMatchErrRefused(t *testing.T) {
	fn := func(context.Context) (int, error) { return 1, nil }
	tests := []struct {
		name         string
		refuse       func(t *testing.T) error // returns the error of the call past the limit
		wantRefused  bool
		wantSentinel error
	}{
		{"Allow on the real server", func(t *testing.T) error {
			c := redis.NewClient(&redis.Options{Addr: sharedAddr})
			t.Cleanup(func() { c.Close() })
			l := resilienceredis.NewLimiter(c, 0.001, 1, resilienceredis.WithTimeout(time.Minute))
			key := uniqueKey(t)
			require.NoError(t, l.Allow(ctxBG, key))
			return l.Allow(ctxBG, key)
		}, true, resilience.ErrRateLimited},
		{"Guard on the real server", func(t *testing.T) error {
			c := redis.NewClient(&redis.Options{Addr: sharedAddr})
			t.Cleanup(func() { c.Close() })
			l := resilienceredis.NewLimiter(c, 0.001, 1, resilienceredis.WithTimeout(time.Minute))
			p := resilience.Guarded[int](l.GuardKey(uniqueKey(t)))
			_, err := p.Execute(ctxBG, fn)
			require.NoError(t, err)
			_, err = p.Execute(ctxBG, fn)
			return err
		}, true, resilience.ErrRateLimited},
		{"degraded, fail open: the local share", func(t *testing.T) error {
			l := resilienceredis.NewLimiter(&unreachable{}, 0.001, 2, resilienceredis.WithFailOpen(0.5))
			require.NoError(t, l.Allow(ctxBG, "k"), "the local share of the burst: 2 × 0.5")
			err := l.Allow(ctxBG, "k")
			require.True(t, l.Degraded())
			return err
		}, true, resilience.ErrRateLimited},
		{"degraded, fail closed: a fault", func(t *testing.T) error {
			l := resilienceredis.NewLimiter(&unreachable{}, 10, 2, resilienceredis.WithFailClosed())
			return l.Allow(ctxBG, "k")
		}, false, resilienceredis.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.refuse(t)
			require.ErrorIs(t, err, tc.wantSentinel)
			assert.Equal(t, tc.wantRefused, errors.Is(err, resilience.ErrRefused), "errors.Is(%v, ErrRefused)", err)
			if tc.wantRefused {
				var re *resilienceredis.RefusedError
				assert.ErrorAs(t, err, &re)
			}
		})
	}
}

package resilienceredis_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceredis"
)

// unreachable is a client whose every command fails, as with Redis down,
// and that counts the commands.
type unreachable struct{ calls atomic.Int64 }

func (u *unreachable) EvalSha(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	u.calls.Add(1)
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(errors.New("test: connection refused"))
	return cmd
}

func (u *unreachable) Eval(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return u.EvalSha(ctx, "", keys, args...)
}

// TestDurationOptionsSaturate: every option that takes a duration, given
// the largest Duration or 200 years, behaves as its doc says, with no sum
// that wraps.
func TestDurationOptionsSaturate(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, d time.Duration)
	}{
		{"WithProbeInterval: a degraded limiter does not ask again", func(t *testing.T, d time.Duration) {
			u := &unreachable{}
			l := resilienceredis.NewLimiter(u, 10, 100, resilienceredis.WithProbeInterval(d))
			for range 5 {
				require.NoError(t, l.Allow(ctxBG, "k"), "answered locally")
			}
			assert.True(t, l.Degraded())
			assert.Equal(t, int64(1), u.calls.Load(), "only the first call asked Redis")
		}},
		{"WithTimeout: answers come from Redis", func(t *testing.T, d time.Duration) {
			l, _ := frozen(t, 10, 1, resilienceredis.WithTimeout(d))
			require.NoError(t, l.Allow(ctxBG, "k"))
			err := l.Allow(ctxBG, "k")
			require.ErrorIs(t, err, resilience.ErrRateLimited)
			hint, _ := resilience.RetryAfter(err)
			assert.Equal(t, 100*time.Millisecond, hint, "Redis's hint")
			assert.False(t, l.Degraded())
		}},
		{"WithRateLimitWait: a call waits for its token", func(t *testing.T, d time.Duration) {
			l, _ := frozen(t, 1e6, 1, resilienceredis.WithRateLimitWait(d))
			p := resilience.Guarded[int](l.GuardKey("k"))
			for range 2 {
				_, err := p.Execute(ctxBG, func(context.Context) (int, error) { return 1, nil })
				require.NoError(t, err)
			}
			assert.False(t, l.Degraded())
		}},
	}
	for _, tc := range tests {
		for _, d := range []struct {
			name string
			d    time.Duration
		}{{"MaxInt64", math.MaxInt64}, {"200 years", 200 * 365 * 24 * time.Hour}} {
			t.Run(tc.name+"/"+d.name, func(t *testing.T) { tc.run(t, d.d) })
		}
	}
}

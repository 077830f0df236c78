package resilienceredis

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// waiter is a client that answers at once, or, blocking, waits for its
// context to be done, as go-redis waits for a connection of its pool. It
// tells entered whether the context was done already when it was called.
type waiter struct {
	block   atomic.Bool
	entered chan bool
	hold    chan struct{} // when blocking, waited for before the context
}

func (w *waiter) EvalSha(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	select {
	case <-ctx.Done():
		w.entered <- true
	default:
		w.entered <- false
	}
	if !w.block.Load() {
		cmd.SetVal([]any{int64(1), int64(0)})
		return cmd
	}
	if w.hold != nil {
		<-w.hold
	}
	<-ctx.Done()
	cmd.SetErr(ctx.Err())
	return cmd
}

func (w *waiter) Eval(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return w.EvalSha(ctx, "", keys, args...)
}

// TestAskEnds: a decision ends at its deadline (a fault: the limiter
// degrades and answers locally), at its caller's earlier deadline and when
// its caller cancels (the caller's error, no fault), on the caller's
// goroutine (a client that honours deadlines) and in a worker alike. On
// the caller's goroutine, the client hears of a cancellation at the
// deadline: the request's context is done only then, so its timeout is
// short there. A request is used again only with a context that is not
// done.
func TestAskEnds(t *testing.T) {
	background := func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }
	cancelable := func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }
	for _, direct := range []bool{true, false} {
		for _, tc := range []struct {
			name     string
			timeout  time.Duration
			ctx      func() (context.Context, context.CancelFunc)
			cancel   bool  // cancel once the client was called
			want     error // of Allow
			degraded bool
		}{
			{"deadline", time.Millisecond, background, false, nil, true},
			{"deadline under a cancelable caller", time.Millisecond, cancelable, false, nil, true},
			{"caller's deadline", time.Hour, func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Millisecond)
			}, false, context.DeadlineExceeded, false},
			{"caller cancels", time.Hour, cancelable, true, context.Canceled, false},
		} {
			t.Run(fmt.Sprintf("%s direct %v", tc.name, direct), func(t *testing.T) {
				w := &waiter{entered: make(chan bool, 1), hold: make(chan struct{})}
				w.block.Store(true)
				timeout := tc.timeout
				if tc.cancel && direct {
					timeout = time.Millisecond
				}
				l := NewLimiter(w, 10, 10, WithTimeout(timeout))
				l.direct = direct
				ctx, cancel := tc.ctx()
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- l.Allow(ctx, "k") }()
				<-w.entered
				if tc.cancel {
					cancel()
				}
				close(w.hold)
				err := <-errc
				if tc.want == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, tc.want)
				}
				require.Equal(t, tc.degraded, l.Degraded())

				w.block.Store(false)
				l = NewLimiter(w, 10, 10, WithTimeout(time.Hour))
				l.direct = direct
				for range 3 {
					_, err = l.ask(context.Background(), "k", 1, 0)
					require.NoError(t, err)
					require.False(t, <-w.entered, "a request used again is not done")
				}
			})
		}
	}
}

// TestHonoursDeadlines: the script runs on the caller's goroutine only
// with a *redis.Client whose ContextTimeoutEnabled is set.
func TestHonoursDeadlines(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer ring.Close()
	for _, tc := range []struct {
		name   string
		client Scripter
		want   bool
	}{
		{"default client", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), false},
		{"client with context timeouts", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), true},
		{"ring", ring, false},
		{"other", &waiter{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, ok := tc.client.(*redis.Client); ok {
				defer c.Close()
			}
			require.Equal(t, tc.want, NewLimiter(tc.client, 1, 1).direct)
		})
	}
}

package resilience_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

// breakerRecorder is an observer that writes each event as a line, and asks for
// outcomes when outcomes is set. It calls the breaker's State from each
// event, which would deadlock if events were emitted under a lock.
type breakerRecorder struct {
	b        *resilience.Breaker
	outcomes bool
	lines    []string
}

type breakerCtxKey struct{}

func (r *breakerRecorder) Observe(ctx context.Context, e resilience.Event) {
	r.b.State()
	line := fmt.Sprintf("%s %s/%s", e.Kind, e.Component, e.Name)
	switch e.Kind {
	case resilience.EventStateChange:
		line += fmt.Sprintf(" %v->%v", e.From, e.To)
	case resilience.EventRefused:
		line += fmt.Sprintf(" err=%v wait=%v ctx=%v", e.Err, e.Wait, ctx.Value(breakerCtxKey{}))
	case resilience.EventCallEnded:
		line += fmt.Sprintf(" err=%v took=%v", e.Err, e.Duration)
	}
	r.lines = append(r.lines, line)
}

func (r *breakerRecorder) ObserveOutcomes() bool { return r.outcomes }

// TestBreakerEvents: every change of state, every refusal with its hint,
// and, for an observer that asks, every call's end reach the observer in
// order; the hook sees the same changes.
func TestBreakerEvents(t *testing.T) {
	for _, outcomes := range []bool{false, true} {
		t.Run(fmt.Sprintf("outcomes %v", outcomes), func(t *testing.T) {
			clk := newManualClock()
			obs := &breakerRecorder{outcomes: outcomes}
			var hooked []string
			hook := stateObserver(func(from, to resilience.BreakerState) {
				hooked = append(hooked, fmt.Sprintf("%v->%v", from, to))
			})
			b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithObserver(resilience.MultiObserver(obs, hook)),
				resilience.WithName("payments"), resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second),
				resilience.WithBreakerHintJitter(0))
			obs.b = b
			call := func(ctx context.Context, took time.Duration, err error) {
				_, _ = resilience.Do(ctx, resilience.Guarded[int](b), func(context.Context) (int, error) {
					clk.Add(took)
					return 0, err
				})
			}
			ctx := context.WithValue(context.Background(), breakerCtxKey{}, "caller")
			call(ctx, 5*time.Millisecond, nil)
			call(ctx, time.Millisecond, errDown)
			call(ctx, 0, nil) // refused
			clk.Add(time.Second)
			call(ctx, 2*time.Millisecond, nil) // the probe
			b.Trip()
			b.Trip() // restarts the cool-down: no change of state
			b.Isolate()
			b.Reset()
			b.Reset()

			var want []string
			ended := func(line string) {
				if outcomes {
					want = append(want, line)
				}
			}
			ended("call-ended breaker/payments err=<nil> took=5ms")
			want = append(want, "state-change breaker/payments closed->open")
			ended("call-ended breaker/payments err=service down took=1ms")
			want = append(want, "refused breaker/payments err=resilience: circuit breaker open wait=1.001s ctx=caller",
				"state-change breaker/payments open->half-open",
				"state-change breaker/payments half-open->closed")
			ended("call-ended breaker/payments err=<nil> took=2ms")
			want = append(want, "state-change breaker/payments closed->open", "state-change breaker/payments open->closed")
			assert.Equal(t, want, obs.lines)
			assert.Equal(t, []string{"closed->open", "open->half-open", "half-open->closed", "closed->open", "open->closed"}, hooked)
		})
	}
}

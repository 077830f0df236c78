package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

type callKey struct{}

// contextEvents records each event's kind with the call label its context
// carries ("-" for none). It asks for outcomes.
type contextEvents struct {
	mu  sync.Mutex
	got []string
}

func (o *contextEvents) Observe(ctx context.Context, e resilience.Event) {
	label, ok := ctx.Value(callKey{}).(string)
	if !ok {
		label = "-"
	}
	s := e.Kind.String() + " " + label
	if e.Kind == resilience.EventStateChange {
		s = fmt.Sprintf("%s %v>%v %s", e.Kind, e.From, e.To, label)
	}
	o.mu.Lock()
	o.got = append(o.got, s)
	o.mu.Unlock()
}

func (o *contextEvents) ObserveOutcomes() bool { return true }

// TestGuardEventsCarryTheCallersContext: a guard's events carry the
// context of the call they belong to, through Guarded and through Enter:
// the end of a call, and a breaker's change of state, with the call that
// made it (a method such as Trip has none).
func TestGuardEventsCarryTheCallersContext(t *testing.T) {
	errDown := errors.New("down")
	call := func(label string) context.Context {
		return context.WithValue(context.Background(), callKey{}, label)
	}
	// enter runs a call through g's Enter.
	enter := func(g resilience.Guard, ctx context.Context, err error) {
		done, e := g.Enter(ctx)
		if e == nil {
			done(err)
		}
	}
	guarded := func(g resilience.Guard, ctx context.Context, err error) {
		_, _ = resilience.Guarded[int](g).Execute(ctx, func(context.Context) (int, error) { return 0, err })
	}
	for name, through := range map[string]func(resilience.Guard, context.Context, error){"Guarded": guarded, "Enter": enter} {
		t.Run(name+"/breaker", func(t *testing.T) {
			var o contextEvents
			clk := clock.NewMock()
			b := resilience.NewBreaker(resilience.WithObserver(&o), resilience.WithClock(clk),
				resilience.WithBreakerThreshold(1), resilience.WithBreakerCoolDown(time.Second))
			through(b, call("a"), nil)
			through(b, call("b"), errDown) // trips
			through(b, call("c"), nil)     // refused
			clk.Add(time.Second)
			through(b, call("d"), nil) // half-opens, probes, closes
			b.Trip()
			assert.Equal(t, []string{
				"call-ended a",
				"state-change closed>open b",
				"call-ended b",
				"refused c",
				"state-change open>half-open d",
				"state-change half-open>closed d",
				"call-ended d",
				"state-change closed>open -",
			}, o.got)
		})
		t.Run(name+"/bulkhead", func(t *testing.T) {
			var o contextEvents
			b := resilience.NewBulkhead(1, resilience.WithObserver(&o))
			through(b, call("a"), nil)
			through(b, call("b"), errDown)
			assert.True(t, b.TryAcquire())
			through(b, call("c"), nil) // refused
			b.Release()
			assert.Equal(t, []string{"call-ended a", "call-ended b", "refused c", "call-ended c"}, o.got)
		})
	}
}

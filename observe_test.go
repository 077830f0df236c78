package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// panickyObserver panics with its value on events of one kind, once armed,
// and counts the events of that kind it saw.
type panickyObserver struct {
	kind  resilience.EventKind
	armed bool
	seen  int
}

func (o *panickyObserver) Observe(_ context.Context, e resilience.Event) {
	if e.Kind != o.kind {
		return
	}
	o.seen++
	if o.armed {
		o.armed = false
		panic("observer failed")
	}
}

// recovered runs f and returns what it panicked with, nil if nothing.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestObserverPanicLate: a late panic is reported in the goroutine that ran
// fn, after the caller has its answer. An observer that panics there has no
// caller to go up through, and ends the program, as a panic in any goroutine
// does; the caller's call was answered before. The scenario runs in a child
// process, which is expected to crash.
func TestObserverPanicLate(t *testing.T) {
	if os.Getenv("RESILIENCE_OBSERVER_PANIC_CHILD") == "1" {
		lateObserverPanic()
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hung child, not a measure
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestObserverPanicLate$")
	cmd.Env = append(os.Environ(), "RESILIENCE_OBSERVER_PANIC_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the child should crash; stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	assert.Contains(t, stdout.String(), "caller answered: resilience: timeout")
	assert.Contains(t, stderr.String(), "panic: observer failed")
}

// lateObserverPanic is the child's scenario: it never returns, for the
// observer's panic ends the process.
func lateObserverPanic() {
	release := make(chan struct{})
	p := resilience.Timeout[int](time.Millisecond,
		resilience.WithObserver(&panickyObserver{kind: resilience.EventLatePanic, armed: true}))
	_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
		<-release
		panic("too late")
	})
	fmt.Println("caller answered:", err)
	close(release)
	select {} // the observer's panic ends the process
}

// TestObserverPanicGoesUp: a panic in Observe goes up through the call that
// emitted the event, and leaves the component consistent and usable. Each
// case skips while its component emits no event of the kind.
func TestObserverPanicGoesUp(t *testing.T) {
	ctx := context.Background()
	errDown := errors.New("down")
	down := func(context.Context) (int, error) { return 0, errDown }
	up := func(context.Context) (int, error) { return 1, nil }
	tests := []struct {
		name string
		kind resilience.EventKind
		// run makes the component emit the event with the observer armed,
		// then checks, with the observer disarmed, that it still works.
		run func(t *testing.T, o resilience.Option) (panicked any)
	}{
		{"retry", resilience.EventRetry, func(t *testing.T, o resilience.Option) any {
			p := resilience.Retry[int](o, resilience.WithBackoff(resilience.Constant(0)))
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			return r
		}},
		{"breaker", resilience.EventStateChange, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBreaker(o, resilience.WithBreakerThreshold(1))
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, down) })
			assert.Equal(t, resilience.BreakerOpen, b.State(), "the breaker opened before Observe ran")
			_, err := p.Execute(ctx, up)
			assert.ErrorIs(t, err, resilience.ErrBreakerOpen)
			return r
		}},
		{"bulkhead", resilience.EventRefused, func(t *testing.T, o resilience.Option) any {
			b := resilience.NewBulkhead(1, o)
			require.True(t, b.TryAcquire())
			p := resilience.Guarded[int](b)
			r := recovered(func() { _, _ = p.Execute(ctx, up) })
			assert.Equal(t, 1, b.InUse(), "the refused call took no slot")
			assert.Equal(t, 0, b.Waiting(), "the refused call left no waiter")
			b.Release()
			v, err := p.Execute(ctx, up)
			assert.Equal(t, 1, v)
			assert.NoError(t, err)
			assert.Equal(t, 0, b.InUse())
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := &panickyObserver{kind: tc.kind, armed: true}
			r := tc.run(t, resilience.WithObserver(obs))
			if obs.seen == 0 {
				t.Skipf("%s emits no %v yet", tc.name, tc.kind)
			}
			assert.Equal(t, "observer failed", r, "the observer's panic did not go up through the call")
		})
	}
}

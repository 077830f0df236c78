// Package wait offers part of the API of k8s.io/apimachinery/pkg/util/wait
// (Backoff and its Step, DelayWithReset, ExponentialBackoff, and the Until
// family) on top of resilience.KubernetesBackoff, resilience.Cursor and
// resilience.Repeat, so that Kubernetes' own tests check ours. It is
// written for this module's tests, not for use.
package wait

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"time"

	"github.com/faf87a20/resilience"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/clock"
)

// jitterRand is the source of Step's jitter, as in Kubernetes, where tests
// seed it.
var jitterRand = rand.Float64

// floatRand draws resilience's 64-bit numbers from a float source in [0, 1).
type floatRand struct{ f func() float64 }

func (r floatRand) Uint64() uint64 { return uint64(r.f() * (1 << 64)) }

// Backoff is Kubernetes' wait.Backoff; Step walks it as Kubernetes does.
type Backoff struct {
	Duration time.Duration
	Factor   float64
	Jitter   float64
	Steps    int
	Cap      time.Duration
}

// kube returns b as a resilience.KubernetesBackoff; a negative Jitter is
// none, as in Kubernetes.
func (b *Backoff) kube(jitter bool) resilience.Backoff {
	k := resilience.KubernetesBackoff{Duration: b.Duration, Factor: b.Factor, Steps: b.Steps, Cap: b.Cap}
	if jitter {
		k.Jitter = max(b.Jitter, 0)
	}
	return resilience.UseRand(k, floatRand{jitterRand})
}

// Step returns the next wait and moves b on by one step: Duration grows by
// Factor, up to Cap, while Steps last. A nil b waits 0.
func (b *Backoff) Step() time.Duration {
	if b == nil {
		return 0
	}
	d, _ := b.kube(true).Delay(1, 0)
	if b.Steps < 1 {
		return d
	}
	grown, _ := b.kube(false).Delay(2, 0)
	capped := b.Cap > 0 && b.Factor != 0 && float64(b.Duration)*b.Factor > float64(b.Cap)
	b.Duration, b.Steps = grown, b.Steps-1
	if capped {
		b.Steps = 0
	}
	return d
}

// DelayFunc returns the next wait.
type DelayFunc func() time.Duration

// DelayFunc returns the waits of b, from a copy.
func (b Backoff) DelayFunc() DelayFunc {
	c := b
	return c.Step
}

// clockOf is a Kubernetes clock as resilience's.
type clockOf struct{ c clock.Clock }

func (k clockOf) Now() time.Time { return k.c.Now() }

func (k clockOf) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	t := k.c.NewTimer(d.Sub(k.c.Now()))
	go func() {
		select {
		case <-t.C():
			cancel()
		case <-ctx.Done():
			t.Stop()
		}
	}()
	return ctx, cancel
}

// DelayWithReset returns the waits of b from a resilience.Cursor that
// starts over when more than resetInterval has passed on c since the last
// wait. A resetInterval of 0 or less gives Duration every time, as in
// Kubernetes.
func (b Backoff) DelayWithReset(c clock.Clock, resetInterval time.Duration) DelayFunc {
	if b.Factor <= 0 {
		return b.DelayFunc()
	}
	if resetInterval <= 0 {
		b.Steps, b.Factor = 0, 0
		return b.DelayFunc()
	}
	steps := b.Steps
	if steps < 1 {
		steps = math.MaxInt32 // the reset restarts the steps, in Kubernetes too
	}
	b.Steps = steps
	cur := resilience.NewCursor(b.kube(true), resilience.WithCursorIdleReset(resetInterval), resilience.WithClock(clockOf{c}))
	return func() time.Duration {
		d, _ := cur.Next()
		return d
	}
}

// ErrWaitTimeout is returned when the condition never became true.
var ErrWaitTimeout = errors.New("timed out waiting for the condition")

// ErrorInterrupted returns err as the interrupted wait's error.
func ErrorInterrupted(err error) error {
	if err == nil {
		return ErrWaitTimeout
	}
	return err
}

// Interrupted reports whether err is the error of a wait that ended.
func Interrupted(err error) bool {
	return errors.Is(err, ErrWaitTimeout) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ConditionFunc reports whether the wait is over.
type ConditionFunc func() (done bool, err error)

// ConditionWithContextFunc reports whether the wait is over.
type ConditionWithContextFunc func(context.Context) (done bool, err error)

// ExponentialBackoff runs condition up to backoff.Steps times, waiting
// backoff's steps between, until it is done or fails.
func ExponentialBackoff(backoff Backoff, condition ConditionFunc) error {
	for backoff.Steps > 0 {
		if ok, err := condition(); err != nil || ok {
			return err
		}
		if backoff.Steps == 1 {
			break
		}
		time.Sleep(backoff.Step())
	}
	return ErrWaitTimeout
}

// ExponentialBackoffWithContext is ExponentialBackoff that ends when ctx
// does.
func ExponentialBackoffWithContext(ctx context.Context, backoff Backoff, condition ConditionWithContextFunc) error {
	for backoff.Steps > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ok, err := condition(ctx); err != nil || ok {
			return err
		}
		if backoff.Steps == 1 {
			break
		}
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return ErrWaitTimeout
}

// JitterUntilWithContext calls f every period, spread by up to
// jitterFactor·period (1 when 0 or less), until ctx ends, through
// resilience.Repeat; sliding starts each period when f returns. A panic in
// f goes to Kubernetes' crash handlers and, unless they say not to crash,
// on up.
func JitterUntilWithContext(ctx context.Context, f func(context.Context), period time.Duration, jitterFactor float64, sliding bool) {
	if jitterFactor <= 0 {
		jitterFactor = 1
	}
	opts := []resilience.RepeatOption{resilience.WithRepeatPanicHandler(func(p *resilience.PanicError) {
		for _, h := range runtime.PanicHandlers {
			h(ctx, p.Value)
		}
		if runtime.ReallyCrash {
			panic(p.Value)
		}
	})}
	if !sliding {
		opts = append(opts, resilience.WithRepeatFixedRate())
	}
	b := resilience.UseRand(resilience.KubernetesBackoff{Duration: period, Jitter: jitterFactor}, floatRand{jitterRand})
	resilience.Repeat(ctx, b, f, opts...)
}

// JitterUntil is JitterUntilWithContext until stopCh is closed.
func JitterUntil(f func(), period time.Duration, jitterFactor float64, sliding bool, stopCh <-chan struct{}) {
	ctx, cancel := contextFor(stopCh)
	defer cancel()
	JitterUntilWithContext(ctx, func(context.Context) { f() }, period, jitterFactor, sliding)
}

// Until calls f every period, from when it returns, until stopCh is
// closed.
func Until(f func(), period time.Duration, stopCh <-chan struct{}) {
	JitterUntil(f, period, 0.0, true, stopCh)
}

// UntilWithContext calls f every period, from when it returns, until ctx
// ends.
func UntilWithContext(ctx context.Context, f func(context.Context), period time.Duration) {
	JitterUntilWithContext(ctx, f, period, 0.0, true)
}

// NonSlidingUntil calls f every period, from when it is called, until
// stopCh is closed.
func NonSlidingUntil(f func(), period time.Duration, stopCh <-chan struct{}) {
	JitterUntil(f, period, 0.0, false, stopCh)
}

// NonSlidingUntilWithContext calls f every period, from when it is called,
// until ctx ends.
func NonSlidingUntilWithContext(ctx context.Context, f func(context.Context), period time.Duration) {
	JitterUntilWithContext(ctx, f, period, 0.0, false)
}

// contextFor returns a context that ends when stopCh is closed: its Err
// reads stopCh, so that Repeat, which checks Err before every call of f,
// sees a closed stopCh at once, as Kubernetes' loop does.
func contextFor(stopCh <-chan struct{}) (context.Context, context.CancelFunc) {
	return stopContext{context.Background(), stopCh}, func() {}
}

type stopContext struct {
	context.Context
	stop <-chan struct{}
}

func (c stopContext) Done() <-chan struct{} { return c.stop }

func (c stopContext) Err() error {
	select {
	case <-c.stop:
		return context.Canceled
	default:
		return nil
	}
}

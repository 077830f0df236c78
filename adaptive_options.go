package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// AdaptiveLimiterOption configures [NewAdaptiveLimiter]; an [Option] is one too.
type AdaptiveLimiterOption interface {
	applyAdaptiveLimiter(*adaptiveConfig)
}

type adaptiveConfig struct {
	initial, floor, ceiling int
	tolerance               float64
	window, probeEvery      time.Duration
	wait                    time.Duration
	waitFrom                Priority
	queue                   int64
	classifier              func(error) Outcome
	common
}

type adaptiveOptionFunc func(*adaptiveConfig)

func (f adaptiveOptionFunc) applyAdaptiveLimiter(c *adaptiveConfig) { f(c) }

func (o Option) applyAdaptiveLimiter(c *adaptiveConfig) { o.set(&c.common) }

// WithAdaptiveLimits bounds the limit: it never goes below floor nor above
// ceiling. The defaults are 1 and 1000. It panics if floor is less than 1,
// or ceiling more than math.MaxInt32; [NewAdaptiveLimiter] panics if floor
// is above ceiling.
func WithAdaptiveLimits(floor, ceiling int) AdaptiveLimiterOption {
	if floor < 1 {
		panic(fmt.Sprintf("resilience: WithAdaptiveLimits: floor must be at least 1, got %d", floor))
	}
	if ceiling > math.MaxInt32 {
		panic(fmt.Sprintf("resilience: WithAdaptiveLimits: ceiling must be at most %d, got %d", math.MaxInt32, ceiling))
	}
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.floor, c.ceiling = floor, ceiling })
}

// WithAdaptiveInitial sets the limit to start with, under which the first
// baseline is measured. The default is 20, or the floor or the ceiling if
// 20 is outside them. It panics if n is less than 1.
func WithAdaptiveInitial(n int) AdaptiveLimiterOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithAdaptiveInitial: initial limit must be at least 1, got %d", n))
	}
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.initial = n })
}

// WithAdaptiveTolerance sets how many times the no-load latency calls may
// take before the limit stops rising. The default is 1.25. It panics if f
// is NaN, less than 1 or infinite.
func WithAdaptiveTolerance(f float64) AdaptiveLimiterOption {
	if !(f >= 1) || math.IsInf(f, 1) {
		panic(fmt.Sprintf("resilience: WithAdaptiveTolerance: tolerance must be at least 1 and finite, got %v", f))
	}
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.tolerance = f })
}

// WithAdaptiveWindow sets the shortest window over which latencies are
// averaged before the limit moves. The default is 100ms; a window past the
// end of time (as math.MaxInt64) never closes, so the limit stays at its
// initial value. It panics if d is not positive.
func WithAdaptiveWindow(d time.Duration) AdaptiveLimiterOption {
	if d <= 0 {
		panic(fmt.Sprintf("resilience: WithAdaptiveWindow: window must be positive, got %v", d))
	}
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.window = d })
}

// WithAdaptiveProbeInterval sets how often, at the least, the no-load
// latency is measured again by halving the limit for a moment; a limit
// that has halved or doubled since the last measure brings the next one
// sooner. The default is 30s; a duration past the end of time (as
// math.MaxInt64) means no probe but those. It panics if d is not positive.
func WithAdaptiveProbeInterval(d time.Duration) AdaptiveLimiterOption {
	if d <= 0 {
		panic(fmt.Sprintf("resilience: WithAdaptiveProbeInterval: interval must be positive, got %v", d))
	}
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.probeEvery = d })
}

// WithAdaptiveWait lets a call that finds its share of the limit in use
// wait for a slot, the highest priority first, up to d and as long as its
// context's deadline leaves time for an answer. The default, 0, is not to
// wait. It panics if d is negative.
func WithAdaptiveWait(d time.Duration) AdaptiveLimiterOption {
	checkDuration("WithAdaptiveWait", "wait", d)
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.wait = d })
}

// WithAdaptiveWaitPriority lets only calls of priority p or above wait
// ([WithAdaptiveWait]); the others are refused at once. The default is
// every priority. A p above [PriorityCritical] means PriorityCritical, one
// below [PrioritySheddable] every priority, as a priority outside them
// counts as the nearest everywhere.
func WithAdaptiveWaitPriority(p Priority) AdaptiveLimiterOption {
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.waitFrom = p })
}

// WithAdaptiveQueue bounds how many calls may wait ([WithAdaptiveWait]) at
// once. By default any number may. It panics if n is negative.
func WithAdaptiveQueue(n int) AdaptiveLimiterOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithAdaptiveQueue: queue length must not be negative, got %d", n))
	}
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.queue = int64(n) })
}

// WithAdaptiveClassifier sets how the limiter counts the error of a call
// it admitted (f never sees nil: no error is a success). [OutcomeSuccess]
// makes the call a latency sample; [OutcomeFailure] makes it a sample and
// a drop, a sign of overload that cuts the limit; [OutcomeIgnored] frees
// its slot and is neither a sample nor a drop. Any other value counts as a
// failure. A call its caller cancelled (an error matching context.Canceled
// while the call's context is cancelled, or any such error given to
// [AdaptiveLimiter.Enter]'s done) is ignored before f is asked. By default
// an error matching context.DeadlineExceeded (as [ErrTimeout] does) or a
// *[PanicError] is a failure, and every other error a success. f is called
// on the caller's goroutine, concurrently when calls are; a panic in f
// counts as a failure, then goes on up through the call. It panics if f is
// nil.
func WithAdaptiveClassifier(f func(err error) Outcome) AdaptiveLimiterOption {
	checkClassifier("WithAdaptiveClassifier", f)
	return adaptiveOptionFunc(func(c *adaptiveConfig) { c.classifier = f })
}

// adaptiveOutcome is the limiter's default classifier.
func adaptiveOutcome(err error) Outcome {
	var pe *PanicError
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) {
		return OutcomeFailure
	}
	return OutcomeSuccess
}

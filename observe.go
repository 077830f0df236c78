package resilience

import (
	"context"
	"strconv"
	"time"
)

// Observer receives, as [Event] values, what the policies, guards and
// batchers it is given to do: retries, give-ups, timeouts, refusals, breaker
// state changes, batches sent. Give one to any constructor with
// [WithObserver], and label the component with [WithName]. An Observer must
// be safe for concurrent use and ignore kinds it does not know.
//
// Observe is called synchronously, outside every lock the package holds, in
// the goroutine of the call the event belongs to and with its context (a
// batch, or a change made by a method such as Trip, has a context of the
// component's own): a slow observer delays only that call, and may call the
// component's methods. A panic in Observe goes up through that call, like a
// panic in fn. Events no caller waits for ([EventLatePanic], the
// [EventDiscarded] of an abandoned call, those of a [Hedge]'s timer and a
// [Batcher]'s [EventBatchSent]) come in a goroutine of their own, where a
// panic in Observe is recovered and dropped.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts an ordinary function to an [Observer].
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// OutcomeObserver is an [Observer] that also wants an [EventCallEnded] for
// every call, successful ones included, for metrics of calls by outcome.
// Without it a call that succeeds emits nothing. A call through a
// composition is one EventCallEnded, from the outermost layer that reports
// outcomes (see [Compose]).
type OutcomeObserver interface {
	Observer
	// ObserveOutcomes reports whether the observer wants EventCallEnded. It
	// is asked once, when the component is built.
	ObserveOutcomes() bool
}

// WithObserver makes a policy, guard or batcher report what it does to o.
// By default nothing is reported. It panics if o is nil.
func WithObserver(o Observer) Option {
	if isNil(o) {
		panic("resilience: WithObserver: observer is " + nilName(o))
	}
	outcomes := false
	if oo, ok := o.(OutcomeObserver); ok {
		outcomes = oo.ObserveOutcomes()
	}
	return Option{set: func(c *common) { c.observer, c.outcomes = o, outcomes }}
}

// WithName labels a policy, guard or batcher in the events it reports
// ([Event].Name), so that an observer shared by several can tell them
// apart: "users-api", "payments-breaker". The default is no name.
func WithName(name string) Option {
	return Option{set: func(c *common) { c.name = name }}
}

// observe hands e to the observer, labelled with the component's name.
// Callers check c.observer != nil first, so that an unobserved component
// does not even build the event.
func (c *common) observe(ctx context.Context, e Event) {
	e.Name = c.name
	c.observer.Observe(ctx, e)
}

// observeDetached is observe for an event emitted in a goroutine that no
// caller waits on: an abandoned fn's, a losing hedge's, a timer's, a
// batch's. A panic in Observe there has no call to go up through, and
// would end the program; it is dropped instead, so that the goroutine
// finishes its work. Each such event is emitted where the goroutine holds
// nothing and owes no caller an answer, so a runtime.Goexit in Observe
// ends only that goroutine.
func (c *common) observeDetached(ctx context.Context, e Event) {
	defer func() { _ = recover() }()
	c.observe(ctx, e)
}

// EventKind says what an [Event] reports. New kinds are added as the
// package grows; observers must ignore kinds they do not know.
type EventKind uint8

const (
	// EventAttemptFailed: an attempt of a Retry failed (Attempt, Err).
	EventAttemptFailed EventKind = iota + 1
	// EventRetry: a Retry will make another attempt after Wait (Attempt is
	// the attempt that failed, Err its error).
	EventRetry
	// EventGiveUp: a Retry makes no further attempt (Attempt, Err the last
	// error, Reason why: ErrRetriesExhausted, ErrRetryBudgetExhausted, the
	// context's error).
	EventGiveUp
	// EventTimeout: a Timeout's deadline passed before fn returned (Wait is
	// the timeout).
	EventTimeout
	// EventStateChange: a Breaker changed state (From, To).
	EventStateChange
	// EventRefused: a guard refused a call (Err is the refusal, Wait its
	// retry hint, 0 for none).
	EventRefused
	// EventWaitStarted: a call began to wait for a guard (a bulkhead slot,
	// rate limiter tokens).
	EventWaitStarted
	// EventWaitEnded: a wait for a guard ended (Wait is how long it took,
	// Err nil when the call was admitted).
	EventWaitEnded
	// EventBatchSent: a Batcher's batch call returned (Size, Duration, Err
	// the batch's error).
	EventBatchSent
	// EventLatePanic: fn panicked after its caller stopped waiting for it
	// (Panic).
	EventLatePanic
	// EventDiscarded: a result was obtained and not returned, and was handed
	// to the WithDiscard hook (Attempt, Err).
	EventDiscarded
	// EventCallEnded: a call through the component ended (Err, Attempt,
	// Duration). Only for an [OutcomeObserver] that asked for it, and in a
	// composition only from its outermost layer that reports outcomes
	// (see [Compose]).
	EventCallEnded
	// EventFallback: a Fallback answers for a failed call (Err, the call's
	// error).
	EventFallback
	// EventHedge: a Hedge started another attempt (Attempt, from 2; Wait,
	// the delay it waited for).
	EventHedge
	// EventDegraded: a limiter that keeps its state elsewhere (a shared
	// limiter on Redis) could not reach it and answers without it from now
	// on (Err, the error that made it give up).
	EventDegraded
	// EventRecovered: a degraded limiter reached its store again and
	// answers from it once more (Duration, how long it was degraded).
	EventRecovered
	// EventExhausted: a [RetryBudget] (a quota, a throttle or a budget)
	// refused a retry after allowing the one asked for before it: it has
	// run out, and refuses retries until successes refill it (Attempt, the
	// attempt whose retry it refused; Err, ErrRetryBudgetExhausted). Each
	// refusal is an EventRefused as well; this one comes once per change.
	EventExhausted
	// EventReplenished: an exhausted [RetryBudget] allowed a retry again
	// (Attempt, the attempt whose retry it allowed; Duration, how long it
	// refused retries).
	EventReplenished
	// EventLimitChanged: an [AdaptiveLimiter] moved its limit (Attempt, the
	// limit before; Size, the limit after; Reason, why: "latency", "drops",
	// "probe" when it halves the limit to measure the no-load latency,
	// "probe-ended" when it restores it).
	EventLimitChanged
	// EventChaos: a chaos policy injected something into a call (Component
	// says what: "chaos-fault" with Err, "chaos-latency" with Wait,
	// "chaos-outcome", "chaos-behavior").
	EventChaos
)

var eventKindNames = [...]string{
	EventAttemptFailed: "attempt-failed",
	EventRetry:         "retry",
	EventGiveUp:        "give-up",
	EventTimeout:       "timeout",
	EventStateChange:   "state-change",
	EventRefused:       "refused",
	EventWaitStarted:   "wait-started",
	EventWaitEnded:     "wait-ended",
	EventBatchSent:     "batch-sent",
	EventLatePanic:     "late-panic",
	EventDiscarded:     "discarded",
	EventCallEnded:     "call-ended",
	EventFallback:      "fallback",
	EventHedge:         "hedge",
	EventDegraded:      "degraded",
	EventRecovered:     "recovered",
	EventExhausted:     "exhausted",
	EventReplenished:   "replenished",
	EventLimitChanged:  "limit-changed",
	EventChaos:         "chaos",
}

// String returns the kind's name in lower case, words joined by hyphens:
// "retry", "give-up", "state-change".
func (k EventKind) String() string {
	if k.known() {
		return eventKindNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// known reports whether k is one of the kinds above.
func (k EventKind) known() bool {
	return int(k) < len(eventKindNames) && eventKindNames[k] != ""
}

// Event is one thing a component did. Which fields are set depends on the
// kind (see the kinds' docs); the others are zero.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Component is the kind of component that reported it: "retry",
	// "timeout", "breaker", "bulkhead", "budget", "batcher", and so on.
	Component string
	// Name is the component's name, from WithName.
	Name string
	// Attempt is the attempt the event is about, from 1.
	Attempt int
	// Err is the error the event is about.
	Err error
	// Reason says why a Retry gave up.
	Reason error
	// Wait is a wait: before a retry, a retry hint, a timeout, or the time
	// a call waited for a guard.
	Wait time.Duration
	// Duration is how long a batch or a call took.
	Duration time.Duration
	// Size is the number of items of a batch.
	Size int
	// From and To are a breaker's states before and after a change.
	From, To BreakerState
	// Panic is the panic of an EventLatePanic.
	Panic *PanicError
}

package resilience

import (
	"context"
	"strconv"
	"time"
)

// Observer receives, as [Event] values, what the components given it with
// [WithObserver] do. It must be safe for concurrent use and ignore kinds it
// does not know. Observe is called outside every lock, in the goroutine and
// with the context of the call the event belongs to, so a panic in it goes
// up through that call; events no caller waits for (a late panic, a batch
// sent) come in a goroutine of their own, where a panic is dropped.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts an ordinary function to an [Observer].
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// OutcomeObserver is an [Observer] that may ask for an [EventCallEnded] for
// every call, successful ones included (one per call through a [Compose]);
// other observers hear nothing of a call that succeeds.
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
// ([Event].Name): "users-api". The default is no name. A guard registered
// in a [Registry] takes the name it is registered under, and needs no
// WithName; one built with it is registered under that name (see
// [Registry.Register]).
func WithName(name string) Option {
	return Option{set: func(c *common) { c.name = name }}
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
// package grows.
type EventKind uint8

const (
	// EventAttemptFailed: an attempt of a Retry failed (Attempt, Err).
	EventAttemptFailed EventKind = iota + 1
	// EventRetry: a Retry will try again after Wait (Attempt failed, Err).
	EventRetry
	// EventGiveUp: a Retry makes no further attempt (Attempt, Err, Reason).
	EventGiveUp
	// EventTimeout: a Timeout's deadline passed first (Wait, the timeout).
	EventTimeout
	// EventStateChange: a Breaker changed state (From, To).
	EventStateChange
	// EventRefused: a guard refused a call (Err, Wait its retry hint).
	EventRefused
	// EventWaitStarted: a call began to wait for a guard.
	EventWaitStarted
	// EventWaitEnded: a wait for a guard ended (Wait, Err nil if admitted).
	EventWaitEnded
	// EventBatchSent: a Batcher's batch call returned (Size, Duration, Err).
	EventBatchSent
	// EventLatePanic: fn panicked after its caller had gone (Panic).
	EventLatePanic
	// EventDiscarded: a result went to the WithDiscard hook (Attempt, Err).
	EventDiscarded
	// EventCallEnded: a call ended (Err, Attempt, Duration), reported only
	// to an [OutcomeObserver] that asked; once per call of a [Compose].
	EventCallEnded
	// EventFallback: a Fallback answers for a failed call (Err).
	EventFallback
	// EventHedge: a Hedge started another attempt (Attempt, Wait).
	EventHedge
	// EventDegraded: a limiter that keeps its state elsewhere (on Redis)
	// answers without it from now on (Err).
	EventDegraded
	// EventRecovered: a degraded limiter reached its store again (Duration).
	EventRecovered
	// EventExhausted: a [RetryBudget] refused a retry after allowing the one
	// before it (Attempt, Err); each refusal is an EventRefused as well.
	EventExhausted
	// EventReplenished: an exhausted [RetryBudget] allowed a retry again
	// (Attempt, Duration).
	EventReplenished
	// EventLimitChanged: an [AdaptiveLimiter] moved its limit (OldLimit,
	// NewLimit, Reason why).
	EventLimitChanged
	// EventChaos: a chaos policy injected into a call (Component says what).
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

// String returns the kind's name: "retry", "give-up", "state-change".
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
// kind (docs/observability.md lists them); the others are zero.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Component is the kind of component that reported it: "retry".
	Component string
	// Name is the component's name, from WithName.
	Name string
	// Attempt is the attempt the event is about, from 1; in a Retry's
	// EventCallEnded, the last attempt, which is the attempts the call
	// made.
	Attempt int
	// Err is the error the event is about.
	Err error
	// Reason says why a Retry gave up (ErrRetriesExhausted,
	// ErrRetryBudgetExhausted or the context's error), or, in
	// EventLimitChanged, why the limit moved: an error whose text is
	// "latency", "drops", "probe" or "probe-ended".
	Reason error
	// Wait is a wait, a retry hint or a timeout.
	Wait time.Duration
	// Duration is how long a batch or a call took; in EventReplenished,
	// how long the budget refused retries; in EventRecovered, how long
	// the limiter went without its store.
	Duration time.Duration
	// Size is the number of items of a batch.
	Size int
	// OldLimit and NewLimit are an adaptive limiter's limits before and
	// after an EventLimitChanged.
	OldLimit, NewLimit int
	// From and To are a breaker's states before and after a change.
	From, To BreakerState
	// Panic is the panic of an EventLatePanic.
	Panic *PanicError
}

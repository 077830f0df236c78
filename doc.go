// Package resilience makes calls to unreliable things safe. Typed policies
// (timeout, retry with pluggable backoff, circuit breaker, bulkhead) guard
// any [Func] — a func(ctx) (T, error) — and compose in one line; a typed
// [Batcher] turns many single calls into batch calls.
//
//	users := resilience.Compose(resilience.Timeout[User](2*time.Second), resilience.Guarded[User](breaker))
//	u, err := resilience.Do(ctx, users, func(ctx context.Context) (User, error) { return api.User(ctx, id) })
//
// Policies, guards and batchers are safe for concurrent use. Build them once
// and share them: a breaker protects a service only when every call to it
// goes through the same breaker.
//
// # Policies and guards
//
// A [Policy] wraps a call: [Timeout] bounds how long it may take, [Retry]
// repeats it when it fails, waiting as a [Backoff] says (constant, linear,
// exponential, Fibonacci, jittered in every known way, or a preset that
// reproduces Kubernetes, gRPC, Celery and others) under a retry quota
// of its own or a shared [RetryBudget] (one of [NewRetryQuota], say).
// [Hedge] starts further attempts when one is slow and takes the first
// answer; [Fallback] answers for a call that failed. A [Guard] is a gate
// shared by calls of every result type — a [Breaker] ([NewBreaker]), a
// [Bulkhead] ([NewBulkhead]) or a [RateLimiter] ([NewRateLimiter];
// [NewKeyedRateLimiter] for one limit per user or tenant) — made into a
// policy for one result type by [Guarded]. A [PolicyFunc] turns a function
// of your own into a policy.
//
// Two guards shed load without a number to guess: an [AdaptiveLimiter]
// ([NewAdaptiveLimiter]) is a bulkhead that finds its size from the
// latency of the calls it admits, refusing the lowest [Priority] first
// ([WithPriority]); an [AdaptiveThrottler] ([NewAdaptiveThrottler]) makes a
// client refuse calls itself while the service refuses much of what it is
// sent.
//
// # Batching and coalescing
//
// A [Batcher] ([NewBatcher]) gathers the items of many callers into one
// call of a batch function and gives each caller its own result; a
// [Loader] ([NewLoader]) does the same by key, DataLoader-style. A
// [Singleflight] ([NewSingleflight]) makes concurrent calls for one key
// share one call.
//
// # Composition
//
// [Compose] runs its policies around each other, the first outermost. The
// usual order is
//
//	Compose(Timeout, Retry, Guarded(breaker), Guarded(bulkhead))
//
// so that the timeout bounds the whole call including retries and their
// waits, every attempt is recorded by the breaker (whose refusals tell the
// retry how long to wait), and a bulkhead slot is held only while fn runs. A
// Timeout inside the Retry bounds each attempt instead.
//
// # Errors
//
// Every error the package makes matches one of its sentinels with
// [errors.Is]: [ErrTimeout] (a deadline passed before
// the call returned, whatever it returned; it also matches
// context.DeadlineExceeded), [ErrRetriesExhausted] and
// [ErrRetryBudgetExhausted] (why a [Retry] gave up, in a *[RetryError]),
// [ErrBreakerOpen] (a *[BreakerOpenError]), [ErrBulkheadFull],
// [ErrLimitExceeded] and [ErrThrottled] (a *[ShedError]),
// [ErrBatcherClosed], [ErrBatchResults], [ErrRateLimited] (a
// *[RateLimitError] with the time until the tokens are there; it also
// matches context.DeadlineExceeded when they would come after the
// context's deadline) and [ErrNotFound] (a *[NotFoundError] of a
// [Loader]). Each keeps the underlying cause
// reachable, so errors.Is(err, io.ErrUnexpectedEOF) still holds through a
// retry; [ItemErrors] and *[FallbackError] let errors.Is see every error
// they hold. When the caller's own context ends, the caller gets the
// context's error. Errors that say when to try again implement
// [RetryHint]; [RetryAfter] reads the hint off any error.
//
// # Panics
//
// One rule holds for every policy and guard. A panic or a runtime.Goexit
// in fn happens to the caller, as though fn had run in the caller's
// goroutine (as it does, but in a default-mode [Timeout] and in a
// [Hedge]'s hedges): the caller's goroutine panics with the same value, or
// exits, after every layer on the way has released what it holds, each
// guard receiving a *[PanicError] as the call's outcome. No policy takes
// one for a failure: [Retry] does not retry it, [Fallback] does not answer
// for it. It is late only when the caller has gone already (a Timeout
// that returned at its deadline, a hedge that lost): then it reaches the
// observer as an [EventLatePanic] and is dropped, never ending the
// program. Results differ in one way: the deadline decides them, so a
// result after the deadline is discarded even while the caller is still
// on its way out. The [Batcher], [Loader] and [Singleflight], whose fn
// serves many callers, give each caller a *PanicError instead; when a
// Singleflight ran fn in its first caller's goroutine (see Performance),
// that goroutine then panics, or exits, by the rule above.
//
// # Observability
//
// Every constructor takes [WithObserver] and [WithName]: the component
// then reports what it does — retries, give-ups, timeouts, refusals,
// breaker state changes, waits for a guard, batches sent — to an
// [Observer] as [Event] values, labelled with its name. A call that
// succeeds reports nothing, unless the observer is an [OutcomeObserver]
// that asks for an [EventCallEnded] per call; a call through a [Compose]
// is one such event, from its outermost layer that reports. [SlogObserver]
// ([NewSlogObserver]) logs events through log/slog, at Warn for give-ups
// and state changes, Info for retries and timeouts, Debug for refusals and
// waits; the module github.com/faf87a20/resilience/resilienceotel records
// them as OpenTelemetry metrics and span events. [MultiObserver] hands
// events to several observers.
//
// A [Registry] ([NewRegistry], [DefaultRegistry]) holds guards under names
// and answers a [Snapshot] of each: a breaker's state and failure rate, a
// bulkhead's slots, a limiter's tokens, and the recent events of the name
// when the registry is the guard's observer too. The package
// resiliencehttp serves them as a status page.
//
// # Performance
//
// The path of a call that succeeds is the one each component is built for.
// [Compose] links the package's own policies once, into a chain of direct
// calls, so that linking them adds no interface call and no allocation, and
// a call that succeeds through [Retry], [Fallback] and the guards (by way
// of [Guarded]) allocates nothing. A [PolicyFunc] in a chain costs one
// small allocation a call: the closure that stands for the rest of it.
//
//   - [Retry] allocates nothing either for a call that fails and is then
//     retried; its quota costs a first-attempt success one atomic load
//     while it is full.
//   - A [Breaker]'s success in the closed state takes no lock and reads no
//     clock, unless a time-based window or a slow-call threshold asks for
//     them; a refusal on the real clock reads its state alone.
//     [Breaker.Enter] called directly makes a done function per call,
//     unless the breaker is closed and has no observer.
//   - A [Bulkhead] slot that nobody waits for is one atomic operation to
//     take and one to give back.
//   - A [RateLimiter]'s whole state is one atomic word, the time at which
//     its bucket is full again (the generic cell rate algorithm), so a
//     decision is a reading of the clock and a compare-and-swap. A
//     [KeyedRateLimiter] spreads its keys over parts with a lock each,
//     allocates only a new key's bucket, and looks for idle keys to forget
//     at most once a refill time in a part.
//   - A [Timeout] in its default mode hands fn to a parked goroutine,
//     reused from call to call; the cooperative mode only derives fn's
//     context.
//   - A [Hedge]'s first attempt runs in the caller's goroutine, and its
//     delay is read, without a lock, off histograms of the last 1,000 to
//     2,000 successful attempts.
//   - An [AdaptiveLimiter] admits a call with a compare-and-swap and a
//     reading of the clock, and ends it with a few atomic additions; the
//     call that ends a window works out the new limit, under a lock no
//     call waits for. An [AdaptiveThrottler] takes an atomic addition, two
//     loads and a reading of the clock, and a random number only when it
//     may refuse. Neither allocates through [Guarded].
//   - A [Singleflight] runs fn in a parked worker's goroutine, so that any
//     caller can leave when its context ends; a first caller whose context
//     can never end (its Done is nil, as context.Background's is) runs fn
//     itself, saving the hand-off. A caller who joins a call allocates nothing; one who starts
//     it allocates once when it runs fn itself, four times otherwise.
//   - A chaos policy that injects nothing costs the predicate's call; at a
//     rate of 0 it is no layer at all in a [Compose].
//   - A [Batcher] runs no goroutine while it is idle.
//   - An [Event] is a value, and handing one to an observer allocates
//     nothing; a component with no observer builds no event. A
//     [SlogObserver] first asks its handler whether the level is enabled,
//     and allocates nothing of its own.
//   - A [Registry] costs the calls of the guards it holds nothing: it
//     reads them through their accessors when asked for a snapshot. As an
//     observer it takes a lock of the name's own per event and allocates
//     nothing. [Registry.Snapshots] of 100 breakers with 32 events each
//     takes about 0.3 ms and 450 kB; each event is put in words once. A
//     [KeyedRateLimiter] counts refusals per key on its refusal path
//     alone, in the lock it holds there.
//   - A [Backoff] of the package allocates nothing; a [KubernetesBackoff]
//     computes its first 64 waits once per set of parameters.
//
// The figures, beside those of the peer libraries doing the same work, are
// in the benchmark table of docs/performance.md; benchmarks/README.md says
// what each row measures.
//
// # Testing
//
// Every wait and every reading of the time goes through the package's own
// [Clock] interface, which a *clock.Mock of github.com/benbjohnson/clock
// satisfies as it is; the package imports nothing but the standard library.
// Pass [WithClock] with a *clock.Mock to any policy, guard or batcher and
// move time with the mock's Add. Code where
// goroutines meet real timers can instead run in a testing/synctest bubble,
// where the real clock is fake.
//
// The chaos policies, [ChaosFault], [ChaosLatency], [ChaosOutcome] and
// [ChaosBehavior], inject failures, delays, answers and side effects into
// calls, innermost in a chain, so that a test shows the policies around
// them at work before an outage does.
package resilience

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
// goes through the same breaker. Constructors and options panic, naming
// the value, on one that could mean nothing (a nil includes a nil pointer,
// function or channel in an interface).
//
// # Policies and guards
//
// A [Policy] wraps a call: [Timeout] bounds it, [Retry] repeats it, waiting
// as a [Backoff] says (exponential, jittered, or a preset of Kubernetes,
// gRPC and others) within a [RetryBudget], [Hedge] races a slow call with
// further attempts, and [Fallback] answers for a failed one. A [Guard] is a
// gate shared by calls of every result type, made a policy by [Guarded]: a
// [Breaker], a [Bulkhead], a [RateLimiter] or [KeyedRateLimiter], an
// [AdaptiveLimiter] (a bulkhead that finds its size, shedding the lowest
// [Priority] first) or an [AdaptiveThrottler] (a client that refuses calls
// itself while the service refuses many). A [PolicyFunc] makes a policy of
// a function of your own.
//
// # Batching and coalescing
//
// A [Batcher] gathers the items of many callers into one call of a batch
// function; a [Loader] does the same by key, DataLoader-style; a
// [Singleflight] makes concurrent calls for one key share one call.
//
// # Composition
//
// [Compose] runs its policies around each other, the first outermost. The
// usual order is
//
//	Compose(Timeout, Retry, Guarded(breaker), Guarded(bulkhead))
//
// so that the timeout bounds the whole call, waits included, the breaker
// records every attempt and tells the retry how long to wait, and a
// bulkhead slot is held only while fn runs; a Timeout inside the Retry
// bounds each attempt instead.
//
// # Errors
//
// Every error the package makes matches one of its Err sentinels with
// [errors.Is] and keeps its cause reachable, so errors.Is(err,
// io.ErrUnexpectedEOF) still holds through a retry; the error types carry
// more. Every guard's refusal of a call, whatever the guard, also matches
// [ErrRefused]: the one question to ask of an error for "a guard shed
// this call, it never reached fn". When the caller's own context ends, the
// caller gets the context's error. Errors that say when to try again
// implement [RetryHint]; [RetryAfter] reads the hint off any error.
//
// # Panics
//
// A panic or runtime.Goexit in fn happens to the caller, as though fn had
// run in the caller's goroutine (as it does, but in a default-mode [Timeout]
// and a [Hedge]'s hedges), once every layer on the way has released what it
// holds, each guard receiving a *[PanicError] as the outcome. No policy
// takes it for a failure: [Retry] does not retry it, [Fallback] does not
// answer for it. A panic after the caller has gone (past a Timeout's
// deadline, in a losing hedge) reaches the observer as an [EventLatePanic]
// and is dropped. The [Batcher], [Loader] and [Singleflight], whose fn
// serves many callers, give each caller a *PanicError instead; but a
// Singleflight whose first caller's context can never end (its Done is nil)
// runs fn in that caller's goroutine, which panics by the rule above.
//
// # Observability
//
// The constructors of the policies ([Timeout], [Retry], [Hedge],
// [Fallback], the chaos policies), of the guards, of the [Batcher], [Loader]
// and [Singleflight] and of the retry budgets take [WithObserver] and
// [WithName]: the component then reports what it does (retries, give-ups,
// timeouts, refusals, state changes, waits, batches) to an [Observer] as
// [Event] values labelled with its name; a call that succeeds reports
// nothing unless an [OutcomeObserver] asks, once per call through a
// [Compose]. [NewCursor] and [Repeat] accept both and report nothing;
// [NewRegistry] panics on both (it takes [WithClock] alone); [Compose],
// [Guarded], the backoffs and the observers take neither. [SlogObserver] logs events
// through log/slog, [MultiObserver] hands them to several observers, and
// the module github.com/faf87a20/resilience/resilienceotel records them as
// OpenTelemetry metrics and span events.
//
// A [Registry] ([NewRegistry], [DefaultRegistry]) holds guards under names
// and answers a [Snapshot] of each: a breaker's state and failure rate, a
// bulkhead's slots, a limiter's tokens, and the recent events of the name
// when the registry is the guard's observer too. The package
// resiliencehttp serves them as a status page.
//
// # Performance
//
// What each component costs a call, beside the peer libraries, is in
// docs/performance.md, with the figures of its benchmark table.
//
// # Testing
//
// In a testing/synctest bubble the real clock is fake, so a test of
// timeouts, retries and cool-downs built inside the bubble runs in no real
// time with nothing more. To move time yourself, give a [Clock] with
// [WithClock]: every wait and reading of the time that a call depends on
// goes through it. Any Clock works, and a *clock.Mock of
// github.com/benbjohnson/clock is one (the package itself imports only the
// standard library); docs/testing-your-code.md shows both ways.
//
// The chaos policies ([ChaosFault], [ChaosLatency], [ChaosOutcome],
// [ChaosBehavior]), innermost in a chain, inject failures, delays, answers
// and side effects, to show the policies around them at work before an
// outage does.
package resilience

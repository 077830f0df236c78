package resilience

// The kinds of component, one name each: an [Event]'s Component and a
// [Snapshot]'s Kind say the same kind with the same constant, and so do
// the attribute resilience.component of resilienceotel's metrics and the
// status page of resiliencehttp. They are untyped string constants, as
// Event.Component and Snapshot.Kind are strings: a component of another
// package names its own kind the same way ("redis-rate-limiter").
//
// A [RetryBudget] is one kind, whichever constructor made it (a quota, a
// throttle or a budget): its events say KindRetryBudget, and its snapshot
// says which form it has ([RetryBudgetSnapshot].Form).
const (
	KindBreaker           = "breaker"            // *Breaker
	KindBulkhead          = "bulkhead"           // *Bulkhead
	KindRateLimiter       = "rate-limiter"       // *RateLimiter
	KindKeyedRateLimiter  = "keyed-rate-limiter" // *KeyedRateLimiter and its Guard
	KindRetryBudget       = "retry-budget"       // *RetryBudget: quota, throttle or budget
	KindAdaptiveLimiter   = "adaptive-limiter"   // *AdaptiveLimiter
	KindAdaptiveThrottler = "adaptive-throttler" // *AdaptiveThrottler
	KindKeyed             = "keyed"              // *Keyed: its own refusals; each key's guard says its own kind
	KindHedge             = "hedge"              // the policy of Hedge
	KindRetry             = "retry"              // the policy of Retry
	KindTimeout           = "timeout"            // the policy of Timeout
	KindFallback          = "fallback"           // the policy of Fallback
	KindBatcher           = "batcher"            // *Batcher
	KindLoader            = "loader"             // *Loader
	KindSingleflight      = "singleflight"       // *Singleflight
	KindChaosFault        = "chaos-fault"        // the policy of ChaosFault
	KindChaosLatency      = "chaos-latency"      // the policy of ChaosLatency
	KindChaosOutcome      = "chaos-outcome"      // the policy of ChaosOutcome
	KindChaosBehavior     = "chaos-behavior"     // the policy of ChaosBehavior
)

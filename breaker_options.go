package resilience

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience/internal/window"
)

// BreakerOption configures [NewBreaker]; an [Option] is one too.
type BreakerOption interface {
	applyBreaker(*breakerConfig)
}

type breakerConfig struct {
	threshold   int
	expiry      time.Duration
	rate        float64
	minCalls    int
	windowCalls int
	windowSpan  time.Duration
	slow        time.Duration
	coolDown    time.Duration
	growth      Backoff
	probes      int
	successes   int
	hintJitter  float64
	classifier  func(error) Outcome
	rand        source // of the hint's jitter: math/rand/v2 but in tests
	common
}

func defaultBreakerConfig() breakerConfig {
	return breakerConfig{
		threshold: 5, coolDown: 30 * time.Second, probes: 1, successes: 1,
		classifier: breakerOutcome,
	}
}

// check panics if the options together make no sense.
func (c *breakerConfig) check() {
	if c.threshold == 0 && c.rate == 0 {
		panic("resilience: NewBreaker: no rule can open the breaker (failure threshold 0 and no failure rate)")
	}
	if c.threshold == 0 && c.expiry > 0 {
		panic(fmt.Sprintf("resilience: NewBreaker: WithBreakerFailureExpiry(%v) has no effect with WithBreakerThreshold(0)", c.expiry))
	}
}

type breakerOptionFunc func(*breakerConfig)

func (f breakerOptionFunc) applyBreaker(c *breakerConfig) { f(c) }

func (o Option) applyBreaker(c *breakerConfig) { o.set(&c.common) }

// WithBreakerThreshold opens the breaker after n consecutive failures; a
// success starts the count again. The default is 5; 0 turns the rule off.
// It panics if n is negative.
func WithBreakerThreshold(n int) BreakerOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithBreakerThreshold: threshold must not be negative, got %d", n))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.threshold = n })
}

// WithBreakerFailureExpiry switches the threshold rule to go-resiliency's:
// the breaker opens after threshold failures with no error-free period of
// d between them; successes do not start the count again. It panics unless
// d > 0; [NewBreaker] panics if the threshold is 0.
func WithBreakerFailureExpiry(d time.Duration) BreakerOption {
	if d <= 0 {
		panic(fmt.Sprintf("resilience: WithBreakerFailureExpiry: expiry must be positive, got %v", d))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.expiry = d })
}

// WithBreakerFailureRate also opens the breaker when the failures among the
// last calls outcomes reach the share rate, once minCalls are counted. It
// replaces a [WithBreakerFailureRateWindow] given before it. It
// panics unless 0 < rate <= 1, 1 <= calls <= 1,000,000 and
// 1 <= minCalls <= calls.
func WithBreakerFailureRate(rate float64, minCalls, calls int) BreakerOption {
	const fn = "WithBreakerFailureRate"
	checkRate(fn, rate)
	if calls < 1 || calls > window.MaxCalls {
		panic(fmt.Sprintf("resilience: %s: calls must be between 1 and %d, got %d", fn, window.MaxCalls, calls))
	}
	if minCalls < 1 || minCalls > calls {
		panic(fmt.Sprintf("resilience: %s: minCalls must be between 1 and calls (%d), got %d", fn, calls, minCalls))
	}
	return breakerOptionFunc(func(c *breakerConfig) {
		c.rate, c.minCalls, c.windowCalls, c.windowSpan = rate, minCalls, calls, 0
	})
}

// WithBreakerFailureRateWindow is [WithBreakerFailureRate] over the
// outcomes of the last span of time, in 10 rolling buckets, and replaces it.
// It panics unless 0 < rate <= 1, minCalls >= 1 and span >= 10ns.
func WithBreakerFailureRateWindow(rate float64, minCalls int, span time.Duration) BreakerOption {
	const fn = "WithBreakerFailureRateWindow"
	checkRate(fn, rate)
	if minCalls < 1 {
		panic(fmt.Sprintf("resilience: %s: minCalls must be at least 1, got %d", fn, minCalls))
	}
	if span < window.Buckets {
		panic(fmt.Sprintf("resilience: %s: span must be at least 10ns, got %v", fn, span))
	}
	return breakerOptionFunc(func(c *breakerConfig) {
		c.rate, c.minCalls, c.windowCalls, c.windowSpan = rate, minCalls, 0, span
	})
}

func checkRate(fn string, rate float64) {
	if !(rate > 0 && rate <= 1) { // also false for NaN
		panic(fmt.Sprintf("resilience: %s: rate must be in (0, 1], got %v", fn, rate))
	}
}

// maxSlowCall is the longest slow-call threshold: a call's start is kept
// in 40 bits of microseconds, which measure a call of up to 2^39 µs (6
// days and 8 hours) and tell a clock that went back.
const maxSlowCall = 6 * 24 * time.Hour

// WithBreakerSlowCallThreshold counts a call that takes longer than d, to
// the microsecond, as a failure even when it succeeds. By default no call
// is too slow. It panics unless 0 < d <= 144h.
func WithBreakerSlowCallThreshold(d time.Duration) BreakerOption {
	if d <= 0 || d > maxSlowCall {
		panic(fmt.Sprintf("resilience: WithBreakerSlowCallThreshold: threshold must be in (0, %v], got %v", maxSlowCall, d))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.slow = d })
}

// WithBreakerCoolDown sets how long the breaker stays open before it lets
// probes through. The default is 30s; 0 lets the next call through as a
// probe. It panics if d is negative.
func WithBreakerCoolDown(d time.Duration) BreakerOption {
	checkDuration("WithBreakerCoolDown", "d", d)
	return breakerOptionFunc(func(c *breakerConfig) { c.coolDown = d })
}

// WithBreakerCoolDownBackoff makes the cool-down grow on repeated trips:
// trip n since the breaker last closed stays open b.Delay(n, previous
// cool-down); once b stops, the last cool-down is kept. A panic in b goes
// up through the call that tripped the breaker. It panics if b is nil or a
// [KubernetesBackoff] whose fields have no meaning.
func WithBreakerCoolDownBackoff(b Backoff) BreakerOption {
	checkBackoff("WithBreakerCoolDownBackoff", b)
	return breakerOptionFunc(func(c *breakerConfig) { c.growth = b })
}

// WithBreakerProbes sets how many probe calls a half-open breaker lets run
// at once; more are refused. The default is 1. It panics if n < 1.
func WithBreakerProbes(n int) BreakerOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBreakerProbes: probes must be at least 1, got %d", n))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.probes = n })
}

// WithBreakerSuccessThreshold sets how many probes must succeed before a
// half-open breaker closes; one failure reopens it. The default is 1. It
// panics if n < 1.
func WithBreakerSuccessThreshold(n int) BreakerOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBreakerSuccessThreshold: successes must be at least 1, got %d", n))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.successes = n })
}

// WithBreakerHintJitter adds to each retry hint of an open breaker's
// refusals a random wait of up to f times the cool-down left, so that the
// callers it refused do not all come back at once. The default is 0, and
// docs/breaker.md says why. It panics unless 0 <= f <= 1.
func WithBreakerHintJitter(f float64) BreakerOption {
	if !(f >= 0 && f <= 1) { // also false for NaN
		panic(fmt.Sprintf("resilience: WithBreakerHintJitter: fraction must be in [0, 1], got %v", f))
	}
	return breakerOptionFunc(func(c *breakerConfig) { c.hintJitter = f })
}

// WithBreakerClassifier sets how the breaker counts a call's error (f never
// sees nil: no error is a success). [OutcomeFailure] counts towards opening
// the breaker, and a failed probe reopens it; [OutcomeSuccess] ends a run of
// consecutive failures and counts towards closing a half-open breaker;
// [OutcomeIgnored] frees the call's probe slot and changes nothing else: not
// the failure window, not the consecutive failures, not the state. Any other
// value counts as a failure. A success slower than
// [WithBreakerSlowCallThreshold] is a failure; an ignored call stays
// ignored. By default context.Canceled is ignored and every other error, a
// *[PanicError] included, is a failure. f is called on the caller's
// goroutine, concurrently when calls are; a panic in f counts as a failure,
// then goes on up through the call. It panics if f is nil.
func WithBreakerClassifier(f func(err error) Outcome) BreakerOption {
	checkClassifier("WithBreakerClassifier", f)
	return breakerOptionFunc(func(c *breakerConfig) { c.classifier = f })
}

// breakerOutcome is the breaker's default classifier.
func breakerOutcome(err error) Outcome {
	if errors.Is(err, context.Canceled) {
		return OutcomeIgnored
	}
	return OutcomeFailure
}

package resilience

import (
	"context"
	"errors"
	"fmt"
)

// NewRetryQuota returns the AWS SDKs' retry quota: capacity tokens, full at
// the start, from which a retry takes [WithQuotaCost] ([WithQuotaTimeoutCost]
// after a timeout), to which a first-attempt success gives back
// [WithQuotaIncrement], and a successful retry, or one never made because
// its caller left during the wait, what it took. It panics if capacity is not in
// [1, 1000000000], if a cost is more than capacity, or if an option is
// invalid.
func NewRetryQuota(capacity int, opts ...RetryQuotaOption) *RetryBudget {
	const fn = "NewRetryQuota"
	if capacity < 1 || capacity > maxBudgetSize {
		panic(fmt.Sprintf("resilience: %s: capacity must be in [1, %d], got %d", fn, maxBudgetSize, capacity))
	}
	cfg := quotaConfig{quotaParams: defaultQuota}
	for _, o := range opts {
		checkOption(fn, o)
		o.applyQuota(&cfg)
	}
	cfg.route = newRoute(KindRetryBudget, &cfg.common)
	if q := cfg.quotaParams; q.cost > float64(capacity) {
		panic(fmt.Sprintf("resilience: %s: a retry's cost, %v (WithQuotaCost), is more than the capacity, %d: no retry would ever be made", fn, q.cost, capacity))
	} else if q.timeoutCost > float64(capacity) {
		panic(fmt.Sprintf("resilience: %s: a retry's cost after a timeout, %v (WithQuotaTimeoutCost), is more than the capacity, %d: no retry after a timeout would ever be made", fn, q.timeoutCost, capacity))
	}
	return newQuota(capacity, cfg.quotaParams, cfg.common)
}

func newQuota(capacity int, q quotaParams, c common) *RetryBudget {
	b := &RetryBudget{
		perSuccess:  budgetUnits(q.increment),
		perRetry:    budgetUnits(q.cost),
		timeoutCost: budgetUnits(q.timeoutCost),
		refunds:     true,
		capacity:    int64(capacity) * budgetUnit,
		kind:        componentQuota,
		common:      c,
	}
	b.balance.Store(b.capacity)
	return b
}

// quotaParams are a quota's costs and increment, in tokens.
type quotaParams struct {
	cost, timeoutCost, increment float64
}

// RetryQuotaOption configures [NewRetryQuota]: [WithQuotaCost],
// [WithQuotaTimeoutCost], [WithQuotaIncrement], or an [Option].
type RetryQuotaOption interface {
	applyQuota(*quotaConfig)
}

type quotaConfig struct {
	quotaParams
	common
}

type quotaOptionFunc func(*quotaConfig)

func (f quotaOptionFunc) applyQuota(c *quotaConfig) { f(c) }

func (o Option) applyQuota(c *quotaConfig) { o.set(&c.common) }

// defaultQuota are the AWS SDKs' costs and increment, which a Retry's own
// quota keeps too. A quota follows the share of calls that fail: at a
// failure rate p, with 3 attempts, a call gives back 1−p tokens on average
// and takes 5·p²·(1+p), so the quota stays full while up to about a third
// of the calls fail, each on its own, and empties when more do. A throttle
// of 10 tokens and 0.2 a success (gRPC's) balances at p = 0.2/1.2, about a
// sixth, and cannot tell a service that fails now and then from one that
// is down.
var defaultQuota = quotaParams{cost: 5, timeoutCost: 10, increment: 1}

// defaultQuotaCapacity is the capacity of the quota a Retry keeps when it is
// given no budget, chosen in the storm simulator (sim/): a larger quota
// lets a fleet send more to a server that is down, a smaller one fails more
// requests when calls fail at random. TestDefaultRetryTargets in
// sim/targets_test.go pins what it does: at most 1.1× the offered load
// through an outage, no request failing when 1% of calls fail at random,
// and at most 0.5% when 10% do.
const defaultQuotaCapacity = 40

// Largest and smallest costs and increments, in tokens.
const (
	maxQuotaTokens = maxBudgetSize
	minQuotaTokens = minBudgetRatio
)

// WithQuotaCost sets what a retry takes from a [NewRetryQuota] after an
// attempt that did not time out: 5 tokens by default. It panics unless
// 0.000001 <= n <= 1000000000.
func WithQuotaCost(n float64) RetryQuotaOption {
	checkQuotaTokens("WithQuotaCost", "cost", n)
	return quotaOptionFunc(func(c *quotaConfig) { c.cost = n })
}

// WithQuotaTimeoutCost sets what a retry takes from a [NewRetryQuota] after
// an attempt whose error matches context.DeadlineExceeded: 10 tokens by
// default. It panics unless 0.000001 <= n <= 1000000000.
func WithQuotaTimeoutCost(n float64) RetryQuotaOption {
	checkQuotaTokens("WithQuotaTimeoutCost", "cost", n)
	return quotaOptionFunc(func(c *quotaConfig) { c.timeoutCost = n })
}

// WithQuotaIncrement sets what a call that succeeds at its first attempt
// gives back to a [NewRetryQuota]: 1 token by default. It panics unless
// 0.000001 <= n <= 1000000000.
func WithQuotaIncrement(n float64) RetryQuotaOption {
	checkQuotaTokens("WithQuotaIncrement", "increment", n)
	return quotaOptionFunc(func(c *quotaConfig) { c.increment = n })
}

func checkQuotaTokens(fn, what string, n float64) {
	if !(n >= minQuotaTokens && n <= maxQuotaTokens) {
		panic(fmt.Sprintf("resilience: %s: %s must be in [%v, %d] tokens, got %v", fn, what, minQuotaTokens, maxQuotaTokens, n))
	}
}

// isTimeout reports whether err is an attempt's timeout, which costs a
// quota more.
func isTimeout(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

package resilience

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// RetryBudget bounds the retries of many calls together, so that an outage
// is not multiplied by every caller's retries: the retry storm. In the
// manner of Finagle's RetryBudget and gRPC's retry throttling, each call
// deposits ratio of a retry, each retry withdraws a whole one, and a floor
// of minPerSecond retries a second is always allowed so that rare calls
// can still retry. With ratio 0.1, retries add at most 10% to the calls
// made, plus the floor.
//
// Deposits accumulate up to a capacity (by default 100 retries,
// [WithBudgetCapacity]), so that a long quiet period cannot fund a burst.
// One budget is shared by any number of [Retry] policies of any result
// type ([WithBudget]); it is safe for concurrent use, and a deposit is one
// atomic operation.
type RetryBudget struct {
	perCall  int64 // milli-retries deposited by each call
	capacity int64 // milli-retries at most
	balance  atomic.Int64

	minPerSecond float64
	common
	mu       sync.Mutex
	floor    float64 // retries the floor still allows
	refilled time.Time
}

// NewRetryBudget returns a budget that lets retries add ratio of the calls
// (0.1: 10%), with at least minPerSecond retries a second. It panics if
// ratio is not in [0, 1000] or minPerSecond is negative.
func NewRetryBudget(ratio float64, minPerSecond int, opts ...RetryBudgetOption) *RetryBudget {
	if !(ratio >= 0 && ratio <= 1000) {
		panic(fmt.Sprintf("resilience: NewRetryBudget: ratio must be in [0, 1000], got %v", ratio))
	}
	if minPerSecond < 0 {
		panic(fmt.Sprintf("resilience: NewRetryBudget: minPerSecond must not be negative, got %d", minPerSecond))
	}
	b := &RetryBudget{perCall: int64(math.Round(ratio * 1000)), capacity: 100 * 1000, minPerSecond: float64(minPerSecond)}
	for _, o := range opts {
		if o == nil {
			panic("resilience: NewRetryBudget: option is nil")
		}
		o.applyBudget(b)
	}
	b.floor = b.minPerSecond
	b.refilled = b.now()
	return b
}

// RetryBudgetOption configures [NewRetryBudget]. [WithClock] is one too.
type RetryBudgetOption interface {
	applyBudget(*RetryBudget)
}

type budgetOptionFunc func(*RetryBudget)

func (f budgetOptionFunc) applyBudget(b *RetryBudget) { f(b) }

func (o Option) applyBudget(b *RetryBudget) { o.set(&b.common) }

// WithBudgetCapacity sets how many retries deposits can save up; the
// default is 100. It panics if n is negative.
func WithBudgetCapacity(n int) RetryBudgetOption {
	if n < 0 || n > math.MaxInt64/1000 {
		panic(fmt.Sprintf("resilience: WithBudgetCapacity: capacity must be in [0, %d], got %d", math.MaxInt64/1000, n))
	}
	return budgetOptionFunc(func(b *RetryBudget) { b.capacity = int64(n) * 1000 })
}

// deposit records a call.
func (b *RetryBudget) deposit() {
	if b.perCall == 0 {
		return
	}
	for {
		old := b.balance.Load()
		if old >= b.capacity {
			return
		}
		if b.balance.CompareAndSwap(old, min(old+b.perCall, b.capacity)) {
			return
		}
	}
}

// withdraw takes one retry from the deposits, else from the floor, and
// reports whether there was one to take.
func (b *RetryBudget) withdraw() bool {
	for {
		old := b.balance.Load()
		if old < 1000 {
			break
		}
		if b.balance.CompareAndSwap(old, old-1000) {
			return true
		}
	}
	if b.minPerSecond == 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if elapsed := now.Sub(b.refilled); elapsed > 0 {
		b.floor = min(b.minPerSecond, b.floor+elapsed.Seconds()*b.minPerSecond)
		b.refilled = now
	}
	if b.floor < 1 {
		return false
	}
	b.floor--
	return true
}

// Available returns how many retries the budget would allow now, deposits
// and floor together, rounded down.
func (b *RetryBudget) Available() int {
	b.mu.Lock()
	floor := b.floor
	if elapsed := b.now().Sub(b.refilled); elapsed > 0 {
		floor = min(b.minPerSecond, floor+elapsed.Seconds()*b.minPerSecond)
	}
	b.mu.Unlock()
	return int(b.balance.Load()/1000) + int(floor)
}

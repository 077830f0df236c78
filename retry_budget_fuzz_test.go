package resilience

import (
	"context"
	"errors"
	"testing"
)

var errFailed = errors.New("failed")

// FuzzRetryBudget drives both forms of RetryBudget with a script of
// outcomes and checks every decision, and Available after every step,
// against a model in exact thousandths of a retry.
//
// A script byte's low bit is the outcome of an attempt: 0 a success, 1 a
// failure that asks for a retry. For a budget every byte is also a call,
// which deposits first.
func FuzzRetryBudget(f *testing.F) {
	f.Add(true, uint8(10), uint16(200), []byte{1, 1, 1, 1, 1, 1, 0, 0, 1})
	f.Add(true, uint8(3), uint16(1), []byte{1, 0, 1, 1})
	f.Add(false, uint8(100), uint16(100), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Add(false, uint8(1), uint16(5000), []byte{0, 0, 0, 1, 1, 1})
	f.Add(false, uint8(0), uint16(300), []byte{0, 1})
	f.Fuzz(func(t *testing.T, throttle bool, size uint8, milli uint16, script []byte) {
		ratio := float64(max(milli, 1)) / 1000 // 0.001 to 65.535
		n := int64(max(milli, 1))
		var b *RetryBudget
		var bal, capacity int64 // the model, in thousandths
		if throttle {
			tokens := int(max(size, 3))
			b = NewRetryThrottle(tokens, ratio)
			capacity = int64(tokens) * 1000
			bal = capacity
		} else {
			b = NewRetryBudget(ratio, 0, WithBudgetCapacity(int(size)))
			capacity = int64(size) * 1000
		}
		available := func() int64 {
			if throttle { // failures that leave more than half
				a := int64(0)
				for t := bal - 1000; 2*t > capacity; t -= 1000 {
					a++
				}
				return a
			}
			return bal / 1000
		}
		ctx := context.Background()
		for i, op := range script {
			var want, got bool
			if !throttle {
				b.called()
				bal = min(bal+n, capacity)
			}
			if op&1 == 0 {
				b.succeeded(0)
				if throttle {
					bal = min(bal+n, capacity)
				}
			} else {
				b.failed()
				if throttle {
					bal = max(bal-1000, 0)
					want = 2*bal > capacity
				} else if want = bal >= 1000; want {
					bal -= 1000
				}
				_, got = b.allow(ctx, 1, errFailed)
			}
			if got != want {
				t.Fatalf("step %d (%d): allow = %v, want %v (model balance %d/1000)", i, op, got, want, bal)
			}
			if a, w := b.Available(), available(); int64(a) != w {
				t.Fatalf("step %d (%d): Available = %d, want %d (model balance %d/1000)", i, op, a, w, bal)
			}
		}
	})
}

// FuzzRetryQuota drives a quota with a script and checks every decision,
// every refund and Available after every step against a model in exact
// thousandths of a token.
//
// A script byte's value modulo 4 is a step: 0 a call that succeeds at its
// first attempt; 1 an attempt that failed and asks for a retry; 2 the same
// after a timeout; 3 a retry that succeeded, which gives back what the
// last retry took.
func FuzzRetryQuota(f *testing.F) {
	f.Add(uint8(20), uint16(5000), uint16(10000), uint16(1000), []byte{1, 1, 3, 0, 2, 2, 3, 1, 1, 1, 1, 0, 0})
	f.Add(uint8(1), uint16(333), uint16(1000), uint16(1), []byte{1, 1, 1, 1, 3, 0, 0, 2})
	f.Add(uint8(255), uint16(65535), uint16(1), uint16(65535), []byte{2, 3, 1, 1, 1, 1, 0, 1, 3})
	f.Fuzz(func(t *testing.T, size uint8, costMilli, timeoutMilli, incMilli uint16, script []byte) {
		capacity := int64(max(size, 1)) * 1000
		cost, timeoutCost, inc := int64(max(costMilli, 1)), int64(max(timeoutMilli, 1)), int64(max(incMilli, 1))
		if cost > capacity || timeoutCost > capacity {
			t.Skip("NewRetryQuota refuses a cost past the capacity")
		}
		b := NewRetryQuota(int(capacity/1000), WithQuotaCost(float64(cost)/1000),
			WithQuotaTimeoutCost(float64(timeoutCost)/1000), WithQuotaIncrement(float64(inc)/1000))
		const unit = budgetUnit / 1000
		bal := capacity
		var paid, modelPaid int64
		ctx := context.Background()
		for i, op := range script {
			switch op % 4 {
			case 0:
				b.succeeded(0)
				bal = min(bal+inc, capacity)
			case 1, 2:
				err, k := error(errFailed), cost
				if op%4 == 2 {
					err, k = ErrTimeout, timeoutCost
				}
				var ok bool
				paid, ok = b.allow(ctx, 1, err)
				want := bal >= k
				modelPaid = 0
				if want {
					bal -= k
					modelPaid = k
				}
				if ok != want || paid != modelPaid*unit {
					t.Fatalf("step %d (%d): allow = %d, %v, want %d, %v (model balance %d/1000)", i, op, paid, ok, modelPaid*unit, want, bal)
				}
			case 3:
				b.succeeded(paid)
				if modelPaid > 0 {
					bal = min(bal+modelPaid, capacity)
				} else {
					bal = min(bal+inc, capacity)
				}
				paid, modelPaid = 0, 0
			}
			if a, w := b.Available(), bal/cost; int64(a) != w {
				t.Fatalf("step %d (%d): Available = %d, want %d (model balance %d/1000)", i, op, a, w, bal)
			}
		}
	})
}

package resilience

import (
	"context"
	"testing"
)

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
				b.succeeded()
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
				got = b.allow(ctx, 1)
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

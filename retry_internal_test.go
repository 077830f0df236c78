package resilience

import (
	"context"
	"errors"
	"testing"
)

func TestRetryAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	errOnce := errors.New("transient")
	n := 0
	failOnce := func(context.Context) (int, error) {
		n++
		if n%2 == 1 {
			return 0, errOnce
		}
		return n, nil
	}
	plain := Retry[int]()
	zeroWait := Retry[int](WithBackoff(Constant(0)))
	budgeted := Retry[int](WithBudget(NewRetryBudget(0.5, 0)), WithBackoff(Constant(0)))
	composed := Compose(Retry[int](), Guarded[int](openGate{}), Guarded[int](NewBulkhead(8)))
	tests := []struct {
		name string
		f    func()
	}{
		{"success", func() { _, _ = plain.Execute(ctx, succeed) }},
		{"fail then succeed, zero wait", func() { _, _ = zeroWait.Execute(ctx, failOnce) }},
		{"with a budget", func() { _, _ = budgeted.Execute(ctx, failOnce) }},
		{"composed with guards", func() { _, _ = composed.Execute(ctx, succeed) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("allocates %v times per call, want 0", allocs)
			}
		})
	}
}

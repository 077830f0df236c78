package resilience

import (
	"context"
	"errors"
	"testing"

	"github.com/benbjohnson/clock"
)

func TestBreakerAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	closed := NewBreaker()
	open := NewBreaker(WithClock(clock.NewMock()))
	open.Trip()
	p := Guarded[int](closed)
	q := Guarded[int](open)
	c := Compose(Retry[int](), Guarded[int](closed), Guarded[int](NewBulkhead(4)))
	errX := errors.New("x")
	tests := []struct {
		name string
		f    func()
	}{
		{"closed success", func() { _, _ = p.Execute(ctx, succeed) }},
		{"open refusal", func() { _, _ = q.Execute(ctx, succeed) }},
		{"composed success", func() { _, _ = c.Execute(ctx, succeed) }},
		{"Enter closed", func() {
			done, _ := closed.Enter(ctx)
			done(nil)
		}},
		{"closed failure below threshold", func() {
			done, _ := closed.Enter(ctx)
			done(errX)
			done, _ = closed.Enter(ctx)
			done(nil)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("allocates %v times per call, want 0", allocs)
			}
		})
	}
}

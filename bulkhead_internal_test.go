package resilience

import (
	"context"
	"testing"
)

func TestBulkheadAllocatesNothing(t *testing.T) {
	b := NewBulkhead(4)
	ctx := context.Background()
	p := Guarded[int](b)
	c := Compose(passThrough[int]{}, Guarded[int](b))
	tests := []struct {
		name string
		f    func()
	}{
		{"Guarded", func() { _, _ = p.Execute(ctx, succeed) }},
		{"Compose", func() { _, _ = c.Execute(ctx, succeed) }},
		{"Enter", func() {
			done, _ := b.Enter(ctx)
			done(nil)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tc.name, allocs)
			}
		})
	}
}

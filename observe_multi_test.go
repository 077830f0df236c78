package resilience_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// kindRecorder records the kinds it observes, and asks for outcomes if told.
type kindRecorder struct {
	kinds    []resilience.EventKind
	outcomes bool
}

func (r *kindRecorder) Observe(_ context.Context, e resilience.Event) {
	r.kinds = append(r.kinds, e.Kind)
}
func (r *kindRecorder) ObserveOutcomes() bool { return r.outcomes }

func TestMultiObserver(t *testing.T) {
	plain, asking := &kindRecorder{}, &kindRecorder{outcomes: true}
	tests := []struct {
		name         string
		observers    []resilience.Observer
		wantOutcomes bool
	}{
		{"none asks", []resilience.Observer{plain, &kindRecorder{}}, false},
		{"one asks", []resilience.Observer{plain, asking}, true},
		{"empty", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := resilience.MultiObserver(tc.observers...)
			oo, ok := m.(resilience.OutcomeObserver)
			require.True(t, ok, "MultiObserver is not an OutcomeObserver")
			assert.Equal(t, tc.wantOutcomes, oo.ObserveOutcomes())
		})
	}

	plain.kinds, asking.kinds = nil, nil
	m := resilience.MultiObserver(plain, asking)
	ctx := context.Background()
	m.Observe(ctx, resilience.Event{Kind: resilience.EventRetry})
	m.Observe(ctx, resilience.Event{Kind: resilience.EventCallEnded})
	assert.Equal(t, []resilience.EventKind{resilience.EventRetry}, plain.kinds, "call-ended went to an observer that did not ask")
	assert.Equal(t, []resilience.EventKind{resilience.EventRetry, resilience.EventCallEnded}, asking.kinds)

	require.PanicsWithValue(t, "resilience: MultiObserver: observer 1 is nil", func() { resilience.MultiObserver(plain, nil) })
	require.PanicsWithValue(t, "resilience: MultiObserver: observer 0 is a nil *resilience_test.kindRecorder", func() {
		resilience.MultiObserver((*kindRecorder)(nil))
	})

	counted := resilience.MultiObserver(resilience.ObserverFunc(func(context.Context, resilience.Event) {}), resilience.NewSlogObserver(nil))
	if allocs := testing.AllocsPerRun(1000, func() { counted.Observe(ctx, resilience.Event{Kind: resilience.EventAttemptFailed}) }); allocs != 0 {
		t.Errorf("Observe allocates %v times per event, want 0", allocs)
	}
}

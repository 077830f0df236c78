package resilience_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

func TestMultiObserver(t *testing.T) {
	plain, asking := &recorder{}, &recorder{outcomes: true}
	tests := []struct {
		name         string
		observers    []resilience.Observer
		wantOutcomes bool
	}{
		{"none asks", []resilience.Observer{plain, &recorder{}}, false},
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

	plain.take()
	asking.take()
	m := resilience.MultiObserver(plain, asking)
	ctx := context.Background()
	m.Observe(ctx, resilience.Event{Kind: resilience.EventRetry})
	m.Observe(ctx, resilience.Event{Kind: resilience.EventCallEnded})
	assert.Equal(t, []resilience.EventKind{resilience.EventRetry}, plain.sequence(), "call-ended went to an observer that did not ask")
	assert.Equal(t, []resilience.EventKind{resilience.EventRetry, resilience.EventCallEnded}, asking.sequence())

	require.PanicsWithValue(t, "resilience: MultiObserver: observer 1 is nil", func() { resilience.MultiObserver(plain, nil) })
	require.PanicsWithValue(t, "resilience: MultiObserver: observer 0 is a nil *resilience_test.recorder", func() {
		resilience.MultiObserver((*recorder)(nil))
	})

	counted := resilience.MultiObserver(&counter{}, resilience.NewSlogObserver(nil))
	if allocs := testing.AllocsPerRun(1000, func() { counted.Observe(ctx, resilience.Event{Kind: resilience.EventAttemptFailed}) }); allocs != 0 {
		t.Errorf("Observe allocates %v times per event, want 0", allocs)
	}
}

package resilience

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokenGuard is a guard whose inspection, after the one of Register,
// panics after it set a section.
type brokenGuard struct{ registered *atomic.Bool }

func (g brokenGuard) Inspect(s *Snapshot) error {
	s.Kind, s.State, s.Bulkhead = "broken", "ok", &BulkheadSnapshot{Limit: 1}
	if g.registered.Swap(true) {
		panic("boom")
	}
	return nil
}

// TestRegistrySnapshotsSurviveABrokenGuard: a guard whose inspection
// panics shows as unreadable, with what it panicked with, and the other
// guards of the registry are read as usual.
func TestRegistrySnapshotsSurviveABrokenGuard(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.Register("a", NewBulkhead(2)))
	require.NoError(t, reg.Register("b", brokenGuard{new(atomic.Bool)}))
	require.NoError(t, reg.Register("c", NewBreaker()))
	want := Snapshot{Name: "b", Kind: "broken", State: "unreadable", Health: HealthCritical,
		Err: "resilience: reading the guard panicked: boom"}
	var all []Snapshot
	require.NotPanics(t, func() { all = reg.Snapshots() })
	require.Len(t, all, 3)
	assert.Equal(t, want, all[1])
	assert.Equal(t, "ok", all[0].State)
	assert.Equal(t, "closed", all[2].State)
	got, ok := reg.Snapshot("b")
	require.True(t, ok)
	assert.Equal(t, want, got)
}

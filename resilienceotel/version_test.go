package resilienceotel_test

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

// TestMeterScope: the metrics carry the instrumentation scope's name and
// the module's version.
func TestMeterScope(t *testing.T) {
	h := newHarness(t)
	h.obs.Observe(context.Background(), resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users", Attempt: 1})
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	require.Len(t, rm.ScopeMetrics, 1)
	assert.Equal(t, resilienceotel.ScopeName, rm.ScopeMetrics[0].Scope.Name)
	assert.Equal(t, resilienceotel.Version, rm.ScopeMetrics[0].Scope.Version)
}

// TestVersionIsTheRelease: Version is the version the module is released
// at, which is the core's version it requires (RELEASING.md: every module
// is tagged at one version).
func TestVersionIsTheRelease(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/faf87a20/resilience (v\S+)`).FindSubmatch(data)
	require.NotNil(t, m, "go.mod requires no core version")
	core := string(m[1])
	assert.Equal(t, core, "v"+resilienceotel.Version, "Version, against the core version go.mod requires")
}

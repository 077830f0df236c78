package resilienceotel_test

import (
	"context"
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

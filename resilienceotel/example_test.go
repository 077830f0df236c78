package resilienceotel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

func ExampleNewObserver() {
	// A program sets up its exporter here; the example reads the metrics
	// back with a manual reader.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	obs, err := resilienceotel.NewObserver(resilienceotel.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	observed := resilience.WithObserver(obs)
	users := resilience.Retry[string](observed, resilience.WithName("users-api"))
	_ = users

	// What a retry reports when its first two attempts fail.
	down := errors.New("connection refused")
	ctx := context.Background()
	for attempt := 1; attempt <= 2; attempt++ {
		obs.Observe(ctx, resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users-api",
			Attempt: attempt, Err: down, Wait: 100 * time.Millisecond})
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			p := sum.DataPoints[0]
			name, _ := p.Attributes.Value("resilience.name")
			fmt.Printf("%s{resilience.name=%s} %d %s\n", m.Name, name.AsString(), p.Value, m.Unit)
		}
	}
	// Output:
	// resilience.retries{resilience.name=users-api} 2 {retry}
}

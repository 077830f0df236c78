package resilienceotel_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

// User is what the example's service returns.
type User struct{ Name string }

// fetchUser stands for a call to a service.
func fetchUser(context.Context) (User, error) { return User{Name: "Ada"}, nil }

// One Observer, given to every component with a name of its own, records
// what they do with the global meter provider and adds span events to the
// trace of each request.
func Example() {
	obs, err := resilienceotel.NewObserver(resilienceotel.WithSpanEvents()) // the global meter provider
	if err != nil {
		log.Fatal(err)
	}
	observed := resilience.WithObserver(obs)
	users := resilience.Compose(
		resilience.Retry[User](observed, resilience.WithName("users-api")),
		resilience.Guarded[User](resilience.NewBreaker(observed, resilience.WithName("users-api"))),
	)
	u, err := resilience.Do(context.Background(), users, fetchUser)
	fmt.Println(u.Name, err)
	// Output:
	// Ada <nil>
}

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

// A registered breaker has its state from registration on: a dashboard
// shows it closed before the first call, rather than no data until the
// first outage.
func ExampleObserver_RegisterRegistry() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	obs, err := resilienceotel.NewObserver(resilienceotel.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := resilience.NewRegistry()
	registration, err := obs.RegisterRegistry(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer registration.Unregister()
	breaker := resilience.NewBreaker(resilience.WithObserver(obs), resilience.WithName("users-api"))
	if err := reg.Register("users-api", breaker); err != nil {
		fmt.Println(err)
		return
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "resilience.breaker.state" {
			for _, p := range g.DataPoints {
				if p.Value == 1 {
					state, _ := p.Attributes.Value("resilience.breaker.state")
					fmt.Println(m.Name, state.AsString())
				}
			}
		}
	}
	// Output:
	// resilience.breaker.state closed
}

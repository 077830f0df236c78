// Package promtest checks resilienceotel's metrics against the
// OpenTelemetry Prometheus exporter itself, in a module of its own so that
// the Prometheus client reaches neither resilienceotel's go.mod nor its
// users'.
package promtest

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resilienceotel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestExporterNames: the exporter, in its default configuration, exposes
// every metric of resilienceotel under the name the README's Prometheus
// column gives it, and no other: the names the dashboard's test checks its
// queries against.
func TestExporterNames(t *testing.T) {
	promReg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(promReg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := resilienceotel.NewObserver(resilienceotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}

	// An event of every kind the Observer records.
	down := errors.New("down")
	ctx := context.Background()
	for _, e := range []resilience.Event{
		{Kind: resilience.EventAttemptFailed, Attempt: 1, Err: down},
		{Kind: resilience.EventRetry, Attempt: 1, Err: down, Wait: time.Millisecond},
		{Kind: resilience.EventGiveUp, Attempt: 3, Err: down, Reason: resilience.ErrRetriesExhausted},
		{Kind: resilience.EventTimeout, Wait: time.Second},
		{Kind: resilience.EventRefused, Err: resilience.ErrBulkheadFull},
		{Kind: resilience.EventWaitStarted},
		{Kind: resilience.EventWaitEnded, Wait: time.Millisecond},
		{Kind: resilience.EventStateChange, From: resilience.BreakerClosed, To: resilience.BreakerOpen},
		{Kind: resilience.EventBatchSent, Size: 3, Duration: time.Millisecond},
		{Kind: resilience.EventLatePanic},
		{Kind: resilience.EventDiscarded},
		{Kind: resilience.EventCallEnded, Attempt: 1, Duration: time.Millisecond},
		{Kind: resilience.EventFallback, Err: down},
		{Kind: resilience.EventHedge, Attempt: 2, Wait: time.Millisecond},
	} {
		e.Component, e.Name = "test", "api"
		obs.Observe(ctx, e)
	}
	// And a guard of every kind a registry holds.
	reg := resilience.NewRegistry()
	for name, g := range map[string]resilience.Inspector{
		"br":  resilience.NewBreaker(),
		"bh":  resilience.NewBulkhead(4),
		"rl":  resilience.NewRateLimiter(10, 5),
		"krl": resilience.NewKeyedRateLimiter[string](10, 5),
		"rq":  resilience.NewRetryQuota(100),
		"al":  resilience.NewAdaptiveLimiter(),
		"at":  resilience.NewAdaptiveThrottler(),
		"hdg": resilience.Hedge[int](resilience.WithHedgeDelay(time.Millisecond)).(resilience.Inspector),
		"kg": resilience.NewKeyed(func(context.Context) string { return "" },
			func(string) *resilience.Breaker { return resilience.NewBreaker() }),
	} {
		if err := reg.Register(name, g); err != nil {
			t.Fatal(err)
		}
	}
	registration, err := obs.RegisterRegistry(reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = registration.Unregister() })

	families, err := promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var exposed []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "resilience_") {
			exposed = append(exposed, f.GetName())
		}
		if strings.HasPrefix(f.GetName(), "resilience_") && !hasLabel(f.GetMetric()[0].GetLabel(), "resilience_name") {
			t.Errorf("%s has no label resilience_name", f.GetName())
		}
	}
	slices.Sort(exposed)
	if want := readmeNames(t); !slices.Equal(exposed, want) {
		t.Errorf("the exporter exposes\n%q\nthe README lists\n%q", exposed, want)
	}
}

func hasLabel[L interface{ GetName() string }](labels []L, name string) bool {
	return slices.ContainsFunc(labels, func(l L) bool { return l.GetName() == name })
}

// readmeNames returns the Prometheus column of resilienceotel's README,
// sorted.
func readmeNames(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `resilience\\.[a-z_.]+` \\| [a-z -]+ \\| `[^`]*` \\| `([a-z_]+)` \\|")
	var names []string
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatal("the README lists no metric")
	}
	slices.Sort(names)
	return names
}

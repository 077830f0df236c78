package resilienceotel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/faf87a20/resilience/resilienceotel"
)

// TestMain fails the run if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// harness is an Observer recording into a manual reader, and a tracer
// provider exporting synchronously to memory.
type harness struct {
	obs    *resilienceotel.Observer
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
}

func newHarness(t *testing.T, opts ...resilienceotel.Option) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = h.tp.Shutdown(context.Background())
	})
	obs, err := resilienceotel.NewObserver(append([]resilienceotel.Option{resilienceotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatalf("NewObserver() = %v", err)
	}
	h.obs = obs
	return h
}

// metrics collects and flattens every data point into
// "name{attr=value,...}" → value: the sum of a counter or up-down counter,
// the value of a gauge, and for a histogram two entries, "name.count{...}"
// and "name.sum{...}". Attribute keys lose their "resilience." prefix.
func (h *harness) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+".count"+labels(p.Attributes)] = float64(p.Count)
					out[m.Name+".sum"+labels(p.Attributes)] = p.Sum
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+".count"+labels(p.Attributes)] = float64(p.Count)
					out[m.Name+".sum"+labels(p.Attributes)] = float64(p.Sum)
				}
			default:
				t.Fatalf("metric %s has data of type %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func labels(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, strings.TrimPrefix(string(a.Key), "resilience.")+"="+a.Value.String())
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// events returns the span events of the ended spans, one string each:
// "span: event k=v k=v", attributes in key order.
func (h *harness) events() []string {
	var out []string
	for _, s := range h.spans.GetSpans() {
		for _, e := range s.Events {
			attrs := slices.Clone(e.Attributes)
			slices.SortFunc(attrs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
			line := s.Name + ": " + e.Name
			for _, a := range attrs {
				line += fmt.Sprintf(" %s=%s", a.Key, a.Value.String())
			}
			out = append(out, line)
		}
	}
	return out
}

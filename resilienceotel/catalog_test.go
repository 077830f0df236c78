package resilienceotel_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/faf87a20/resilience/resilienceotel"
)

// promType is the kind of an instrument as the Prometheus exporter names
// it: a monotonic counter gets _total, a gauge of unit "1" gets _ratio, a
// histogram is exposed as _bucket, _sum and _count series.
type promType int

const (
	promCounter promType = iota // Counter, ObservableCounter
	promUpDown                  // UpDownCounter, ObservableUpDownCounter
	promGauge                   // Gauge, ObservableGauge
	promHistogram
)

var promTypeNames = map[promType]string{promCounter: "counter", promUpDown: "up-down counter", promGauge: "gauge", promHistogram: "histogram"}

// instrument is one instrument NewObserver creates.
type instrument struct {
	name, unit string
	kind       promType
	async      bool
}

// catalog returns the instruments NewObserver creates, as it creates them:
// the module's own list of what it exports, read through a meter provider
// that records each instrument made with it.
func catalog(t *testing.T) []instrument {
	t.Helper()
	mp := &recordingProvider{}
	if _, err := resilienceotel.NewObserver(resilienceotel.WithMeterProvider(mp)); err != nil {
		t.Fatalf("NewObserver() = %v", err)
	}
	if len(mp.m.made) == 0 {
		t.Fatal("NewObserver made no instrument")
	}
	return mp.m.made
}

type recordingProvider struct {
	noop.MeterProvider
	m recordingMeter
}

func (p *recordingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return &p.m }

// recordingMeter is a no-op meter that records the instruments made.
type recordingMeter struct {
	noop.Meter
	mu   sync.Mutex
	made []instrument
}

func (m *recordingMeter) add(name, unit string, kind promType, async bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.made = append(m.made, instrument{name, unit, kind, async})
}

func (m *recordingMeter) Int64Counter(n string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.add(n, metric.NewInt64CounterConfig(o...).Unit(), promCounter, false)
	return m.Meter.Int64Counter(n, o...)
}

func (m *recordingMeter) Float64Counter(n string, o ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.add(n, metric.NewFloat64CounterConfig(o...).Unit(), promCounter, false)
	return m.Meter.Float64Counter(n, o...)
}

func (m *recordingMeter) Int64UpDownCounter(n string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.add(n, metric.NewInt64UpDownCounterConfig(o...).Unit(), promUpDown, false)
	return m.Meter.Int64UpDownCounter(n, o...)
}

func (m *recordingMeter) Float64UpDownCounter(n string, o ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.add(n, metric.NewFloat64UpDownCounterConfig(o...).Unit(), promUpDown, false)
	return m.Meter.Float64UpDownCounter(n, o...)
}

func (m *recordingMeter) Int64Histogram(n string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.add(n, metric.NewInt64HistogramConfig(o...).Unit(), promHistogram, false)
	return m.Meter.Int64Histogram(n, o...)
}

func (m *recordingMeter) Float64Histogram(n string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.add(n, metric.NewFloat64HistogramConfig(o...).Unit(), promHistogram, false)
	return m.Meter.Float64Histogram(n, o...)
}

func (m *recordingMeter) Int64Gauge(n string, o ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.add(n, metric.NewInt64GaugeConfig(o...).Unit(), promGauge, false)
	return m.Meter.Int64Gauge(n, o...)
}

func (m *recordingMeter) Float64Gauge(n string, o ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.add(n, metric.NewFloat64GaugeConfig(o...).Unit(), promGauge, false)
	return m.Meter.Float64Gauge(n, o...)
}

func (m *recordingMeter) Int64ObservableCounter(n string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.add(n, metric.NewInt64ObservableCounterConfig(o...).Unit(), promCounter, true)
	return m.Meter.Int64ObservableCounter(n, o...)
}

func (m *recordingMeter) Float64ObservableCounter(n string, o ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	m.add(n, metric.NewFloat64ObservableCounterConfig(o...).Unit(), promCounter, true)
	return m.Meter.Float64ObservableCounter(n, o...)
}

func (m *recordingMeter) Int64ObservableUpDownCounter(n string, o ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	m.add(n, metric.NewInt64ObservableUpDownCounterConfig(o...).Unit(), promUpDown, true)
	return m.Meter.Int64ObservableUpDownCounter(n, o...)
}

func (m *recordingMeter) Float64ObservableUpDownCounter(n string, o ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	m.add(n, metric.NewFloat64ObservableUpDownCounterConfig(o...).Unit(), promUpDown, true)
	return m.Meter.Float64ObservableUpDownCounter(n, o...)
}

func (m *recordingMeter) Int64ObservableGauge(n string, o ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.add(n, metric.NewInt64ObservableGaugeConfig(o...).Unit(), promGauge, true)
	return m.Meter.Int64ObservableGauge(n, o...)
}

func (m *recordingMeter) Float64ObservableGauge(n string, o ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.add(n, metric.NewFloat64ObservableGaugeConfig(o...).Unit(), promGauge, true)
	return m.Meter.Float64ObservableGauge(n, o...)
}

// promUnits are the words the Prometheus exporter writes for the units of
// this module: "1" is no word (a gauge of it gets _ratio instead), and an
// annotation in braces ({call}) is dropped.
var promUnits = map[string]string{"s": "seconds", "ms": "milliseconds", "By": "bytes", "1": ""}

// promName is the name under which the OpenTelemetry Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus, by default) exposes an
// instrument, by the rules of OpenTelemetry's "Prometheus and OpenMetrics
// Compatibility" specification that it follows: every character other than
// a letter, a digit or a colon becomes "_" (runs of them one); the unit's
// word is appended unless the name has it already; "_total" is appended to
// a monotonic counter and "_ratio" to a gauge of unit "1", either moved to
// the end if the name has it. A histogram is exposed as the series
// promName+"_bucket", "_sum" and "_count".
func promName(name, unit string, kind promType) string {
	tokens := strings.FieldsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':')
	})
	if unit != "" && !strings.ContainsAny(unit, "{}") {
		word, ok := promUnits[unit]
		if !ok {
			word = unit
		}
		if word != "" && !slices.Contains(tokens, word) {
			tokens = append(tokens, word)
		}
	}
	moveLast := func(word string) {
		tokens = append(slices.DeleteFunc(tokens, func(s string) bool { return s == word }), word)
	}
	if kind == promCounter {
		moveLast("total")
	}
	if unit == "1" && kind == promGauge {
		moveLast("ratio")
	}
	return strings.Join(tokens, "_")
}

// promLabel is an attribute key as the exporter writes it as a label.
func promLabel(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, key)
}

// promSeries returns every series name the catalog's instruments are
// exposed under.
func promSeries(cat []instrument) map[string]bool {
	out := map[string]bool{}
	for _, in := range cat {
		n := promName(in.name, in.unit, in.kind)
		if in.kind == promHistogram {
			out[n+"_bucket"], out[n+"_sum"], out[n+"_count"] = true, true, true
			continue
		}
		out[n] = true
	}
	return out
}

func TestPromName(t *testing.T) {
	tests := []struct {
		name, unit string
		kind       promType
		want       string
	}{
		{"resilience.call.duration", "s", promHistogram, "resilience_call_duration_seconds"},
		{"resilience.retries", "{retry}", promCounter, "resilience_retries_total"},
		{"resilience.bulkhead.in_flight", "{call}", promUpDown, "resilience_bulkhead_in_flight"},
		{"resilience.breaker.failure_ratio", "1", promGauge, "resilience_breaker_failure_ratio"},
		{"system.cpu.utilization", "1", promGauge, "system_cpu_utilization_ratio"},
		{"requests.total.count", "1", promCounter, "requests_count_total"},
		{"http.server.request.duration", "s", promGauge, "http_server_request_duration_seconds"},
		{"rpc.server.duration.seconds", "s", promGauge, "rpc_server_duration_seconds"},
	}
	for _, tc := range tests {
		if got := promName(tc.name, tc.unit, tc.kind); got != tc.want {
			t.Errorf("promName(%q, %q, %s) = %q, want %q", tc.name, tc.unit, promTypeNames[tc.kind], got, tc.want)
		}
	}
}

// TestReadmeListsEveryMetric: the README's tables list every instrument
// NewObserver creates, no other, each with its instrument, unit and
// Prometheus name.
func TestReadmeListsEveryMetric(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(resilience\\.[a-z_.]+)` \\| ([a-z -]+) \\| `([^`]*)` \\| `([a-z_]+)` \\|")
	listed := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		if _, dup := listed[m[1]]; dup {
			t.Errorf("README lists %s twice", m[1])
		}
		listed[m[1]] = m[2:]
	}
	for _, in := range catalog(t) {
		kind := promTypeNames[in.kind]
		if in.async {
			kind = "async " + kind
		}
		want := []string{kind, in.unit, promName(in.name, in.unit, in.kind)}
		got, ok := listed[in.name]
		if !ok {
			t.Errorf("README does not list %s (%v)", in.name, want)
			continue
		}
		delete(listed, in.name)
		if !slices.Equal(got, want) {
			t.Errorf("README lists %s as %q, want %q", in.name, got, want)
		}
	}
	for name := range listed {
		t.Errorf("README lists %s, which NewObserver does not create", name)
	}
}

package resilienceotel_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardLabels are the labels the metrics carry, as the exporter
// writes the attributes the README documents, and le, a histogram's
// bucket bound.
var dashboardLabels = []string{
	promLabel("resilience.component"), promLabel("resilience.name"), promLabel("resilience.outcome"),
	promLabel("resilience.reason"), promLabel("resilience.breaker.state"), promLabel("resilience.health"), "le",
}

// TestDashboardQueriesExportedMetrics: every metric and label the Grafana
// dashboard's queries use is one the module exports, under the name the
// Prometheus exporter gives it (promName), and every metric the module
// exports has a panel.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	data, err := os.ReadFile("grafana/resilience.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana/resilience.json: %v", err)
	}
	queries := dashboardQueries(dash, "")
	if len(queries) < 20 {
		t.Fatalf("the dashboard has %d queries: %q", len(queries), queries)
	}
	exported := promSeries(catalog(t))
	used := map[string]bool{}
	for _, q := range queries {
		metrics, labels := promQLNames(q)
		for _, m := range metrics {
			used[m] = true
			if !exported[m] {
				t.Errorf("query %q uses %s, which the module does not export", q, m)
			}
		}
		for _, l := range labels {
			if !slices.Contains(dashboardLabels, l) {
				t.Errorf("query %q uses the label %s, which no metric of the module carries", q, l)
			}
		}
	}
	for _, in := range catalog(t) {
		n := promName(in.name, in.unit, in.kind)
		if !used[n] && !used[n+"_count"] && !used[n+"_bucket"] && !used[n+"_sum"] {
			t.Errorf("no panel shows %s (%s)", in.name, n)
		}
	}
}

// dashboardQueries returns the PromQL of v, a dashboard decoded from JSON:
// every target's "expr", and every template variable's "query" and
// "definition" (a string, or an object holding "query").
func dashboardQueries(v any, key string) []string {
	switch v := v.(type) {
	case string:
		if key == "expr" || key == "query" || key == "definition" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, dashboardQueries(e, "")...)
		}
		return out
	case map[string]any:
		if v["type"] == "datasource" { // its query is the data source's type
			return nil
		}
		var out []string
		for k, e := range v {
			out = append(out, dashboardQueries(e, k)...)
		}
		return out
	}
	return nil
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promMatchers = regexp.MustCompile(`\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promLabelVal = regexp.MustCompile(`label_values\(\s*(?:([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
	promVariable = regexp.MustCompile(`\$\{?[a-zA-Z0-9_]+\}?`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// promKeywords are the words of PromQL that are neither a metric nor a
// function.
var promKeywords = []string{"and", "or", "unless", "bool", "offset"}

// promQLNames returns the metric names and label names the PromQL q uses.
// It reads what a dashboard writes: selectors with matchers, aggregations
// with by or without, functions, binary operators, and Grafana's
// label_values and $variables.
func promQLNames(q string) (metrics, labels []string) {
	q = promLabelVal.ReplaceAllStringFunc(q, func(s string) string {
		m := promLabelVal.FindStringSubmatch(s)
		if m[1] != "" {
			metrics = append(metrics, m[1])
		}
		labels = append(labels, m[2])
		return " "
	})
	q = promString.ReplaceAllString(q, `""`)
	q = promRange.ReplaceAllString(q, " ")
	q = promVariable.ReplaceAllString(q, " ")
	q = promMatchers.ReplaceAllStringFunc(q, func(s string) string {
		for _, m := range strings.Split(promMatchers.FindStringSubmatch(s)[1], ",") {
			if l := promMatcher.FindStringSubmatch(m); l != nil {
				labels = append(labels, l[1])
			}
		}
		return " "
	})
	q = promGrouping.ReplaceAllStringFunc(q, func(s string) string {
		for _, l := range strings.Split(promGrouping.FindStringSubmatch(s)[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		return " "
	})
	for _, at := range promIdent.FindAllStringIndex(q, -1) {
		word := q[at[0]:at[1]]
		if at[0] > 0 && strings.ContainsRune("0123456789.", rune(q[at[0]-1])) {
			continue // a number's unit or exponent: 5m, 1e3
		}
		if strings.HasPrefix(strings.TrimSpace(q[at[1]:]), "(") || slices.Contains(promKeywords, word) {
			continue // a function call, or a keyword
		}
		metrics = append(metrics, word)
	}
	return metrics, labels
}

func TestPromQLNames(t *testing.T) {
	tests := []struct {
		q               string
		metrics, labels []string
	}{
		{`sum by (a, b) (rate(m_total{c="x,y", d=~"$v"}[$__rate_interval]))`, []string{"m_total"}, []string{"c", "d", "a", "b"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) / on(x) g`, []string{"h_bucket", "g"}, []string{"le", "x"}},
		{`max(up) * 2 + min without (i) (other) and bool x offset 5m`, []string{"up", "other", "x"}, []string{"i"}},
		{`label_values(m, l)`, []string{"m"}, []string{"l"}},
		{`label_values(l)`, nil, []string{"l"}},
	}
	for _, tc := range tests {
		metrics, labels := promQLNames(tc.q)
		if !slices.Equal(metrics, tc.metrics) || !slices.Equal(labels, tc.labels) {
			t.Errorf("promQLNames(%q) = %q, %q, want %q, %q", tc.q, metrics, labels, tc.metrics, tc.labels)
		}
	}
}

package prioritytext

import (
	"testing"

	"github.com/faf87a20/resilience"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want resilience.Priority
		ok   bool
	}{
		{"critical", resilience.PriorityCritical, true},
		{"CRITICAL", resilience.PriorityCritical, true},
		{" High ", resilience.PriorityHigh, true},
		{"normal", resilience.PriorityNormal, true},
		{"low", resilience.PriorityLow, true},
		{"sheddable", resilience.PrioritySheddable, true},
		{"2", resilience.PriorityCritical, true},
		{"1", resilience.PriorityHigh, true},
		{"0", resilience.PriorityNormal, true},
		{"-1", resilience.PriorityLow, true},
		{"-2", resilience.PrioritySheddable, true},
		{"+2", resilience.PriorityCritical, true},
		{"", resilience.PriorityNormal, false},
		{"urgent", resilience.PriorityNormal, false},
		{"3", resilience.PriorityNormal, false},
		{"-3", resilience.PriorityNormal, false},
		{"99999999999999999999", resilience.PriorityNormal, false},
		{"Priority(3)", resilience.PriorityNormal, false},
	}
	for _, tc := range tests {
		if got, ok := Parse(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %v, %t, want %v, %t", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   resilience.Priority
		want string
	}{
		{resilience.PriorityCritical, "critical"},
		{resilience.PriorityHigh, "high"},
		{resilience.PriorityNormal, "normal"},
		{resilience.PriorityLow, "low"},
		{resilience.PrioritySheddable, "sheddable"},
		{resilience.Priority(7), "critical"},
		{resilience.Priority(-7), "sheddable"},
	}
	for _, tc := range tests {
		got := Format(tc.in)
		if got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if back, _ := Parse(got); back != min(max(tc.in, resilience.PrioritySheddable), resilience.PriorityCritical) {
			t.Errorf("Parse(Format(%v)) = %v", tc.in, back)
		}
	}
}

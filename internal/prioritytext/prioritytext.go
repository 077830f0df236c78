// Package prioritytext reads and writes a resilience.Priority as the text
// of an HTTP header or a gRPC metadata entry, so that the integrations
// that carry a priority across the wire agree on its spelling.
package prioritytext

import (
	"strconv"
	"strings"

	"github.com/faf87a20/resilience"
)

// Parse returns the priority s names: one of the names
// resilience.Priority.String gives ("sheddable", "low", "normal", "high",
// "critical"), in any case, or its number (-2 to 2), with spaces around
// allowed. For anything else, the empty string included, ok is false and
// p is resilience.PriorityNormal, the priority of a call that carries
// none: a value a client misspells or invents is neither promoted nor
// shed first.
func Parse(s string) (p resilience.Priority, ok bool) {
	s = strings.TrimSpace(s)
	for p := resilience.PrioritySheddable; p <= resilience.PriorityCritical; p++ {
		if strings.EqualFold(s, p.String()) {
			return p, true
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= int(resilience.PrioritySheddable) && n <= int(resilience.PriorityCritical) {
		return resilience.Priority(n), true
	}
	return resilience.PriorityNormal, false
}

// Format returns the name of p, which [Parse] reads back; a value beyond
// the named priorities is written as the nearest one, as the guards that
// shed by priority count it.
func Format(p resilience.Priority) string {
	return min(max(p, resilience.PrioritySheddable), resilience.PriorityCritical).String()
}

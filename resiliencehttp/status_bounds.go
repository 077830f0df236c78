package resiliencehttp

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/faf87a20/resilience"
)

// The bounds of what the status page and its JSON show, so that a registry
// of thousands of guards (one per tenant, say), or a name, key or error
// text of any length, leaves them a size a browser and a script read at
// once, refreshed every second. Lengths are in characters (runes); a text
// cut ends in "…" within its bound. Registry.Snapshots has everything.
const (
	maxGuardsShown = 200 // guards, the most critical first
	maxEventsShown = 32  // of each guard, the newest (a registry's default ring)
	maxNameShown   = 80  // a guard's name
	maxKeyShown    = 64  // a key of a keyed rate limiter's most refused
	maxTextShown   = 300 // an event's error and text, an unreadable guard's error
)

// healthCounts counts guards by health.
type healthCounts struct{ OK, Warning, Critical int }

func (c *healthCounts) add(h resilience.Health) {
	switch h {
	case resilience.HealthCritical:
		c.Critical++
	case resilience.HealthWarning:
		c.Warning++
	default:
		c.OK++
	}
}

// Total is the number of guards counted.
func (c healthCounts) Total() int { return c.OK + c.Warning + c.Critical }

// severity orders healths, the most critical first.
func severity(h resilience.Health) int {
	switch h {
	case resilience.HealthCritical:
		return 0
	case resilience.HealthWarning:
		return 1
	}
	return 2
}

// shown returns the snapshots to show of snaps, which are sorted by name:
// all of them if they are maxGuardsShown at most, else the most critical
// maxGuardsShown (by name within a health), still sorted by name; and the
// counts of those left out. snaps is reordered.
func shown(snaps []resilience.Snapshot) ([]resilience.Snapshot, healthCounts) {
	var omitted healthCounts
	if len(snaps) <= maxGuardsShown {
		return snaps, omitted
	}
	slices.SortStableFunc(snaps, func(a, b resilience.Snapshot) int {
		return cmp.Compare(severity(a.Health), severity(b.Health))
	})
	for _, s := range snaps[maxGuardsShown:] {
		omitted.add(s.Health)
	}
	snaps = snaps[:maxGuardsShown]
	slices.SortFunc(snaps, func(a, b resilience.Snapshot) int { return strings.Compare(a.Name, b.Name) })
	return snaps, omitted
}

// bound cuts the name, keys, errors and events of s, a snapshot of the
// page's own, to their bounds, and reports whether its name is whole.
func bound(s *resilience.Snapshot) (nameWhole bool) {
	name := s.Name
	s.Name = cut(s.Name, maxNameShown)
	s.Err = cut(s.Err, maxTextShown)
	if k := s.KeyedRateLimiter; k != nil {
		for i := range k.TopRefused {
			k.TopRefused[i].Key = cut(k.TopRefused[i].Key, maxKeyShown)
		}
	}
	if k := s.Keyed; k != nil {
		for i := range k.TopRefused {
			k.TopRefused[i].Key = cut(k.TopRefused[i].Key, maxKeyShown)
		}
	}
	s.Events = s.Events[:min(len(s.Events), maxEventsShown)]
	for i := range s.Events {
		e := &s.Events[i]
		e.Err, e.Text = cut(e.Err, maxTextShown), cut(e.Text, maxTextShown)
	}
	return s.Name == name
}

// cut returns s if it has n characters at most, else its first n-1 and
// an ellipsis.
func cut(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

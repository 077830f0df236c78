package resilience

import (
	"context"
	"strconv"
)

// Priority says how much a call matters to an [AdaptiveLimiter] that sheds
// load: the lowest are refused first. It travels in the call's context
// ([WithPriority]); the zero Priority is [PriorityNormal].
type Priority int8

// The priorities, from the first shed to the last, with the share of the
// limit each may use.
const (
	PrioritySheddable Priority = -2 // prefetches, best-effort work: 50%
	PriorityLow       Priority = -1 // batch jobs, crawlers: 70%
	PriorityNormal    Priority = 0  // a context without a priority: 80%
	PriorityHigh      Priority = 1  // interactive work a person waits for: 90%
	PriorityCritical  Priority = 2  // health checks, payments: the whole limit
)

// priorityLevels is the number of priorities; level(p) indexes them from 0,
// the sheddable, up.
const priorityLevels = 5

// priorityShare is the percentage of the limit each level may use, from
// the sheddable up. The gaps between the shares are the room a level
// keeps for the levels above it when the limit is reached: under overload
// the lower levels are refused while the higher still find slots.
var priorityShare = [priorityLevels]int64{50, 70, 80, 90, 100}

// level returns p's index into the per-level tables, clamping a value
// outside the named priorities to the nearest one.
func (p Priority) level() int {
	return int(min(max(p, PrioritySheddable), PriorityCritical) - PrioritySheddable)
}

var priorityNames = [priorityLevels]string{"sheddable", "low", "normal", "high", "critical"}

// String returns the priority's name in lower case ("critical",
// "sheddable"), or "Priority(n)" for a value outside the named ones.
func (p Priority) String() string {
	if p < PrioritySheddable || p > PriorityCritical {
		return "Priority(" + strconv.Itoa(int(p)) + ")"
	}
	return priorityNames[p.level()]
}

type priorityKey struct{}

// WithPriority returns a copy of ctx that carries priority p, for the
// guards that shed load by priority ([AdaptiveLimiter]). A value above
// [PriorityCritical] counts as critical, one below [PrioritySheddable] as
// sheddable.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority ctx carries, set by [WithPriority], or
// [PriorityNormal] if it carries none.
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}

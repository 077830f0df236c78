package resilience

import "time"

// HedgeSnapshot is a [Hedge]'s section of a [Snapshot]: the delay after
// which it starts a hedge now, and the hedges its budget allows.
type HedgeSnapshot struct {
	Delay           time.Duration `json:"delay"`
	Fixed           bool          `json:"fixed"` // WithHedgeDelay
	BudgetAvailable int           `json:"budgetAvailable"`
}

// Inspect fills s with the hedge's state, as [Inspector] says: always
// "ok", and never shedding, whatever its budget refused: a refused hedge
// is no refused call. A policy made by Hedge is the only hedge there is,
// so it is never a zero value.
func (h *hedge[T]) Inspect(s *Snapshot) error {
	s.Kind = KindHedge
	s.State, s.Shedding = "ok", false
	s.Hedge = &HedgeSnapshot{Delay: h.currentDelay(), Fixed: h.fixed, BudgetAvailable: h.budget.Available()}
	return nil
}

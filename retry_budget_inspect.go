package resilience

// RetryBudgetSnapshot is a [RetryBudget]'s section of a [Snapshot]. Form
// is "quota", "throttle" or "budget", after its constructor; Tokens and
// Capacity are in its units (tokens, or retries for a budget).
type RetryBudgetSnapshot struct {
	Form      string  `json:"form"`
	Tokens    float64 `json:"tokens"`
	Capacity  float64 `json:"capacity"`
	Available int     `json:"available"` // RetryBudget.Available
}

// Inspect fills s with the budget's state, as [Inspector] says: "ok",
// "exhausted" (a warning) when it allows no retry, or "shedding" if it
// refused retries lately. It returns an error matching [ErrZeroGuard] for
// a zero RetryBudget.
func (b *RetryBudget) Inspect(s *Snapshot) error {
	s.Kind = KindRetryBudget
	if b.kind == "" {
		return zeroGuard(KindRetryBudget, b)
	}
	rs := &RetryBudgetSnapshot{
		Form:      b.kind,
		Tokens:    float64(b.balance.Load()) / budgetUnit,
		Capacity:  float64(b.capacity) / budgetUnit,
		Available: b.Available(),
	}
	s.State, s.RetryBudget = "ok", rs
	if rs.Available == 0 {
		s.State, s.Health = "exhausted", HealthWarning
	}
	s.shed()
	return nil
}

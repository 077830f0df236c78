package resilience

// AdaptiveThrottlerSnapshot is an [AdaptiveThrottler]'s section of a
// [Snapshot]: the probability with which it refuses a call now.
type AdaptiveThrottlerSnapshot struct {
	Ratio float64 `json:"ratio"`
}

// Inspect fills s with the throttler's state, as [Inspector] says: "ok",
// "throttling" (a warning) while it refuses calls at random, or
// "shedding" if it refused calls lately. It returns an error matching
// [ErrZeroGuard] for a zero AdaptiveThrottler.
func (t *AdaptiveThrottler) Inspect(s *Snapshot) error {
	s.Kind = KindAdaptiveThrottler
	if t.done == nil {
		return zeroGuard(KindAdaptiveThrottler, t)
	}
	ts := &AdaptiveThrottlerSnapshot{Ratio: t.Ratio()}
	s.State, s.AdaptiveThrottler = "ok", ts
	if ts.Ratio > 0 {
		s.State, s.Health = "throttling", HealthWarning
	}
	s.shed()
	return nil
}

package resilience

// RateLimiterSnapshot is a [RateLimiter]'s section of a [Snapshot].
// Tokens is +Inf at [RateUnlimited], which JSON cannot hold: it is
// reported as the burst then.
type RateLimiterSnapshot struct {
	Tokens float64 `json:"tokens"`
	Rate   float64 `json:"rate"` // tokens a second
	Burst  int     `json:"burst"`
}

// Inspect fills s with the limiter's state, as [Inspector] says: "ok",
// "limiting" (a warning) when less than a token is left, or "shedding" if
// it refused calls lately. It returns an error matching [ErrZeroGuard] for
// a zero RateLimiter.
func (l *RateLimiter) Inspect(s *Snapshot) error {
	s.Kind = KindRateLimiter
	if !l.limits.made() {
		return zeroGuard(KindRateLimiter, l)
	}
	rs := &RateLimiterSnapshot{Tokens: l.Tokens(), Rate: l.Rate(), Burst: l.Burst()}
	if l.Interval == 0 { // unlimited: +Inf tokens
		rs.Tokens = float64(rs.Burst)
	}
	s.State, s.RateLimiter = "ok", rs
	if l.Interval != 0 && rs.Tokens < 1 {
		s.State, s.Health = "limiting", HealthWarning
	}
	s.shed()
	return nil
}

// made reports whether newLimits made l: every rate and burst it takes
// has an interval or a tau (no limit has tau MaxInt64), the zero value
// neither.
func (l *limits) made() bool { return l.Interval != 0 || l.Tau != 0 }

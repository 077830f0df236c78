package resilience

// AdaptiveLimiterSnapshot is an [AdaptiveLimiter]'s section of a
// [Snapshot]: its limit now, the calls admitted that run, and the calls
// waiting for a slot.
type AdaptiveLimiterSnapshot struct {
	Limit    int `json:"limit"`
	InFlight int `json:"inFlight"`
	Waiting  int `json:"waiting"`
}

// Inspect fills s with the limiter's state, as [Inspector] says: "ok",
// "full" or "queueing" (both warnings), or "shedding" if it refused calls
// lately, as it refuses calls of low priority with slots still free. It
// returns an error matching [ErrZeroGuard] for a zero AdaptiveLimiter,
// whose limit is 0 where every limiter made has at least 1.
func (l *AdaptiveLimiter) Inspect(s *Snapshot) error {
	s.Kind = KindAdaptiveLimiter
	if l.Limit() <= 0 {
		return zeroGuard(KindAdaptiveLimiter, l)
	}
	as := &AdaptiveLimiterSnapshot{Limit: l.Limit(), InFlight: l.InFlight(), Waiting: l.Waiting()}
	s.AdaptiveLimiter = as
	slotsState(s, as.InFlight, as.Limit, as.Waiting)
	return nil
}

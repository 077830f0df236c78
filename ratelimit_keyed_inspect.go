package resilience

// KeyedRateLimiterSnapshot is a [KeyedRateLimiter]'s section of a
// [Snapshot]: how many keys it holds, and the keys it refused most among
// them, at most 10, the most refused first.
type KeyedRateLimiterSnapshot struct {
	Keys       int          `json:"keys"`
	MaxKeys    int          `json:"maxKeys"`
	Rate       float64      `json:"rate"`
	Burst      int          `json:"burst"`
	TopRefused []KeyRefusal `json:"topRefused,omitempty"`
}

// KeyRefusal is a key of a [KeyedRateLimiter] or a [Keyed] guard, as fmt
// prints it, and how many calls its bucket or guard refused since the key
// came into the table. Keys the table let go of are left out.
type KeyRefusal struct {
	Key      string `json:"key"`
	Refusals int64  `json:"refusals"`
}

// Inspect fills s with the limiter's state, as [Inspector] says: "ok",
// "limiting" (a warning) when some keys were refused, "full" (critical)
// when it holds as many keys as it may, or "shedding" if it refused calls
// lately. It returns an error matching [ErrZeroGuard] for a zero
// KeyedRateLimiter.
func (l *KeyedRateLimiter[K]) Inspect(s *Snapshot) error {
	s.Kind = KindKeyedRateLimiter
	if l.maxKeys <= 0 || !l.limits.made() {
		return zeroGuard(KindKeyedRateLimiter, l)
	}
	ks := &KeyedRateLimiterSnapshot{
		Keys: l.Len(), MaxKeys: int(l.maxKeys), Rate: l.Rate(), Burst: l.Burst(),
		TopRefused: l.topRefused(keyedTopShown),
	}
	s.KeyedRateLimiter = ks
	s.keyedState(ks.Keys, ks.MaxKeys, len(ks.TopRefused) > 0)
	return nil
}

// keyedState sets the state of a keyed guard holding keys of maxKeys keys,
// some of which were refused: "full" (critical), "limiting" (a warning),
// "shedding" if it refused calls lately, or "ok".
func (s *Snapshot) keyedState(keys, maxKeys int, refused bool) {
	s.State = "ok"
	switch {
	case keys >= maxKeys:
		s.State, s.Health = "full", HealthCritical
	case refused:
		s.State, s.Health = "limiting", HealthWarning
	}
	s.shed()
}

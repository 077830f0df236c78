package resilience

// BulkheadSnapshot is a [Bulkhead]'s section of a [Snapshot]: the calls
// that hold a slot, the slots, and the calls waiting for one.
type BulkheadSnapshot struct {
	InFlight int `json:"inFlight"`
	Limit    int `json:"limit"`
	Waiting  int `json:"waiting"`
}

// Inspect fills s with the bulkhead's state, as [Inspector] says: "ok",
// "full" or "queueing" (both warnings), or "shedding" if it refused calls
// lately with slots free. It returns an error matching [ErrZeroGuard] for
// a zero Bulkhead.
func (b *Bulkhead) Inspect(s *Snapshot) error {
	s.Kind = KindBulkhead
	if b.limit <= 0 {
		return zeroGuard(KindBulkhead, b)
	}
	bs := &BulkheadSnapshot{InFlight: b.InFlight(), Limit: b.Limit(), Waiting: b.Waiting()}
	s.Bulkhead = bs
	slotsState(s, bs.InFlight, bs.Limit, bs.Waiting)
	return nil
}

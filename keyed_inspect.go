package resilience

import (
	"cmp"
	"fmt"
	"slices"
)

// KeyedSnapshot is a [Keyed] guard's section of a [Snapshot]: how many
// keys it holds, how many of their guards hold state it keeps them for
// (see [Keyed]), and the keys whose guards refused most, at most 10, the
// most refused first. It carries no series per key for a gauge: the keys
// are for the page.
type KeyedSnapshot struct {
	Keys       int          `json:"keys"`
	MaxKeys    int          `json:"maxKeys"`
	Busy       int          `json:"busy"`
	TopRefused []KeyRefusal `json:"topRefused,omitempty"`
}

// Inspect fills s with the Keyed guard's state, as [Inspector] says: "ok",
// "limiting" (a warning) when some key's guard refused calls, "full"
// (critical) when it holds as many keys as it may, or "shedding" if it
// refused calls lately. It reads every key's guard, under each part's
// lock in turn. It returns an error matching [ErrZeroGuard] for a zero
// Keyed.
func (k *Keyed[K, G]) Inspect(s *Snapshot) error {
	s.Kind = KindKeyed
	if k.key == nil {
		return zeroGuard(KindKeyed, k)
	}
	ks := &KeyedSnapshot{Keys: k.Len(), MaxKeys: int(k.maxKeys)}
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.RLock()
		for key, e := range sh.guards {
			if e.inflight.Load() != 0 || !rests(e.g) {
				ks.Busy++
			}
			if n := e.refused.Load(); n > 0 {
				ks.TopRefused = append(ks.TopRefused, KeyRefusal{Key: fmt.Sprint(key), Refusals: n})
			}
		}
		sh.mu.RUnlock()
	}
	slices.SortFunc(ks.TopRefused, func(a, b KeyRefusal) int { return cmp.Compare(b.Refusals, a.Refusals) })
	ks.TopRefused = ks.TopRefused[:min(len(ks.TopRefused), keyedTopShown)]
	s.Keyed = ks
	s.keyedState(ks.Keys, ks.MaxKeys, len(ks.TopRefused) > 0)
	return nil
}

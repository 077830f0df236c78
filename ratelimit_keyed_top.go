package resilience

import (
	"cmp"
	"fmt"
	"slices"
)

// keyedTopSize is how many of its most refused keys each part of a
// keyed limiter's table tracks, and keyedTopShown how many of them a
// snapshot shows.
const (
	keyedTopSize  = 4
	keyedTopShown = 10
)

// keyedTop holds the keys of a part of the table whose buckets refused the
// most calls. It is kept on refusals alone: a call admitted never sees it.
type keyedTop[K comparable] [keyedTopSize]keyedTopEntry[K]

type keyedTopEntry[K comparable] struct {
	key K
	b   *keyedBucket // nil: an empty place
}

// refused counts a refusal of key's bucket b, and keeps key among the most
// refused of s if it now is. s.mu is held.
func (s *keyedShard[K]) refused(key K, b *keyedBucket) {
	b.refused++
	if s.top == nil {
		s.top = new(keyedTop[K])
	}
	least := -1
	for i := range s.top {
		switch e := &s.top[i]; {
		case e.b == b:
			return
		case e.b == nil:
			e.key, e.b = key, b
			return
		case least < 0 || e.b.refused < s.top[least].b.refused:
			least = i
		}
	}
	if b.refused > s.top[least].b.refused {
		s.top[least].key, s.top[least].b = key, b
	}
}

// forget drops from the top the keys the sweep at t dropped from the
// table: those whose buckets were full at t. s.mu is held.
func (s *keyedShard[K]) forget(t int64) {
	if s.top == nil {
		return
	}
	for i := range s.top {
		if e := &s.top[i]; e.b != nil && e.b.tat <= t {
			*e = keyedTopEntry[K]{}
		}
	}
}

// topRefused returns the at most n keys whose buckets refused the most
// calls, the most refused first, taken from the tops of the parts of the
// table one part at a time. Keys whose buckets are full again are left
// out: they are as good as dropped.
func (l *KeyedRateLimiter[K]) topRefused(n int) []KeyRefusal {
	t := l.nowNs(&l.common)
	var top []keyedTopEntry[K]
	var refused []int64
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		if s.top != nil {
			for _, e := range s.top {
				if e.b != nil && e.b.tat > t {
					top, refused = append(top, e), append(refused, e.b.refused)
				}
			}
		}
		s.mu.Unlock()
	}
	out := make([]KeyRefusal, len(top))
	for i, e := range top {
		out[i] = KeyRefusal{Key: fmt.Sprint(e.key), Refusals: refused[i]}
	}
	slices.SortFunc(out, func(a, b KeyRefusal) int {
		return cmp.Or(cmp.Compare(b.Refusals, a.Refusals), cmp.Compare(a.Key, b.Key))
	})
	return out[:min(n, len(out))]
}

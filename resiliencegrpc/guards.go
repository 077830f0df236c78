package resiliencegrpc

import (
	"context"

	"github.com/faf87a20/resilience"
)

// guardsFor returns the guards of a call: each WithClientGuard's guard of
// its method or target, made on first use.
func (c *client) guardsFor(method, target string) []resilience.Guard {
	if len(c.guards) == 0 {
		return nil
	}
	gs := make([]resilience.Guard, len(c.guards))
	for i, k := range c.guards {
		key := method
		if c.cfg.guards[i].scope == PerTarget {
			key = target
		}
		gs[i] = keyedGuard{k, key}
	}
	return gs
}

// keyedGuards returns a resilience.Keyed for each WithClientGuard, which
// keeps a method's or target's guard as long as it holds state (an open
// breaker, a call in flight) and lets idle ones go; a new key while all
// it holds are busy goes without that guard rather than be refused.
func keyedGuards(guards []clientGuard) []*resilience.Keyed[string, resilience.Guard] {
	var ks []*resilience.Keyed[string, resilience.Guard]
	for _, g := range guards {
		newGuard := func(key string) resilience.Guard {
			gd := g.make(key)
			if gd == nil {
				panic("resiliencegrpc: WithClientGuard: newGuard returned nil for " + key)
			}
			return gd
		}
		ks = append(ks, resilience.NewKeyed(noKey, newGuard, resilience.WithKeyedOverflow(unguarded{})))
	}
	return ks
}

// noKey is the key function of the client's Keyed guards, which are asked
// with EnterKey alone.
func noKey(context.Context) string { return "" }

// keyedGuard is the guard of one key of a Keyed.
type keyedGuard struct {
	k   *resilience.Keyed[string, resilience.Guard]
	key string
}

func (g keyedGuard) Enter(ctx context.Context) (func(error), error) { return g.k.EnterKey(ctx, g.key) }

// unguarded admits every call: the overflow of the client's Keyed guards.
type unguarded struct{}

func (unguarded) Enter(context.Context) (func(error), error) { return func(error) {}, nil }

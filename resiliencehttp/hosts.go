package resiliencehttp

import (
	"context"

	"github.com/faf87a20/resilience"
)

// hostGuards keeps the guards of each host, made on a host's first call:
// one resilience.Keyed per WithHostGuard, keyed by host, holding at most
// max hosts. A host's guards go when they rest (see resilience.Keyed),
// never while a call is in flight on them or its breaker is open; a new
// host while every one held is busy goes unguarded by them, rather than
// refused or cause an open breaker to be forgotten.
type hostGuards struct {
	keyed []*resilience.Keyed[string, resilience.Guard]
}

func newHostGuards(makers []func(string) resilience.Guard, max int) *hostGuards {
	h := &hostGuards{}
	for _, mk := range makers {
		newGuard := func(host string) resilience.Guard {
			g := mk(host)
			if g == nil {
				panic("resiliencehttp: WithHostGuard: constructor returned nil for host " + host)
			}
			return g
		}
		h.keyed = append(h.keyed, resilience.NewKeyed(noHostKey, newGuard,
			resilience.WithKeyedMaxKeys(max), resilience.WithKeyedOverflow(unguarded{})))
	}
	return h
}

// noHostKey is the key function of hostGuards' Keyed, which are asked with
// EnterKey alone.
func noHostKey(context.Context) string { return "" }

// get returns host's guards.
func (h *hostGuards) get(host string) []resilience.Guard {
	guards := make([]resilience.Guard, len(h.keyed))
	for i, k := range h.keyed {
		guards[i] = hostGuard{k, host}
	}
	return guards
}

// hostGuard is one host's guard of one WithHostGuard.
type hostGuard struct {
	k    *resilience.Keyed[string, resilience.Guard]
	host string
}

func (g hostGuard) Enter(ctx context.Context) (func(error), error) { return g.k.EnterKey(ctx, g.host) }

// unguarded admits every call: the overflow of hostGuards.
type unguarded struct{}

func (unguarded) Enter(context.Context) (func(error), error) { return func(error) {}, nil }

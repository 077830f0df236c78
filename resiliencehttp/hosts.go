package resiliencehttp

import (
	"container/list"
	"sync"

	"github.com/faf87a20/resilience"
)

// hostGuards keeps the guards of each host, made on a host's first call,
// for at most max hosts: the least recently called host loses its guards
// first. A host whose guards were evicted gets new ones; calls still
// holding the old ones finish with them.
type hostGuards struct {
	makers []func(host string) resilience.Guard
	max    int

	mu    sync.Mutex
	hosts map[string]*list.Element // of *hostEntry
	order list.List                // front: most recently called
}

type hostEntry struct {
	host   string
	guards []resilience.Guard
}

func newHostGuards(makers []func(string) resilience.Guard, max int) *hostGuards {
	return &hostGuards{makers: makers, max: max, hosts: make(map[string]*list.Element)}
}

// get returns host's guards, making them if the host has none. The makers
// run outside the lock; when two calls make guards for the same host at
// once, the first to store them wins and the other's are dropped unused.
func (h *hostGuards) get(host string) []resilience.Guard {
	h.mu.Lock()
	if e, ok := h.hosts[host]; ok {
		h.order.MoveToFront(e)
		guards := e.Value.(*hostEntry).guards
		h.mu.Unlock()
		return guards
	}
	h.mu.Unlock()

	guards := make([]resilience.Guard, len(h.makers))
	for i, mk := range h.makers {
		if guards[i] = mk(host); guards[i] == nil {
			panic("resiliencehttp: WithHostGuard: constructor returned nil for host " + host)
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.hosts[host]; ok {
		h.order.MoveToFront(e)
		return e.Value.(*hostEntry).guards
	}
	h.hosts[host] = h.order.PushFront(&hostEntry{host: host, guards: guards})
	for h.order.Len() > h.max {
		oldest := h.order.Back()
		h.order.Remove(oldest)
		delete(h.hosts, oldest.Value.(*hostEntry).host)
	}
	return guards
}

package main

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// app is the server's work: a request holds one of a number of worker
// slots (a database pool, say) for its service time, log-normal around a
// mean; a request that finds every slot taken waits for one, in order of
// arrival, until its caller leaves. The slots and the service time change
// while it runs, as a real server's capacity does.
type app struct {
	slots slots
	// mean is the mean service time in nanoseconds, as a float64's bits.
	mean atomic.Uint64
	// A share of the requests (a slow endpoint) takes factor times as long.
	slowShare, slowFactor float64
	sigma                 float64
}

func newApp(workers int, mean time.Duration, sigma float64) *app {
	a := &app{sigma: sigma}
	a.slots.resize(workers)
	a.setMean(mean)
	return a
}

func (a *app) setMean(d time.Duration) { a.mean.Store(math.Float64bits(float64(d))) }

// service draws a request's service time.
func (a *app) service() time.Duration {
	m := math.Float64frombits(a.mean.Load())
	if a.slowShare > 0 && rand.Float64() < a.slowShare {
		m *= a.slowFactor
	}
	mu := math.Log(m) - a.sigma*a.sigma/2
	return time.Duration(math.Exp(mu + a.sigma*rand.NormFloat64()))
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.slots.acquire(r.Context()) {
		return // the caller left while the request waited
	}
	time.Sleep(a.service()) // the work is done whether the caller waits or not
	a.slots.release()
	w.Write([]byte("ok"))
}

// slots are the server's worker slots, handed out first come first served.
type slots struct {
	mu    sync.Mutex
	n     int             // slots now
	busy  int             // slots held
	queue []chan struct{} // waiters, oldest first; closed when given a slot
}

// acquire takes a slot, waiting until ctx ends; it reports whether it got
// one.
func (s *slots) acquire(ctx context.Context) bool {
	s.mu.Lock()
	if s.busy < s.n && len(s.queue) == 0 {
		s.busy++
		s.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	s.queue = append(s.queue, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.queue {
		if q == ch {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			return false
		}
	}
	// Given a slot as the caller left: hand it on.
	s.handOn()
	return false
}

// release frees a slot.
func (s *slots) release() {
	s.mu.Lock()
	s.handOn()
	s.mu.Unlock()
}

// handOn gives a freed slot to the oldest waiter, if the slots are not
// over their number. s.mu is held.
func (s *slots) handOn() {
	s.busy--
	s.grant()
}

// grant gives free slots to waiters. s.mu is held.
func (s *slots) grant() {
	for s.busy < s.n && len(s.queue) > 0 {
		s.busy++
		close(s.queue[0])
		s.queue = s.queue[1:]
	}
}

// resize sets the number of slots; requests holding one above the new
// number finish first.
func (s *slots) resize(n int) {
	s.mu.Lock()
	s.n = n
	s.grant()
	s.mu.Unlock()
}

// Package semaphore offers the API of github.com/eapache/go-resiliency/semaphore
// on top of resilience.Bulkhead, so that that library's own tests check
// ours. It is written for this module's tests, not for use.
package semaphore

import (
	"context"
	"errors"
	"time"

	"github.com/faf87a20/resilience"
)

// ErrNoTickets is returned when no ticket could be had in time.
var ErrNoTickets = errors.New("could not acquire semaphore ticket")

// Semaphore is a resilience.Bulkhead whose callers wait up to a timeout.
type Semaphore struct{ b *resilience.Bulkhead }

// New returns a semaphore of tickets tickets; Acquire waits up to timeout
// for one.
func New(tickets int, timeout time.Duration) *Semaphore {
	return &Semaphore{resilience.NewBulkhead(tickets, resilience.WithBulkheadWait(timeout))}
}

// Acquire takes a ticket, waiting for one up to the timeout.
func (s *Semaphore) Acquire() error {
	err := s.b.Acquire(context.Background())
	if errors.Is(err, resilience.ErrBulkheadFull) {
		return ErrNoTickets
	}
	return err
}

// Release gives a ticket back.
func (s *Semaphore) Release() { s.b.Release() }

// IsEmpty reports whether no ticket is taken.
func (s *Semaphore) IsEmpty() bool { return s.b.InFlight() == 0 }

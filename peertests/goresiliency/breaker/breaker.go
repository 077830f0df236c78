// Package breaker offers the API of github.com/eapache/go-resiliency/breaker
// on top of resilience.Breaker with go-resiliency's rule
// (resilience.WithBreakerFailureExpiry), so that that library's own tests
// check ours. It is written for this module's tests, not for use.
package breaker

import (
	"context"
	"errors"
	"time"

	"github.com/faf87a20/resilience"
)

// ErrBreakerOpen is returned for a call the open breaker refused.
var ErrBreakerOpen = errors.New("circuit breaker is open")

// State is a breaker's state.
type State uint32

// The states of a breaker.
const (
	Closed State = iota
	Open
	HalfOpen
)

// Breaker is a resilience.Breaker.
type Breaker struct{ b *resilience.Breaker }

// New returns a breaker that opens after errorThreshold errors with no
// error-free period of timeout between them, stays open for timeout, and
// closes after successThreshold successes in a row while half-open.
func New(errorThreshold, successThreshold int, timeout time.Duration) *Breaker {
	return &Breaker{resilience.NewBreaker(
		resilience.WithBreakerThreshold(errorThreshold),
		resilience.WithBreakerFailureExpiry(timeout),
		resilience.WithBreakerCoolDown(timeout),
		resilience.WithBreakerSuccessThreshold(successThreshold),
		resilience.WithBreakerProbes(successThreshold),
	)}
}

// Run calls work through the breaker; a panic in work counts as an error
// and goes on.
func (b *Breaker) Run(work func() error) error {
	_, err := resilience.Guarded[struct{}](b.b).Execute(context.Background(), func(context.Context) (struct{}, error) {
		return struct{}{}, work()
	})
	return translate(err)
}

// Go runs work through the breaker in a goroutine of its own, and returns
// ErrBreakerOpen at once if the breaker refuses it.
func (b *Breaker) Go(work func() error) error {
	done, err := b.b.Enter(context.Background())
	if err != nil {
		return translate(err)
	}
	go func() { done(work()) }()
	return nil
}

// GetState returns the breaker's state.
func (b *Breaker) GetState() State {
	switch b.b.State() {
	case resilience.BreakerOpen:
		return Open
	case resilience.BreakerHalfOpen:
		return HalfOpen
	}
	return Closed
}

func translate(err error) error {
	if errors.Is(err, resilience.ErrBreakerOpen) {
		return ErrBreakerOpen
	}
	return err
}

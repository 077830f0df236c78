// Package deadline offers the API of github.com/eapache/go-resiliency/deadline
// on top of resilience.Timeout, so that that library's own tests check
// ours. It is written for this module's tests, not for use.
package deadline

import (
	"context"
	"errors"
	"time"

	"github.com/faf87a20/resilience"
)

// ErrTimedOut is returned when the work did not end in time.
var ErrTimedOut = errors.New("timed out waiting for function to finish")

// Deadline is a resilience.Timeout in its default mode, which returns at
// the deadline whether or not the work has ended.
type Deadline struct{ p resilience.Policy[struct{}] }

// New returns a Deadline of timeout.
func New(timeout time.Duration) *Deadline {
	return &Deadline{resilience.Timeout[struct{}](timeout)}
}

// Run runs work, which may watch its stopper to give up once the deadline
// has passed.
func (d *Deadline) Run(work func(<-chan struct{}) error) error {
	_, err := d.p.Execute(context.Background(), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, work(ctx.Done())
	})
	if errors.Is(err, resilience.ErrTimeout) {
		return ErrTimedOut
	}
	return err
}

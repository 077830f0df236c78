package resiliencehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// lease is what an attempt holds until its response is done with: its
// context, and the guards that admitted it.
type lease struct {
	cancel context.CancelFunc // ends the attempt's context; nil without one
	dones  []func(error)      // the guards' done, outermost first
}

// end ends the attempt's context and tells the guards the outcome,
// innermost first.
func (l lease) end(outcome error) {
	if l.cancel != nil {
		l.cancel()
	}
	for i := len(l.dones) - 1; i >= 0; i-- {
		l.dones[i](outcome)
	}
}

// body is the body of a response the transport hands on. Reading it to
// the end or closing it ends the attempt's lease and, for the response
// RoundTrip returns, the call's context: until then the deadlines hold and
// the reading goes on.
type body struct {
	rc         io.ReadCloser
	t          *Transport
	ctx        context.Context // the attempt's context
	lease      lease
	outcome    error              // told to the guards
	callCancel context.CancelFunc // ends the call's context; set by finish
	ended      atomic.Bool
}

// wrap makes resp's body end l when it is done. A response without a body
// (or one that switched protocols) ends l at once.
func (t *Transport) wrap(resp *http.Response, l lease, ctx context.Context, outcome error) {
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		l.end(outcome)
		return
	}
	resp.Body = &body{rc: resp.Body, t: t, ctx: ctx, lease: l, outcome: outcome}
}

// Read reads from the response. At the end of the body the deadlines are
// lifted and the guards told the outcome; a read cut short by a deadline
// fails with an error matching resilience.ErrTimeout.
func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.end()
	case err != nil:
		if cause := b.t.deadlineCause(b.ctx); cause != nil && !errors.Is(err, cause) {
			err = &causedError{cause: cause, err: err}
		}
	}
	return n, err
}

// Close closes the response, lifts the deadlines and tells the guards the
// outcome.
func (b *body) Close() error {
	err := b.rc.Close()
	b.end()
	return err
}

func (b *body) end() {
	if b.ended.CompareAndSwap(false, true) {
		b.lease.end(b.outcome)
		if b.callCancel != nil {
			b.callCancel()
		}
	}
}

// now returns the time on the transport's clock.
func (t *Transport) now() time.Time {
	if t.clock == nil {
		return time.Now()
	}
	return t.clock.Now()
}

package resilienceredis

import (
	"context"
	"sync"
	"time"
)

// request is one decision asked of Redis in a goroutine of its own, so
// that the caller stops waiting at the timeout whatever the client does:
// a client may wait longer than its context says (dialing a server that
// accepts connections and never answers, for one). A request whose answer
// was received is used again, with its timer and argument slices, so that
// a decision allocates only what the client does; an abandoned one is
// left to the collector once the client gives up on it.
type request struct {
	ctx   deadlineCtx
	l     *Limiter
	keys  [1]string
	args  [4]any
	d     decision
	err   error
	done  chan struct{}
	timer *time.Timer
}

var requests = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &request{done: make(chan struct{}, 1), timer: t}
}}

func (r *request) run() {
	r.d, r.err = r.l.run(&r.ctx, r.keys[:], r.args[:])
	r.done <- struct{}{}
}

// ask runs the script within the timeout: it returns the answer, the
// caller's context error when that context ended first (its deadline
// included, though its own timer may not have fired yet), or
// context.DeadlineExceeded when the timeout passed with no answer.
func (l *Limiter) ask(ctx context.Context, key string, n int, maxWait int64) (decision, error) {
	r := requests.Get().(*request)
	deadline := time.Now().Add(l.timeout)
	callers := false // whether the deadline is the caller's
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callers = d, true
	}
	r.ctx = deadlineCtx{Context: ctx, deadline: deadline}
	r.l = l
	r.keys[0] = key
	if l.prefix != "" {
		r.keys[0] = l.prefix + key
	}
	r.args = [4]any{l.intervalArg, l.tauArg, n, maxWait}
	r.timer.Reset(time.Until(deadline))
	go r.run()
	select {
	case <-r.done:
		r.timer.Stop()
		d, err := r.d, r.err
		r.ctx, r.l, r.keys, r.args, r.err = deadlineCtx{}, nil, [1]string{}, [4]any{}, nil
		requests.Put(r)
		return d, err
	case <-ctx.Done():
		return decision{}, ctx.Err()
	case <-r.timer.C:
		if callers {
			return decision{}, &callerEnded{context.DeadlineExceeded}
		}
		return decision{}, context.DeadlineExceeded
	}
}

// deadlineCtx is the context of a request: its parent's, with the
// decision's deadline, kept in the request so that it costs nothing. The
// client sets its connections' deadlines from it; the caller does not wait
// past it in any case.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// callerEnded is the caller's own context error, found by the limiter
// before the context said so: not a fault of Redis.
type callerEnded struct{ error }

func (e *callerEnded) Unwrap() error { return e.error }

package resilienceredis

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faf87a20/resilience/internal/workers"
)

// A decision never keeps its caller past its deadline. With a client that
// honours its context's deadline (a *redis.Client with
// ContextTimeoutEnabled), the script runs on the caller's goroutine: the
// client bounds its reads and writes by the deadline, and its waits (for a
// connection of its pool, a dial, a retry's backoff) end when the
// context's Done channel closes, which it does at the deadline. Any other
// client may wait longer than its context says (by default go-redis bounds
// reads by its ReadTimeout, 3 s, whatever the context), so the script runs
// in a worker goroutine and the caller stops waiting at the deadline.
//
// A request carries one decision: its context, its arguments, and, for a
// worker, the answer. A request answered before its deadline is used
// again, with its timer, channels and argument slices, so that a decision
// allocates only what the client does; one whose deadline passed, or whose
// caller left its worker behind, is left to the collector once nobody uses
// it.
type request struct {
	ctx     deadlineCtx
	l       *Limiter
	keys    [1]string
	args    [4]any
	d       decision
	err     error
	done    chan struct{} // a worker's answer is there
	expired chan struct{} // closed at the deadline
	expiry  *time.Timer   // closes expired at the deadline
}

var requests = sync.Pool{New: func() any {
	r := &request{done: make(chan struct{}, 1), expired: make(chan struct{})}
	r.expiry = time.AfterFunc(time.Hour, func() { close(r.expired) })
	r.expiry.Stop()
	return r
}}

// release returns r to the pool if its timer was stopped before it
// closed expired.
func (r *request) release() {
	if !r.expiry.Stop() {
		return
	}
	r.ctx, r.l, r.keys, r.args, r.err = deadlineCtx{}, nil, [1]string{}, [4]any{}, nil
	requests.Put(r)
}

// Run runs the script for r on a worker goroutine and hands the answer to
// the caller.
func (r *request) Run() {
	r.d, r.err = r.l.run(&r.ctx, r.keys[:], r.args[:])
	r.done <- struct{}{}
}

// honoursDeadlines reports whether the client bounds every wait of a
// command by its context. Only a *redis.Client is known to: with
// ContextTimeoutEnabled it sets its connections' deadlines from the
// context and waits for a connection no longer than the context lets it.
func honoursDeadlines(c Scripter) bool {
	rc, ok := c.(*redis.Client)
	return ok && rc.Options().ContextTimeoutEnabled
}

// ask runs the script within the timeout: it returns the answer, the
// caller's context error when that context ended first (its deadline
// included, though its own timer may not have fired yet), or an error of
// the client or context.DeadlineExceeded when the timeout passed with no
// answer.
func (l *Limiter) ask(ctx context.Context, key string, n int, maxWait int64) (decision, error) {
	r := requests.Get().(*request)
	now := time.Now()
	deadline := now.Add(l.timeout)
	callers := false // whether the deadline is the caller's
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callers = d, true
	}
	r.l = l
	r.keys[0] = key
	if l.prefix != "" {
		r.keys[0] = l.prefix + key
	}
	r.args = [4]any{l.intervalArg, l.tauArg, n, maxWait}
	r.ctx = deadlineCtx{Context: ctx, deadline: deadline, done: r.expired}
	parent := ctx.Done()
	if parent != nil && (callers || !l.direct) {
		// The caller's context ends at the deadline or before, or a
		// worker's caller watches it and the deadline itself: its channel
		// is the request's.
		r.ctx.done = parent
	}
	r.expiry.Reset(time.Until(deadline))
	if l.direct {
		d, err := l.run(&r.ctx, r.keys[:], r.args[:])
		r.release()
		if err != nil && !time.Now().Before(deadline) {
			// Late, as a worker's caller would have been told.
			if callers {
				return decision{}, &callerEnded{context.DeadlineExceeded}
			}
			return decision{}, context.DeadlineExceeded
		}
		return d, err
	}
	workers.Go(ctx, now, r)
	select {
	case <-r.done:
		d, err := r.d, r.err
		r.release()
		return d, err
	case <-parent:
		return decision{}, ctx.Err()
	case <-r.expired:
		if callers {
			return decision{}, &callerEnded{context.DeadlineExceeded}
		}
		return decision{}, context.DeadlineExceeded
	}
}

// deadlineCtx is the context of a request: its parent's, with the
// decision's deadline and a Done channel that closes by then, kept in the
// request so that it costs nothing. The client sets its connections'
// deadlines from it and ends its waits when it is done.
type deadlineCtx struct {
	context.Context
	deadline time.Time
	done     <-chan struct{}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

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

package resilienceredis

import (
	"context"
	"sync"
)

// request is one decision asked of Redis in a goroutine of its own, so
// that the caller stops waiting at the timeout whatever the client does:
// a client may wait longer than its context says (dialing a server that
// accepts connections and never answers, for one). Requests whose answer
// was received are used again; an abandoned one is left to the collector.
type request struct {
	l       *Limiter
	ctx     context.Context
	key     string
	n       int
	maxWait int64
	d       decision
	err     error
	done    chan struct{}
}

var requests = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

func (r *request) run() {
	r.d, r.err = r.l.run(r.ctx, r.key, r.n, r.maxWait)
	r.done <- struct{}{}
}

// ask runs the script within the timeout: it returns the answer, or the
// timeout's error when there is none in time.
func (l *Limiter) ask(ctx context.Context, key string, n int, maxWait int64) (decision, error) {
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	r := requests.Get().(*request)
	r.l, r.ctx, r.key, r.n, r.maxWait = l, rctx, key, n, maxWait
	go r.run()
	select {
	case <-r.done:
		d, err := r.d, r.err
		*r = request{done: r.done}
		requests.Put(r)
		return d, err
	case <-rctx.Done():
		return decision{}, rctx.Err()
	}
}

package resiliencegrpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/faf87a20/resilience"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// StreamClientInterceptor returns an interceptor that retries streams, as
// gRFC A6 does, only until they are committed: until the first response
// header or message arrives, or the client has sent more messages than
// the buffer keeps ([WithStreamBuffer]). Until then it keeps the messages
// sent (and whether the sending side was closed), and a retryable failure
// opens a new stream after the wait and replays them; after that, an error
// goes to the caller as it is. The guards admit a stream once, when it is
// opened, and learn its outcome when it ends (a message stream's end, an
// error, or its context ending). [CallAttempts] changes a stream's
// attempts, and grpc-go's own retry multiplies them as it does a unary
// call's (see [UnaryClientInterceptor]). It panics if an option is
// invalid.
func StreamClientInterceptor(opts ...ClientOption) grpc.StreamClientInterceptor {
	c := newClient(opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		ctx = c.withPriority(ctx)
		s := &retryStream{c: c, retry: c.retry(callOpts), ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, callOpts: callOpts}
		if err := s.enter(c.guardsFor(method, cc.Target())); err != nil {
			return nil, err
		}
		_, err := s.retry.Execute(ctx, func(context.Context) (struct{}, error) {
			return struct{}{}, s.open()
		})
		if err != nil {
			s.end(err)
			return nil, err
		}
		return s, nil
	}
}

// retryStream is a client stream that can start over until it commits.
type retryStream struct {
	c        *client
	retry    resilience.Policy[struct{}]
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	callOpts []grpc.CallOption

	committed atomic.Bool // from then on cur never changes

	mu         sync.Mutex
	cur        grpc.ClientStream
	cancel     context.CancelFunc // cur's context
	stale      bool               // cur failed: the next attempt opens a new one
	sent       []any              // kept for replay until committed
	closedSend bool

	dones   []func(error) // the guards' outcomes
	ended   sync.Once
	stopCtx func() bool
}

// enter admits the stream through the guards, outermost first.
func (s *retryStream) enter(guards []resilience.Guard) error {
	for _, g := range guards {
		done, err := g.Enter(s.ctx)
		if err != nil {
			s.release(err)
			return &guardError{err: err}
		}
		s.dones = append(s.dones, done)
	}
	if len(s.dones) > 0 {
		// A stream the caller abandons by ending its context frees the guards.
		s.stopCtx = context.AfterFunc(s.ctx, func() { s.end(s.ctx.Err()) })
	}
	return nil
}

func (s *retryStream) release(err error) {
	for i := len(s.dones) - 1; i >= 0; i-- {
		s.dones[i](err)
	}
	s.dones = nil
}

// end tells the guards the stream's outcome, once, and frees its context.
func (s *retryStream) end(err error) {
	s.ended.Do(func() {
		if s.stopCtx != nil {
			s.stopCtx()
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		s.release(outcome(s.ctx, err))
		s.mu.Lock()
		cancel := s.cancel
		s.mu.Unlock()
		if cancel != nil {
			cancel() // the stream is over: its context only holds memory now
		}
	})
}

// open starts a new stream and replays what was sent on the last. It is
// the attempt a retry repeats while the stream is not committed.
func (s *retryStream) open() error {
	ctx, cancel := context.WithCancel(s.ctx)
	cur, err := s.streamer(ctx, s.desc, s.cc, s.method, s.callOpts...)
	if err != nil {
		cancel()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.sent {
		if err := cur.SendMsg(m); err != nil && !errors.Is(err, io.EOF) {
			cancel()
			return err
		}
	}
	if s.closedSend {
		_ = cur.CloseSend()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.cur, s.cancel, s.stale = cur, cancel, false
	return nil
}

func (s *retryStream) current() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// attempt runs op on the current stream, opening a new one first if the
// last failed, and commits on success. Its error is what the retry
// classifies.
func (s *retryStream) attempt(op func(grpc.ClientStream) (commit bool, err error)) error {
	s.mu.Lock()
	stale := s.stale
	s.mu.Unlock()
	if stale {
		if err := s.open(); err != nil {
			return err
		}
	}
	cur := s.current()
	commit, err := op(cur)
	if commit {
		s.commit()
	}
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	if s.committed.Load() {
		return resilience.Permanent(err) // too late to start over
	}
	s.mu.Lock()
	if s.cur == cur {
		s.stale = true
	}
	s.mu.Unlock()
	return withPushback(err, cur.Trailer())
}

// commit fixes the stream on its current attempt: no more retries, and no
// more messages kept.
func (s *retryStream) commit() {
	s.mu.Lock()
	s.sent = nil
	s.committed.Store(true)
	s.mu.Unlock()
}

// retryOp runs op under the retry until the stream commits.
func (s *retryStream) retryOp(op func(grpc.ClientStream) (bool, error)) error {
	var eof bool
	_, err := s.retry.Execute(s.ctx, func(context.Context) (struct{}, error) {
		err := s.attempt(op)
		if errors.Is(err, io.EOF) {
			eof = true
			return struct{}{}, nil
		}
		return struct{}{}, err
	})
	if eof {
		return io.EOF
	}
	return err
}

// RecvMsg receives a message; before the stream commits, a retryable
// failure starts it over.
func (s *retryStream) RecvMsg(m any) error {
	var err error
	if s.committed.Load() {
		err = s.cur.RecvMsg(m)
	} else {
		err = s.retryOp(func(cur grpc.ClientStream) (bool, error) {
			err := cur.RecvMsg(m)
			return err == nil, err
		})
	}
	if err != nil || !s.desc.ServerStreams {
		s.end(err)
	}
	return err
}

// Header returns the response header; receiving one commits the stream.
func (s *retryStream) Header() (metadata.MD, error) {
	if s.committed.Load() {
		return s.cur.Header()
	}
	var md metadata.MD
	err := s.retryOp(func(cur grpc.ClientStream) (bool, error) {
		var err error
		md, err = cur.Header()
		// A stream that failed before its header reports the failure at
		// RecvMsg; a header commits.
		return md != nil && err == nil, err
	})
	return md, err
}

// SendMsg sends a message, keeping it for replay until the stream commits.
func (s *retryStream) SendMsg(m any) error {
	if s.committed.Load() {
		return s.cur.SendMsg(m)
	}
	s.mu.Lock()
	if len(s.sent) >= s.c.cfg.buffer {
		s.sent = nil
		s.committed.Store(true) // gRFC A6: past the buffer, no retry
	} else {
		s.sent = append(s.sent, m)
	}
	cur := s.cur
	s.mu.Unlock()
	err := cur.SendMsg(m)
	if errors.Is(err, io.EOF) && !s.committed.Load() {
		return nil // the stream failed; RecvMsg learns why, and may start over
	}
	return err
}

// CloseSend closes the sending side, which a new attempt repeats.
func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	s.closedSend = true
	cur := s.cur
	s.mu.Unlock()
	return cur.CloseSend()
}

// Trailer returns the trailer of the current attempt.
func (s *retryStream) Trailer() metadata.MD { return s.current().Trailer() }

// Context returns the current attempt's context.
func (s *retryStream) Context() context.Context { return s.current().Context() }

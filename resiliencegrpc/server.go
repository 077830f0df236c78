package resiliencegrpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/faf87a20/resilience"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ServerOption configures [UnaryServerInterceptor] and
// [StreamServerInterceptor].
type ServerOption interface {
	applyServer(*serverConfig)
}

type serverOptionFunc func(*serverConfig)

func (f serverOptionFunc) applyServer(c *serverConfig) { f(c) }

type serverConfig struct {
	guards   []resilience.Guard
	code     codes.Code
	priority string // the metadata entry of a call's priority; "": none
}

// WithServerGuards puts guards in front of every call the server handles,
// the first outermost: a [resilience.Bulkhead] to shed load, a rate
// limiter, a [resilience.Breaker] around a fragile dependency. It panics if
// a guard is nil.
func WithServerGuards(guards ...resilience.Guard) ServerOption {
	for i, g := range guards {
		if g == nil {
			panic(fmt.Sprintf("resiliencegrpc: WithServerGuards: guard %d is nil", i))
		}
	}
	guards = append([]resilience.Guard(nil), guards...)
	return serverOptionFunc(func(c *serverConfig) { c.guards = append(c.guards, guards...) })
}

// WithRefusalCode sets the status code of a call a guard refuses. The
// default is RESOURCE_EXHAUSTED; UNAVAILABLE is the other sensible choice,
// the one that clients, grpc-go's built-in retry among them, retry by
// default. It panics if c is OK.
func WithRefusalCode(c codes.Code) ServerOption {
	if c == codes.OK {
		panic("resiliencegrpc: WithRefusalCode: OK is not a refusal")
	}
	return serverOptionFunc(func(cfg *serverConfig) { cfg.code = c })
}

func newServerConfig(opts []ServerOption) serverConfig {
	cfg := serverConfig{code: codes.ResourceExhausted}
	for _, o := range opts {
		if o == nil {
			panic("resiliencegrpc: option is nil")
		}
		o.applyServer(&cfg)
	}
	return cfg
}

// UnaryServerInterceptor returns an interceptor that passes every call
// through the guards. A refusal becomes the refusal code (by default
// RESOURCE_EXHAUSTED) with the guard's retry hint, rounded up to whole
// milliseconds, as the grpc-retry-pushback-ms trailer, so that this
// package's client and grpc-go's built-in retry both wait as long as the
// guard asks. The pushback is at most 9223372036854, the milliseconds a
// time.Duration holds, which the largest hint (an isolated breaker's)
// gives. A caller's context that ended while it waited for a guard
// gives CANCELED or DEADLINE_EXCEEDED. The guards are told the handler's
// error, or, when the caller left first (the call's context was
// cancelled), an error matching context.Canceled whatever the handler
// returned, which a breaker, an adaptive limiter or a throttler counts
// neither way. A panic in the handler frees what the guards hold, then
// goes on. It panics if an option is invalid.
func UnaryServerInterceptor(opts ...ServerOption) grpc.UnaryServerInterceptor {
	cfg := newServerConfig(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx = cfg.withPriority(ctx)
		var resp any
		err := cfg.guard(ctx, func() error {
			var err error
			resp, err = handler(ctx, req)
			return err
		}, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) })
		return resp, err
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streams: the
// guards admit a stream when it opens and learn its outcome when the
// handler returns.
func StreamServerInterceptor(opts ...ServerOption) grpc.StreamServerInterceptor {
	cfg := newServerConfig(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if ctx := cfg.withPriority(ss.Context()); ctx != ss.Context() {
			ss = &priorityStream{ServerStream: ss, ctx: ctx}
		}
		return cfg.guard(ss.Context(), func() error { return handler(srv, ss) }, ss.SetTrailer)
	}
}

// guard runs handle through the guards, outermost first, and turns a
// refusal into a status with pushback.
func (cfg *serverConfig) guard(ctx context.Context, handle func() error, setTrailer func(metadata.MD)) error {
	dones := make([]func(error), 0, len(cfg.guards))
	release := func(err error) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](err)
		}
	}
	for _, g := range cfg.guards {
		done, err := g.Enter(ctx)
		if err != nil {
			release(err) // admitted by the outer guards, refused by this one
			return cfg.refusal(ctx, err, setTrailer)
		}
		dones = append(dones, done)
	}
	finished := false
	defer func() {
		if !finished { // a panic, or runtime.Goexit (r is nil)
			r := recover()
			release(&resilience.PanicError{Value: r})
			if r != nil {
				panic(r)
			}
		}
	}()
	err := handle()
	finished = true
	release(served(ctx, err))
	return err
}

// served is what the guards are told of a call the handler ended with
// err: err, or errCallerLeft when the caller left first (the call's context
// was cancelled: the client cancelled the call or went away), whatever the
// handler returned.
func served(ctx context.Context, err error) error {
	if ctx.Err() == context.Canceled {
		return errCallerLeft
	}
	return err
}

// errCallerLeft is the outcome of a call whose caller left before the
// answer: a CANCELED status that matches context.Canceled, which the guards
// that judge outcomes count neither way, for a call whose caller left says
// nothing of the server's health. grpc-go's own CANCELED status does not
// match context.Canceled, and a handler may answer anything once its
// caller has gone.
var errCallerLeft error = &canceledError{err: status.Error(codes.Canceled, "resiliencegrpc: the caller left before the answer")}

// refusal is the status of a call a guard did not admit: a guard's refusal
// (resilience.ErrRefused) is the refusal code with its pushback, even one
// that matches context.DeadlineExceeded too (a rate limiter's, for tokens
// that come after the deadline); the error of the call's context that
// ended while a guard made it wait is the context's status; any other
// error of a guard's is the refusal code.
func (cfg *serverConfig) refusal(ctx context.Context, err error, setTrailer func(metadata.MD)) error {
	if !errors.Is(err, resilience.ErrRefused) && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return status.FromContextError(err).Err()
	}
	if d, ok := resilience.RetryAfter(err); ok {
		setTrailer(metadata.Pairs(PushbackKey, strconv.FormatInt(millisUp(d), 10)))
	}
	return status.Error(cfg.code, err.Error())
}

// millisUp returns d, which is positive, in whole milliseconds rounded up,
// at most maxPushback. It divides before rounding: adding a millisecond's
// margin first wraps the largest hint (an isolated breaker's,
// math.MaxInt64) to a negative pushback, which gRFC A6 clients read as "do
// not retry". The cap keeps grpc-go, which multiplies the pushback by
// time.Millisecond, from overflowing into a retry at once.
func millisUp(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 && ms < maxPushback {
		ms++
	}
	return ms
}

// maxPushback is the largest number of whole milliseconds in a
// time.Duration.
const maxPushback = int64(math.MaxInt64 / time.Millisecond)

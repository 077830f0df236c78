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

// PushbackKey is the trailer in which a server tells a client when to
// retry, in milliseconds, as gRPC's retry design (gRFC A6) defines it: a
// value of 0 or more means retry after that long, a negative or malformed
// one means do not retry.
const PushbackKey = "grpc-retry-pushback-ms"

// Scope says which calls share a guard made by [WithClientGuard]: the
// calls of one method, or every call to one target.
type Scope int

const (
	// PerMethod gives each full method name ("/pkg.Service/Method") a guard
	// of its own.
	PerMethod Scope = iota
	// PerTarget gives each target of a ClientConn (cc.Target()) a guard of
	// its own.
	PerTarget
)

// ClientOption configures [UnaryClientInterceptor] and
// [StreamClientInterceptor].
type ClientOption interface {
	applyClient(*clientConfig)
}

type clientOptionFunc func(*clientConfig)

func (f clientOptionFunc) applyClient(c *clientConfig) { f(c) }

type clientConfig struct {
	codes       map[codes.Code]bool
	attempts    int
	backoff     resilience.Backoff
	attemptTime time.Duration
	retryOpts   []resilience.RetryOption
	guards      []clientGuard
	buffer      int
	clock       resilience.Clock
	priority    string // the metadata entry of a call's priority; "": none
}

type clientGuard struct {
	scope Scope
	make  func(key string) resilience.Guard
}

// DefaultBackoff is the wait before each retry when no [WithBackoff] is
// given: gRFC A6's exponential backoff as amended in 2024,
// min(100ms·2^(n−1), 10s) spread by ±20%.
func DefaultBackoff() resilience.Backoff {
	return resilience.SymmetricJitter(resilience.Cap(resilience.Exponential(100*time.Millisecond, 2), 10*time.Second), 0.2)
}

// WithCodes sets the status codes that are retried; every other code is
// returned at once. The default is UNAVAILABLE alone, the one code gRPC
// itself knows to be safe to retry: the call did not reach the
// application. It panics if no code is given or a code is OK.
func WithCodes(cs ...codes.Code) ClientOption {
	if len(cs) == 0 {
		panic("resiliencegrpc: WithCodes: no code given")
	}
	set := map[codes.Code]bool{}
	for _, c := range cs {
		if c == codes.OK {
			panic("resiliencegrpc: WithCodes: OK is not an error to retry")
		}
		set[c] = true
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.codes = set })
}

// WithAttempts sets how many attempts a call makes in all, the first
// included; [CallAttempts] changes it for one call. The default is 3. It
// panics unless 1 <= n <= 10.
func WithAttempts(n int) ClientOption {
	if n < 1 || n > maxAttempts {
		panic(fmt.Sprintf("resiliencegrpc: WithAttempts: attempts must be between 1 and %d, got %d", maxAttempts, n))
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.attempts = n })
}

// WithBackoff sets the waits between attempts; see [DefaultBackoff] for
// the default. A server's pushback replaces the wait it applies to. It
// panics if b is nil.
func WithBackoff(b resilience.Backoff) ClientOption {
	if b == nil {
		panic("resiliencegrpc: WithBackoff: backoff is nil")
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.backoff = b })
}

// WithAttemptTimeout bounds each attempt of a unary call by d, within the
// call's own deadline (the server sees the shorter of the two). By default
// an attempt has the call's deadline only. Streams are not bounded per
// attempt. It panics unless d > 0.
func WithAttemptTimeout(d time.Duration) ClientOption {
	if d <= 0 {
		panic(fmt.Sprintf("resiliencegrpc: WithAttemptTimeout: timeout must be positive, got %v", d))
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.attemptTime = d })
}

// WithRetryOptions passes options to the [resilience.Retry] under the
// interceptor: a shared retry budget or throttle ([resilience.WithBudget]),
// an observer, a cap on pushback waits ([resilience.WithMaxRetryAfter]; by
// default a pushback is honoured exactly, up to the call's deadline). The
// interceptor's own options (attempts, backoff, codes) come first, so
// these may override them; a resilience.WithAttempts among them overrides
// [CallAttempts] too. Without a budget among them, the retries of every
// call through the interceptor draw on one quota of its own, the one a
// Retry keeps by default (resilience.NewRetryQuota(40)), which reports to
// the observer given here.
func WithRetryOptions(opts ...resilience.RetryOption) ClientOption {
	opts = append([]resilience.RetryOption(nil), opts...)
	return clientOptionFunc(func(cfg *clientConfig) { cfg.retryOpts = append(cfg.retryOpts, opts...) })
}

// WithClientGuard puts a guard (a [resilience.Breaker], a
// [resilience.Bulkhead], a rate limiter) in front of every attempt, one
// guard per method or per target as scope says, made by newGuard the
// first time its key is seen. Guards are applied in the order given,
// inside the retries, so that a breaker records every attempt. An open
// breaker's refusal ends the call at once, unless the backoff would wait
// out its cool-down anyway; resilience.WithWaitForBreaker, given to
// [WithRetryOptions], makes the retry wait for its hint instead.
//
// The guards are kept as a [resilience.Keyed] keeps them: at most 10,000
// keys, a key's guard let go of once idle for 5 minutes if it rests, never
// while its breaker is open or a call is in flight; a new key while every
// guard held is busy goes without this guard. It panics if newGuard is
// nil, and an attempt panics if newGuard returns nil.
func WithClientGuard(scope Scope, newGuard func(key string) resilience.Guard) ClientOption {
	if newGuard == nil {
		panic("resiliencegrpc: WithClientGuard: newGuard is nil")
	}
	if scope != PerMethod && scope != PerTarget {
		panic(fmt.Sprintf("resiliencegrpc: WithClientGuard: unknown scope %d", scope))
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.guards = append(cfg.guards, clientGuard{scope, newGuard}) })
}

// WithClock makes the retry waits and the attempt timeouts use c, for
// tests; by default they use the real clock. It panics if c is nil.
func WithClock(c resilience.Clock) ClientOption {
	if c == nil {
		panic("resiliencegrpc: WithClock: clock is nil")
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.clock = c })
}

// WithStreamBuffer sets how many messages a stream keeps, to replay them
// on a new attempt, before it commits to the current one. A stream that
// sends more before its first response is committed and not retried, as
// gRFC A6 bounds its buffer. The default is 64. It panics if n is
// negative.
func WithStreamBuffer(n int) ClientOption {
	if n < 0 {
		panic(fmt.Sprintf("resiliencegrpc: WithStreamBuffer: buffer must not be negative, got %d", n))
	}
	return clientOptionFunc(func(cfg *clientConfig) { cfg.buffer = n })
}

// client is what the interceptors share: the retries and the guards.
type client struct {
	cfg            clientConfig
	retries        [maxAttempts + 1]resilience.Policy[struct{}]  // by attempts; 0 unused
	attemptTimeout resilience.Policy[struct{}]                   // nil: none
	guards         []*resilience.Keyed[string, resilience.Guard] // one per WithClientGuard, by method or target
}

// retry returns the retry of a call: the interceptor's, or the one of the
// attempts a CallAttempts among its options asks for (the last, if more).
func (c *client) retry(callOpts []grpc.CallOption) resilience.Policy[struct{}] {
	n := c.cfg.attempts
	for _, o := range callOpts {
		if a, ok := o.(callAttempts); ok {
			n = a.n
		}
	}
	return c.retries[n]
}

func newClient(opts []ClientOption) *client {
	cfg := clientConfig{codes: map[codes.Code]bool{codes.Unavailable: true}, attempts: 3, buffer: 64}
	for _, o := range opts {
		if o == nil {
			panic("resiliencegrpc: option is nil")
		}
		o.applyClient(&cfg)
	}
	if cfg.backoff == nil {
		cfg.backoff = DefaultBackoff()
	}
	c := &client{cfg: cfg, guards: keyedGuards(cfg.guards)}
	var common []resilience.RetryQuotaOption // the observer, name and clock of the retries
	var timeoutOpts []resilience.TimeoutOption
	if cfg.clock != nil {
		common = append(common, resilience.WithClock(cfg.clock))
		timeoutOpts = append(timeoutOpts, resilience.WithClock(cfg.clock))
	}
	for _, o := range cfg.retryOpts {
		if o, ok := o.(resilience.Option); ok {
			common = append(common, o)
		}
	}
	// One retry for each number of attempts a call may ask for, all drawing
	// on one quota: the one a Retry keeps by default, unless the options
	// given with WithRetryOptions, which come after, name another.
	quota := resilience.WithBudget(resilience.NewRetryQuota(40, common...))
	for n := 1; n <= maxAttempts; n++ {
		retryOpts := []resilience.RetryOption{
			resilience.WithAttempts(n),
			resilience.WithBackoff(cfg.backoff),
			resilience.WithMaxRetryAfter(time.Duration(math.MaxInt64)),
			resilience.WithRetryIf(c.retryable),
			quota,
		}
		if cfg.clock != nil {
			retryOpts = append(retryOpts, resilience.WithClock(cfg.clock))
		}
		c.retries[n] = resilience.Retry[struct{}](append(retryOpts, cfg.retryOpts...)...)
	}
	if cfg.attemptTime > 0 {
		// gRPC calls honour their context: the cheaper cooperative mode.
		timeoutOpts = append(timeoutOpts, resilience.WithTimeoutCooperative())
		c.attemptTimeout = resilience.Timeout[struct{}](cfg.attemptTime, timeoutOpts...)
	}
	return c
}

// retryable reports whether an attempt's error is retried: its code is
// one of the configured, and the server did not refuse a retry.
func (c *client) retryable(err error) bool {
	var pb *pushbackError
	if errors.As(err, &pb) && pb.stop {
		return false
	}
	var guard *guardError
	if errors.As(err, &guard) {
		// A guard's refusal, with its hint; but a throttle's refusal spares
		// the server the load that a retry would add.
		return !errors.Is(err, resilience.ErrThrottled)
	}
	if errors.Is(err, resilience.ErrTimeout) {
		return true // the attempt's own timeout, not the call's deadline
	}
	return c.cfg.codes[status.Code(err)]
}

// UnaryClientInterceptor returns an interceptor that retries unary calls
// that fail with a retryable code (UNAVAILABLE by default), waiting as the
// backoff says or exactly as the server's pushback asks, never past the
// call's deadline, and that passes each attempt through the guards. After
// the attempts run out the caller gets the last attempt's error, whose
// status code (status.Code) is the server's and which also matches
// resilience.ErrRetriesExhausted. [CallAttempts] among a call's options
// changes its attempts: CallAttempts(1) turns its retries off.
//
// Dial with grpc.WithDisableRetry() when a service config may turn on
// grpc-go's own retry (a retryPolicy): grpc-go would then retry each of
// this interceptor's attempts, multiplying them out of sight of its guards
// and retry quota (the README shows by how much). It panics if an option
// is invalid.
func UnaryClientInterceptor(opts ...ClientOption) grpc.UnaryClientInterceptor {
	c := newClient(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		ctx = c.withPriority(ctx)
		guards := c.guardsFor(method, cc.Target())
		call := ctx
		attempt := func(ctx context.Context) (struct{}, error) {
			return struct{}{}, guarded(ctx, guards, func(ctx context.Context) error {
				var trailer metadata.MD
				err := invoker(ctx, method, req, reply, cc, append(callOpts, grpc.Trailer(&trailer))...)
				return c.timedOut(call, ctx, withPushback(err, trailer))
			})
		}
		if c.attemptTimeout != nil {
			timed := attempt
			attempt = func(ctx context.Context) (struct{}, error) { return c.attemptTimeout.Execute(ctx, timed) }
		}
		_, err := c.retry(callOpts).Execute(ctx, attempt)
		return err
	}
}

// timedOut marks err, an attempt's error, as the attempt's own timeout
// when it is DEADLINE_EXCEEDED and the attempt's deadline, earlier than the
// call's, has passed on the clock. grpc-go reports a deadline it sees
// passed (when the server resets the stream first) before the timer that
// ends the attempt's context has run, and the attempt's Timeout, which
// asks the context, would not know that the attempt timed out.
func (c *client) timedOut(call, attempt context.Context, err error) error {
	if c.attemptTimeout == nil || status.Code(err) != codes.DeadlineExceeded {
		return err
	}
	deadline, ok := attempt.Deadline()
	if !ok || c.now().Before(deadline) {
		return err
	}
	if d, ok := call.Deadline(); ok && !d.After(deadline) {
		return err // the call's deadline, not the attempt's
	}
	return &attemptTimeoutError{err: err}
}

// now is the time on the configured clock.
func (c *client) now() time.Time {
	if c.cfg.clock != nil {
		return c.cfg.clock.Now()
	}
	return time.Now()
}

// attemptTimeoutError is an attempt's DEADLINE_EXCEEDED that its own
// timeout caused: it matches resilience.ErrTimeout, as the attempt's
// Timeout makes it when its context has ended, and keeps the attempt's
// status.
type attemptTimeoutError struct{ err error }

func (e *attemptTimeoutError) Error() string   { return e.err.Error() }
func (e *attemptTimeoutError) Unwrap() []error { return []error{resilience.ErrTimeout, e.err} }

// GRPCStatus returns the status of the attempt's error.
func (e *attemptTimeoutError) GRPCStatus() *status.Status {
	s, _ := status.FromError(e.err)
	return s
}

// guarded runs call through the guards, outermost first.
func guarded(ctx context.Context, guards []resilience.Guard, call func(context.Context) error) (err error) {
	if len(guards) == 0 {
		return call(ctx)
	}
	done, err := guards[0].Enter(ctx)
	if err != nil {
		return &guardError{err: err}
	}
	finished := false
	defer func() {
		if !finished { // a panic, or runtime.Goexit (r is nil)
			r := recover()
			done(&resilience.PanicError{Value: r})
			if r != nil {
				panic(r)
			}
		}
	}()
	err = guarded(ctx, guards[1:], call)
	finished = true
	done(outcome(ctx, err))
	return err
}

// guardError is a guard's refusal of an attempt. It keeps the refusal's
// retry hint, and reads as UNAVAILABLE to status.Code: the call did not
// leave the client.
type guardError struct{ err error }

func (e *guardError) Error() string { return e.err.Error() }
func (e *guardError) Unwrap() error { return e.err }
func (e *guardError) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, e.err.Error())
}

// pushbackError is an attempt's error with the server's pushback: a wait
// (a retry hint) or, with stop, a refusal to be retried.
type pushbackError struct {
	err  error
	wait time.Duration
	stop bool
}

func (e *pushbackError) Error() string { return e.err.Error() }
func (e *pushbackError) Unwrap() error { return e.err }

// GRPCStatus returns the status of the attempt's error.
func (e *pushbackError) GRPCStatus() *status.Status {
	s, _ := status.FromError(e.err)
	return s
}

// RetryAfter is the pushback's wait. A pushback of 0 asks for a retry at
// once; the least positive wait stands for it, for a hint of 0 means no
// hint at all.
func (e *pushbackError) RetryAfter() time.Duration {
	if e.stop {
		return 0
	}
	return max(e.wait, time.Nanosecond)
}

// withPushback attaches the server's pushback, if any, to an attempt's
// error.
func withPushback(err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	vals := trailer.Get(PushbackKey)
	if len(vals) == 0 {
		return err
	}
	ms, perr := strconv.ParseInt(vals[0], 10, 64)
	if perr != nil || ms < 0 || len(vals) > 1 {
		return &pushbackError{err: err, stop: true} // gRFC A6: do not retry
	}
	return &pushbackError{err: err, wait: time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond}
}

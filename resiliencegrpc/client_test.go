package resiliencegrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestUnaryRetry(t *testing.T) {
	unavailable := step{code: codes.Unavailable}
	tests := []struct {
		name      string
		script    []step
		opts      []resiliencegrpc.ClientOption
		deadline  time.Duration // of the call; 0: none
		wantCode  codes.Code
		wantCalls int
		waits     []time.Duration // exactly, when set
		waitsIn   [][2]time.Duration
		exhausted bool
	}{
		{name: "UNAVAILABLE is retried", script: []step{unavailable, unavailable, {}},
			wantCode: codes.OK, wantCalls: 3,
			waitsIn: [][2]time.Duration{{80 * time.Millisecond, 120 * time.Millisecond}, {160 * time.Millisecond, 240 * time.Millisecond}}},
		{name: "attempts run out", script: []step{unavailable},
			wantCode: codes.Unavailable, wantCalls: 3, exhausted: true},
		{name: "INTERNAL is not retried by default", script: []step{{code: codes.Internal}, {}},
			wantCode: codes.Internal, wantCalls: 1},
		{name: "configured codes are retried", script: []step{{code: codes.Internal}, {code: codes.Aborted}, {}},
			opts:     []resiliencegrpc.ClientOption{resiliencegrpc.WithCodes(codes.Internal, codes.Aborted)},
			wantCode: codes.OK, wantCalls: 3},
		{name: "and only those", script: []step{{code: codes.Unavailable}, {}},
			opts:     []resiliencegrpc.ClientOption{resiliencegrpc.WithCodes(codes.Internal)},
			wantCode: codes.Unavailable, wantCalls: 1},
		{name: "pushback sets the wait exactly", script: []step{{code: codes.Unavailable, pushback: "150"}, {}},
			wantCode: codes.OK, wantCalls: 2, waits: []time.Duration{150 * time.Millisecond}},
		{name: "pushback of 0 retries at once", script: []step{{code: codes.Unavailable, pushback: "0"}, {}},
			wantCode: codes.OK, wantCalls: 2, waits: []time.Duration{time.Nanosecond}},
		{name: "negative pushback forbids a retry", script: []step{{code: codes.Unavailable, pushback: "-1"}, {}},
			wantCode: codes.Unavailable, wantCalls: 1},
		{name: "malformed pushback forbids a retry", script: []step{{code: codes.Unavailable, pushback: "soon"}, {}},
			wantCode: codes.Unavailable, wantCalls: 1},
		{name: "pushback past the deadline: gives up at once", script: []step{{code: codes.Unavailable, pushback: "5000"}, {}},
			deadline: time.Minute / 30, wantCode: codes.Unavailable, wantCalls: 1, waits: []time.Duration{}, exhausted: true},
		// The largest pushback a server sends, and any past it that still
		// parses as an int64, saturate to the largest wait.
		{name: "the largest pushback: the largest wait", script: []step{{code: codes.Unavailable, pushback: "9223372036854"}, {}},
			wantCode: codes.OK, wantCalls: 2, waits: []time.Duration{9223372036854 * time.Millisecond}},
		{name: "a pushback past a Duration saturates", script: []step{{code: codes.Unavailable, pushback: "9223372036854775807"}, {}},
			wantCode: codes.OK, wantCalls: 2, waits: []time.Duration{9223372036854 * time.Millisecond}},
		{name: "pushback overrides a fixed backoff", script: []step{{code: codes.Unavailable, pushback: "20"}, unavailable, {}},
			opts:     []resiliencegrpc.ClientOption{resiliencegrpc.WithBackoff(resilience.Constant(time.Second))},
			wantCode: codes.OK, wantCalls: 3, waits: []time.Duration{20 * time.Millisecond, time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newRecordingClock()
			srv := &scripted{script: tc.script}
			opts := append([]resiliencegrpc.ClientOption{resiliencegrpc.WithClock(clk)}, tc.opts...)
			cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(opts...)))
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, err := healthpb.NewHealthClient(cc).Check(ctx, checkReq)
			assert.Equal(t, tc.wantCode, status.Code(err), "status.Code(%v)", err)
			assert.Equal(t, tc.wantCalls, srv.count(), "calls reaching the server")
			if tc.exhausted {
				assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
			}
			waits := clk.recorded()
			if tc.waits != nil {
				assert.Equal(t, tc.waits, append([]time.Duration{}, waits...), "waits")
			}
			for i, in := range tc.waitsIn {
				require.Greater(t, len(waits), i)
				assert.GreaterOrEqual(t, waits[i], in[0], "wait %d", i+1)
				assert.LessOrEqual(t, waits[i], in[1], "wait %d", i+1)
			}
		})
	}
}

// TestUnaryAttemptTimeout: an attempt that hangs is cut at its own timeout
// and retried, within the call's deadline, which the server sees. The
// attempt's deadline travels to the server (grpc-timeout), so this test
// runs on the real clock: the first attempt ends after 50ms.
func TestUnaryAttemptTimeout(t *testing.T) {
	srv := &scripted{script: []step{{block: true}, {}}}
	cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
		resiliencegrpc.WithAttemptTimeout(50*time.Millisecond), resiliencegrpc.WithBackoff(resilience.Constant(0)))))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := healthpb.NewHealthClient(cc).Check(ctx, checkReq)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.count())
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, left := range srv.ctxs {
		assert.Greater(t, left, time.Duration(0), "call %d carries a deadline", i+1)
		assert.LessOrEqual(t, left, 50*time.Millisecond, "the attempt's, within the call's own")
	}
}

// TestUnaryGuards: a breaker per method records every attempt; once open,
// its refusal ends the call at once (its backoff, of 400ms ± 20% before the
// third retry, does not wait out the cool-down), and with
// resilience.WithWaitForBreaker its hint sets the retry's wait instead.
// Either way the server is spared.
func TestUnaryGuards(t *testing.T) {
	tests := []struct {
		name      string
		opts      []resiliencegrpc.ClientOption
		wantWaits int // the retries' waits
		wantCalls int // the calls that reached the server
	}{
		// Attempts 1 and 2 reach the server and open the breaker; attempt 3
		// is refused, and the call ends with the refusal.
		{"the refusal at once", nil, 2, 2},
		// Attempt 3 is refused, and its hint sets the wait; attempt 4 goes
		// as the probe.
		{"WithWaitForBreaker", []resiliencegrpc.ClientOption{resiliencegrpc.WithRetryOptions(resilience.WithWaitForBreaker())}, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newRecordingClock()
			srv := &scripted{script: []step{{code: codes.Unavailable}}}
			made := map[string]*resilience.Breaker{}
			opts := append([]resiliencegrpc.ClientOption{
				resiliencegrpc.WithClock(clk), resiliencegrpc.WithAttempts(4),
				resiliencegrpc.WithClientGuard(resiliencegrpc.PerMethod, func(method string) resilience.Guard {
					b := resilience.NewBreaker(resilience.WithClock(clk), resilience.WithBreakerThreshold(2),
						resilience.WithBreakerCoolDown(time.Second))
					made[method] = b
					return b
				})}, tc.opts...)
			cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(opts...)))
			_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq)
			assert.Equal(t, codes.Unavailable, status.Code(err))
			require.Len(t, made, 1)
			require.Contains(t, made, "/grpc.health.v1.Health/Check")
			waits := clk.recorded()
			require.Len(t, waits, tc.wantWaits)
			if tc.wantWaits == 3 {
				// The breaker opened when attempt 2 failed, before the
				// backoff's wait; its hint is what was left of the cool-down
				// (plus a millisecond).
				assert.Equal(t, time.Second+time.Millisecond, waits[1]+waits[2], "the breaker's hint sets the wait")
			} else {
				assert.ErrorIs(t, err, resilience.ErrBreakerOpen, "the call's error")
			}
			assert.Equal(t, tc.wantCalls, srv.count(), "calls that reached the server")
		})
	}
}

func TestStreamRetriedUntilCommitted(t *testing.T) {
	tests := []struct {
		name      string
		script    []step
		wantMsgs  int
		wantCode  codes.Code
		wantCalls int
	}{
		{name: "failure before the first message: retried, transparently",
			script: []step{{code: codes.Unavailable}, {code: codes.Unavailable}, {msgs: 2}}, wantMsgs: 2, wantCode: codes.OK, wantCalls: 3},
		{name: "failure after the first message: the caller gets it",
			script: []step{{code: codes.Unavailable}, {msgs: 1, code: codes.Unavailable}, {msgs: 5}}, wantMsgs: 1, wantCode: codes.Unavailable, wantCalls: 2},
		{name: "a code not to retry",
			script: []step{{code: codes.PermissionDenied}, {msgs: 1}}, wantMsgs: 0, wantCode: codes.PermissionDenied, wantCalls: 1},
		{name: "negative pushback",
			script: []step{{code: codes.Unavailable, pushback: "-5"}, {msgs: 1}}, wantMsgs: 0, wantCode: codes.Unavailable, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{script: tc.script}
			cc := serve(t, srv, nil, grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor(
				resiliencegrpc.WithClock(newRecordingClock()))))
			stream, err := healthpb.NewHealthClient(cc).Watch(context.Background(), checkReq)
			require.NoError(t, err)
			msgs := 0
			for {
				_, err = stream.Recv()
				if err != nil {
					break
				}
				msgs++
			}
			if tc.wantCode == codes.OK {
				assert.ErrorIs(t, err, io.EOF)
			} else {
				assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
			}
			assert.Equal(t, tc.wantMsgs, msgs)
			assert.Equal(t, tc.wantCalls, srv.count())
		})
	}
}

// TestStreamGuardFreed: a bulkhead slot held by a stream is freed when
// the stream ends, and when its caller abandons it by cancelling.
func TestStreamGuardFreed(t *testing.T) {
	bh := resilience.NewBulkhead(1)
	srv := &scripted{script: []step{{msgs: 1}, {msgs: 1, block: true}}}
	cc := serve(t, srv, nil, grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor(
		resiliencegrpc.WithClientGuard(resiliencegrpc.PerTarget, func(string) resilience.Guard { return bh }))))
	client := healthpb.NewHealthClient(cc)

	stream, err := client.Watch(context.Background(), checkReq)
	require.NoError(t, err)
	assert.Equal(t, 1, bh.InFlight())
	_, err = stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 0, bh.InFlight(), "freed at the end of the stream")

	ctx, cancel := context.WithCancel(context.Background())
	stream, err = client.Watch(ctx, checkReq)
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	_, err = client.Watch(context.Background(), checkReq)
	assert.ErrorIs(t, err, resilience.ErrBulkheadFull, "the slot is held while the stream lives")
	cancel()
	_, err = stream.Recv()
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, 0, bh.InFlight(), "freed when the caller cancels")
}

func TestClientOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"no codes", "resiliencegrpc: WithCodes: no code given", func() { resiliencegrpc.WithCodes() }},
		{"OK code", "resiliencegrpc: WithCodes: OK is not an error to retry", func() { resiliencegrpc.WithCodes(codes.OK) }},
		{"attempts 0", "resiliencegrpc: WithAttempts: attempts must be between 1 and 10, got 0", func() { resiliencegrpc.WithAttempts(0) }},
		{"attempts 11", "resiliencegrpc: WithAttempts: attempts must be between 1 and 10, got 11", func() { resiliencegrpc.WithAttempts(11) }},
		{"nil backoff", "resiliencegrpc: WithBackoff: backoff is nil", func() { resiliencegrpc.WithBackoff(nil) }},
		{"attempt timeout 0", "resiliencegrpc: WithAttemptTimeout: timeout must be positive, got 0s", func() { resiliencegrpc.WithAttemptTimeout(0) }},
		{"nil guard maker", "resiliencegrpc: WithClientGuard: newGuard is nil", func() { resiliencegrpc.WithClientGuard(resiliencegrpc.PerMethod, nil) }},
		{"bad scope", "resiliencegrpc: WithClientGuard: unknown scope 7", func() {
			resiliencegrpc.WithClientGuard(7, func(string) resilience.Guard { return nil })
		}},
		{"call attempts 0", "resiliencegrpc: CallAttempts: attempts must be between 1 and 10, got 0", func() { resiliencegrpc.CallAttempts(0) }},
		{"call attempts 11", "resiliencegrpc: CallAttempts: attempts must be between 1 and 10, got 11", func() { resiliencegrpc.CallAttempts(11) }},
		{"negative buffer", "resiliencegrpc: WithStreamBuffer: buffer must not be negative, got -1", func() { resiliencegrpc.WithStreamBuffer(-1) }},
		{"nil clock", "resiliencegrpc: WithClock: clock is nil", func() { resiliencegrpc.WithClock(nil) }},
		{"nil option", "resiliencegrpc: option is nil", func() { resiliencegrpc.UnaryClientInterceptor(nil) }},
		{"nil server guard", "resiliencegrpc: WithServerGuards: guard 0 is nil", func() { resiliencegrpc.WithServerGuards(nil) }},
		{"OK refusal", "resiliencegrpc: WithRefusalCode: OK is not a refusal", func() { resiliencegrpc.WithRefusalCode(codes.OK) }},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.PanicsWithValue(t, tc.want, tc.f) })
	}
	// The ends of the ranges are taken (the attempts' in TestCallAttempts).
	assert.NotPanics(t, func() { resiliencegrpc.WithStreamBuffer(0) }, "a stream buffer of 0")
}

var (
	_ = errors.New
	_ metadata.MD
)

// lateClock is a clock whose deadline contexts end only when their parent
// does: a deadline has passed on it (Now is after it) before the context
// knows, as on the real clock when the timer that ends a context runs
// late. advance moves Now on.
type lateClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *lateClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *lateClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *lateClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	ctx, cancel := context.WithCancel(parent)
	return lateDeadline{ctx, d}, cancel
}

// lateDeadline is a context with a deadline that does not end it.
type lateDeadline struct {
	context.Context
	d time.Time
}

func (c lateDeadline) Deadline() (time.Time, bool) { return c.d, true }

// TestUnaryAttemptTimeoutBeforeItsContext: an attempt that fails with
// DEADLINE_EXCEEDED once its own deadline has passed, but before its
// context's timer has ended the context, timed out, and is retried. grpc-go
// reports such a deadline when the server resets the stream first
// ("stream terminated by RST_STREAM with error code: CANCEL"), which made
// TestUnaryAttemptTimeout fail now and then under load. A DEADLINE_EXCEEDED
// before the attempt's deadline, or past the call's own, is not retried.
// Any error past the attempt's deadline is its timeout, as for a Timeout.
func TestUnaryAttemptTimeoutBeforeItsContext(t *testing.T) {
	reset := status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL")
	tests := []struct {
		name      string
		late      time.Duration // how far past the start the first attempt fails
		deadline  time.Duration // of the call; 0: none
		err       error         // of the first attempt; nil: reset
		wantCalls int
		wantCode  codes.Code
	}{
		{name: "at the attempt's deadline: retried", late: 50 * time.Millisecond, wantCalls: 2, wantCode: codes.OK},
		{name: "past it: retried", late: 80 * time.Millisecond, wantCalls: 2, wantCode: codes.OK},
		{name: "before it: the server's own", late: 49 * time.Millisecond, wantCalls: 1, wantCode: codes.DeadlineExceeded},
		{name: "the call's deadline, before the attempt's", late: 40 * time.Millisecond, deadline: 40 * time.Millisecond,
			wantCalls: 1, wantCode: codes.DeadlineExceeded},
		{name: "another error past it: timed out too", late: 80 * time.Millisecond, err: status.Error(codes.InvalidArgument, "bad"),
			wantCalls: 2, wantCode: codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &lateClock{now: time.Now()}
			interceptor := resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithClock(clk),
				resiliencegrpc.WithAttemptTimeout(50*time.Millisecond), resiliencegrpc.WithBackoff(resilience.Constant(0)))
			cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer cc.Close()
			calls := 0
			invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				calls++
				if calls == 1 {
					clk.advance(tc.late)
					if tc.err != nil {
						return tc.err
					}
					return reset
				}
				return nil
			}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				// A deadline far off on the real clock: only the lateClock's
				// time passes it.
				ctx, cancel = context.WithDeadline(ctx, clk.Now().Add(tc.deadline))
				defer cancel()
			}
			err = interceptor(ctx, "/svc/Method", nil, nil, cc, invoker)
			assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
			assert.Equal(t, tc.wantCalls, calls)
		})
	}
}

// TestUnaryClientPanicFreesGuard: an invoker that panics or calls
// runtime.Goexit frees the guard's slot; the panic goes on up as it was,
// and Goexit goes on ending the caller's goroutine, no panic made of it.
func TestUnaryClientPanicFreesGuard(t *testing.T) {
	tests := []struct {
		name    string
		invoker grpc.UnaryInvoker
		want    any // recovered in the caller's goroutine
	}{
		{"panic", func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			panic("invoker broke")
		}, "invoker broke"},
		{"Goexit", func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			runtime.Goexit()
			return nil
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bh := resilience.NewBulkhead(1)
			interceptor := resiliencegrpc.UnaryClientInterceptor(
				resiliencegrpc.WithClientGuard(resiliencegrpc.PerMethod, func(string) resilience.Guard { return bh }))
			cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer cc.Close()
			recovered := make(chan any, 1)
			go func() {
				defer func() { recovered <- recover() }()
				_ = interceptor(context.Background(), "/svc/Method", nil, nil, cc, tc.invoker)
				t.Error("the interceptor returned")
			}()
			assert.Equal(t, tc.want, <-recovered)
			assert.Equal(t, 0, bh.InFlight(), "the slot is free again")
		})
	}
}

// TestUnaryAttemptTimeoutSeenByGuards: an attempt's DEADLINE_EXCEEDED past
// its own deadline, before its context knows, reaches the attempt's guards
// as its timeout (resilience.ErrTimeout), as a timeout that ended the
// context does; one before that deadline is the server's error.
func TestUnaryAttemptTimeoutSeenByGuards(t *testing.T) {
	reset := status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL")
	for _, tc := range []struct {
		late      time.Duration
		wantState resilience.BreakerState
	}{{80 * time.Millisecond, resilience.BreakerOpen}, {20 * time.Millisecond, resilience.BreakerClosed}} {
		t.Run(tc.late.String(), func(t *testing.T) {
			clk := &lateClock{now: time.Now()}
			b := resilience.NewBreaker(resilience.WithBreakerThreshold(1),
				resilience.WithBreakerClassifier(func(err error) resilience.Outcome {
					if errors.Is(err, resilience.ErrTimeout) {
						return resilience.OutcomeFailure
					}
					return resilience.OutcomeSuccess
				}))
			interceptor := resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithClock(clk), resiliencegrpc.WithAttempts(1),
				resiliencegrpc.WithAttemptTimeout(50*time.Millisecond),
				resiliencegrpc.WithClientGuard(resiliencegrpc.PerMethod, func(string) resilience.Guard { return b }))
			cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer cc.Close()
			err = interceptor(context.Background(), "/svc/Method", nil, nil, cc,
				func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
					clk.advance(tc.late)
					return reset
				})
			assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
			assert.Equal(t, tc.wantState, b.State())
		})
	}
}

// TestStreamBuffer: a client stream keeps up to WithStreamBuffer's count
// of the messages it sent, to send them again on a retry; one message more
// commits the stream (gRFC A6), and its failure is not retried.
func TestStreamBuffer(t *testing.T) {
	tests := []struct {
		buffer, sent int
		wantCalls    int
		wantCode     codes.Code
	}{
		{buffer: 2, sent: 2, wantCalls: 2, wantCode: codes.OK},
		{buffer: 1, sent: 2, wantCalls: 1, wantCode: codes.Unavailable},
		{buffer: 0, sent: 1, wantCalls: 1, wantCode: codes.Unavailable},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("buffer %d, %d sent", tc.buffer, tc.sent), func(t *testing.T) {
			var calls atomic.Int32
			// Every method the health service lacks is a stream that reads
			// all the client sends; its first call fails.
			upload := grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
				n := calls.Add(1)
				for got := 0; ; got++ {
					if err := ss.RecvMsg(&healthpb.HealthCheckRequest{}); err == io.EOF {
						if got != tc.sent {
							return status.Errorf(codes.InvalidArgument, "got %d messages, want %d", got, tc.sent)
						}
						break
					} else if err != nil {
						return err
					}
				}
				if n == 1 {
					return status.Error(codes.Unavailable, "try again")
				}
				return ss.SendMsg(&healthpb.HealthCheckResponse{})
			})
			cc := serve(t, &scripted{}, []grpc.ServerOption{upload}, grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor(
				resiliencegrpc.WithStreamBuffer(tc.buffer), resiliencegrpc.WithClock(newRecordingClock()))))
			stream, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true}, "/test.Upload/Send")
			require.NoError(t, err)
			for range tc.sent {
				require.NoError(t, stream.SendMsg(checkReq))
			}
			require.NoError(t, stream.CloseSend())
			err = stream.RecvMsg(&healthpb.HealthCheckResponse{})
			assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
			assert.Equal(t, tc.wantCalls, int(calls.Load()), "calls reaching the server")
		})
	}
}

// TestStreamAbandonedFreesGuard: a stream whose caller ends its context
// without reading it to its end frees its guards.
func TestStreamAbandonedFreesGuard(t *testing.T) {
	bh := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Minute))
	hold := grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		<-ss.Context().Done()
		return ss.Context().Err()
	})
	cc := serve(t, &scripted{}, []grpc.ServerOption{hold}, grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor(
		resiliencegrpc.WithClientGuard(resiliencegrpc.PerMethod, func(string) resilience.Guard { return bh }))))
	ctx, cancel := context.WithCancel(context.Background())
	_, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/test.Hold/Watch")
	require.NoError(t, err)
	require.Equal(t, 1, bh.InFlight())
	cancel()
	// The slot comes back when the stream lets it go; a bound on the wait
	// fails the test rather than hang it.
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	require.NoError(t, bh.Acquire(wait), "the abandoned stream's slot")
	bh.Release()
}

// TestStreamHeaderCommits: a stream whose header has come is committed (a
// header is the server's answer): its failure after that is not retried.
func TestStreamHeaderCommits(t *testing.T) {
	var calls atomic.Int32
	failAfterHeader := grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		if calls.Add(1) > 1 {
			return nil
		}
		if err := ss.SendHeader(metadata.Pairs("x-answer", "1")); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "try again")
	})
	cc := serve(t, &scripted{}, []grpc.ServerOption{failAfterHeader}, grpc.WithStreamInterceptor(
		resiliencegrpc.StreamClientInterceptor(resiliencegrpc.WithClock(newRecordingClock()))))
	stream, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/test.Header/Watch")
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(checkReq))
	require.NoError(t, stream.CloseSend())
	md, err := stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, md.Get("x-answer"))
	err = stream.RecvMsg(&healthpb.HealthCheckResponse{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Equal(t, int32(1), calls.Load(), "calls reaching the server")
}

// TestStreamOpenFails: a stream that no attempt could open returns the
// last attempt's error, and frees its guards.
func TestStreamOpenFails(t *testing.T) {
	bh := resilience.NewBulkhead(1)
	interceptor := resiliencegrpc.StreamClientInterceptor(resiliencegrpc.WithClock(newRecordingClock()),
		resiliencegrpc.WithClientGuard(resiliencegrpc.PerMethod, func(string) resilience.Guard { return bh }))
	cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	opens := 0
	_, err = interceptor(context.Background(), &grpc.StreamDesc{ServerStreams: true}, cc, "/svc/Watch",
		func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			opens++
			return nil, status.Error(codes.Unavailable, "down")
		})
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Equal(t, 3, opens, "attempts")
	assert.Equal(t, 0, bh.InFlight(), "the slot is free again")
}

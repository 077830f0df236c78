package resiliencegrpc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestCallAttempts: a CallAttempts among a call's options sets the
// attempts of that call alone, for unary calls and streams.
func TestCallAttempts(t *testing.T) {
	unavailable := []step{{code: codes.Unavailable}}
	tests := []struct {
		name      string
		opts      []resiliencegrpc.ClientOption
		dialOpts  []grpc.DialOption
		callOpts  []grpc.CallOption
		wantCalls int
	}{
		{name: "the interceptor's attempts", wantCalls: 3},
		{name: "the connection's default",
			dialOpts: []grpc.DialOption{grpc.WithDefaultCallOptions(resiliencegrpc.CallAttempts(2))}, wantCalls: 2},
		{name: "the call's own over the connection's default",
			dialOpts: []grpc.DialOption{grpc.WithDefaultCallOptions(resiliencegrpc.CallAttempts(2))},
			callOpts: []grpc.CallOption{resiliencegrpc.CallAttempts(4)}, wantCalls: 4},
		{name: "one attempt: no retry", callOpts: []grpc.CallOption{resiliencegrpc.CallAttempts(1)}, wantCalls: 1},
		{name: "the interceptor's least", opts: []resiliencegrpc.ClientOption{resiliencegrpc.WithAttempts(1)}, wantCalls: 1},
		// The retry quota would stop a call of ten attempts after nine.
		{name: "the interceptor's most", opts: []resiliencegrpc.ClientOption{resiliencegrpc.WithAttempts(10),
			resiliencegrpc.WithRetryOptions(resilience.WithoutBudget())}, wantCalls: 10},
		{name: "the most for a call", opts: []resiliencegrpc.ClientOption{resiliencegrpc.WithRetryOptions(resilience.WithoutBudget())},
			callOpts: []grpc.CallOption{resiliencegrpc.CallAttempts(10)}, wantCalls: 10},
		{name: "more than the interceptor's",
			opts:     []resiliencegrpc.ClientOption{resiliencegrpc.WithAttempts(2)},
			callOpts: []grpc.CallOption{resiliencegrpc.CallAttempts(5)}, wantCalls: 5},
		{name: "the last one counts",
			callOpts: []grpc.CallOption{resiliencegrpc.CallAttempts(1), resiliencegrpc.CallAttempts(4)}, wantCalls: 4},
		{name: "among other call options",
			callOpts: []grpc.CallOption{grpc.WaitForReady(false), resiliencegrpc.CallAttempts(2), grpc.MaxCallRecvMsgSize(1 << 20)}, wantCalls: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("unary", func(t *testing.T) {
				srv := &scripted{script: unavailable}
				opts := append([]resiliencegrpc.ClientOption{resiliencegrpc.WithClock(newRecordingClock())}, tc.opts...)
				cc := serve(t, srv, nil, append(tc.dialOpts, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(opts...)))...)
				_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq, tc.callOpts...)
				assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
				assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
				assert.Equal(t, tc.wantCalls, srv.count(), "calls reaching the server")
			})
			t.Run("stream", func(t *testing.T) {
				srv := &scripted{script: unavailable}
				opts := append([]resiliencegrpc.ClientOption{resiliencegrpc.WithClock(newRecordingClock())}, tc.opts...)
				cc := serve(t, srv, nil, append(tc.dialOpts, grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor(opts...)))...)
				stream, err := healthpb.NewHealthClient(cc).Watch(context.Background(), checkReq, tc.callOpts...)
				require.NoError(t, err)
				_, err = stream.Recv()
				assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
				assert.Equal(t, tc.wantCalls, srv.count(), "streams reaching the server")
			})
		})
	}
}

// TestCallAttemptsShareTheQuota: the retries of calls with CallAttempts
// draw on the interceptor's retry quota, as every other call's do: once
// they have emptied it (40 tokens, 5 a retry), a call without the option
// is not retried either.
func TestCallAttemptsShareTheQuota(t *testing.T) {
	srv := &scripted{script: []step{{code: codes.Unavailable}}}
	cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
		resiliencegrpc.WithClock(newRecordingClock()))))
	client := healthpb.NewHealthClient(cc)
	for range 2 {
		_, err := client.Check(context.Background(), checkReq, resiliencegrpc.CallAttempts(5)) // 4 retries each
		require.Equal(t, codes.Unavailable, status.Code(err))
	}
	require.Equal(t, 10, srv.count())
	_, err := client.Check(context.Background(), checkReq)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.ErrorIs(t, err, resilience.ErrRetryBudgetExhausted)
	assert.Equal(t, 11, srv.count(), "the quota is empty: one attempt")
}

// TestBuiltinRetryMultiplies measures what the interceptor's doc warns of:
// when a service config turns grpc-go's own retry on, grpc-go retries each
// of the interceptor's attempts, and a call to a server that keeps failing
// makes the product of the two: 3 × 3 = 9 attempts with the defaults here.
// grpc.WithDisableRetry() brings it back to the interceptor's 3.
func TestBuiltinRetryMultiplies(t *testing.T) {
	config := grpc.WithDefaultServiceConfig(`{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}], "retryPolicy": {
		"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
		"retryableStatusCodes": ["UNAVAILABLE"]}}]}`)
	tests := []struct {
		name      string
		dialOpts  []grpc.DialOption
		callOpts  []grpc.CallOption
		wantCalls int
	}{
		{name: "no service config", wantCalls: 3},
		{name: "a retry policy in the service config", dialOpts: []grpc.DialOption{config}, wantCalls: 9},
		{name: "and CallAttempts(1): grpc-go's alone", dialOpts: []grpc.DialOption{config},
			callOpts: []grpc.CallOption{resiliencegrpc.CallAttempts(1)}, wantCalls: 3},
		{name: "the retry policy, with WithDisableRetry", dialOpts: []grpc.DialOption{config, grpc.WithDisableRetry()}, wantCalls: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int64
			count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				attempts.Add(1)
				return h(ctx, req)
			}
			srv := &scripted{script: []step{{code: codes.Unavailable}}}
			dialOpts := append([]grpc.DialOption{grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
				resiliencegrpc.WithClock(newRecordingClock())))}, tc.dialOpts...)
			cc := serve(t, srv, []grpc.ServerOption{grpc.UnaryInterceptor(count)}, dialOpts...)
			_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq, tc.callOpts...)
			assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			assert.Equal(t, int64(tc.wantCalls), attempts.Load(), "attempts reaching the server")
		})
	}
}

package resiliencegrpc_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// recoverer turns a handler's panic into INTERNAL, as production servers do
// with a recovery interceptor outside the others.
func recoverer(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "panic: %v", r)
		}
	}()
	return h(ctx, req)
}

func TestServerRefusals(t *testing.T) {
	mock := clock.NewMock()
	open := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerCoolDown(2*time.Second))
	open.Trip()
	isolated := resilience.NewBreaker(resilience.WithClock(mock))
	isolated.Isolate()
	full := resilience.NewBulkhead(1)
	require.NoError(t, full.Acquire(context.Background()))
	defer full.Release()
	limited := resilience.NewRateLimiter(1, 1, resilience.WithClock(mock))
	require.True(t, limited.Allow())
	adaptive := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(1, 1), resilience.WithAdaptiveInitial(1))
	held, err := adaptive.Enter(resilience.WithPriority(context.Background(), resilience.PriorityCritical))
	require.NoError(t, err)
	defer held(nil)
	tests := []struct {
		name         string
		opts         []resiliencegrpc.ServerOption
		wantCode     codes.Code
		wantPushback string // "" for none
	}{
		{name: "open breaker: RESOURCE_EXHAUSTED with its hint as pushback",
			opts:     []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(open)},
			wantCode: codes.ResourceExhausted, wantPushback: pushbackOf(open)},
		{name: "UNAVAILABLE when configured",
			opts:     []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(open), resiliencegrpc.WithRefusalCode(codes.Unavailable)},
			wantCode: codes.Unavailable, wantPushback: pushbackOf(open)},
		// The largest hint, an isolated breaker's, gives the largest
		// number of milliseconds a time.Duration holds: never a negative
		// pushback (gRFC A6: "do not retry"), and never one that grpc-go,
		// which multiplies it by time.Millisecond, overflows.
		{name: "isolated breaker: the largest pushback",
			opts:     []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(isolated)},
			wantCode: codes.ResourceExhausted, wantPushback: "9223372036854"},
		{name: "full bulkhead: no hint, no pushback",
			opts:     []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(full)},
			wantCode: codes.ResourceExhausted},
		{name: "rate limiter: its hint as pushback",
			opts:     []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(limited)},
			wantCode: codes.ResourceExhausted, wantPushback: "1000"},
		{name: "adaptive limiter: its hint, a millisecond at least, as pushback",
			opts:     []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(adaptive)},
			wantCode: codes.ResourceExhausted, wantPushback: "1"},
		{name: "admitted", opts: []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(resilience.NewBulkhead(4))},
			wantCode: codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{script: []step{{}}}
			cc := serve(t, srv, []grpc.ServerOption{grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(tc.opts...))})
			var trailer metadata.MD
			_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq, grpc.Trailer(&trailer))
			assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
			if tc.wantPushback == "" {
				assert.Empty(t, trailer.Get(resiliencegrpc.PushbackKey))
			} else {
				assert.Equal(t, []string{tc.wantPushback}, trailer.Get(resiliencegrpc.PushbackKey))
			}
			if tc.wantCode != codes.OK {
				assert.Equal(t, 0, srv.count(), "a refused call never reaches the handler")
			}
		})
	}
}

// pushbackOf is the pushback a server sends for b's refusal: its hint
// rounded up to whole milliseconds.
func pushbackOf(b *resilience.Breaker) string {
	_, err := b.Enter(context.Background())
	d, _ := resilience.RetryAfter(err)
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// TestServerPushbackHonoured: this package's client waits exactly the
// pushback a refusing server sends, and so does grpc-go's built-in retry.
func TestServerPushbackHonoured(t *testing.T) {
	t.Run("this package's client", func(t *testing.T) {
		mock := clock.NewMock()
		b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerCoolDown(300*time.Millisecond))
		b.Trip()
		srv := &scripted{script: []step{{}}}
		clk := newRecordingClock()
		cc := serve(t, srv,
			[]grpc.ServerOption{grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(b)))},
			grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithClock(clk),
				resiliencegrpc.WithCodes(codes.ResourceExhausted), resiliencegrpc.WithAttempts(2))))
		_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		want, _ := strconv.Atoi(pushbackOf(b))
		assert.Equal(t, []time.Duration{time.Duration(want) * time.Millisecond}, clk.recorded())
	})
	t.Run("the largest pushback: this package's client waits", func(t *testing.T) {
		b := resilience.NewBreaker()
		b.Isolate()
		clk := newRecordingClock()
		cc := serve(t, &scripted{script: []step{{}}},
			[]grpc.ServerOption{grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(b)))},
			grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithClock(clk),
				resiliencegrpc.WithCodes(codes.ResourceExhausted), resiliencegrpc.WithAttempts(2))))
		_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Equal(t, []time.Duration{9223372036854 * time.Millisecond}, clk.recorded(), "a wait, not a refusal to retry")
	})
	t.Run("the largest pushback: grpc-go's built-in retry waits", func(t *testing.T) {
		// grpc-go reads a negative pushback as "do not retry" and would
		// answer RESOURCE_EXHAUSTED at once, and one that overflows when
		// made a Duration as "retry at once" and would try three times.
		// The largest pushback makes it wait until the call's deadline.
		b := resilience.NewBreaker()
		b.Isolate()
		config := `{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}], "retryPolicy": {
			"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
			"retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`
		var attempts atomic.Int64
		count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			attempts.Add(1)
			return h(ctx, req)
		}
		cc := serve(t, &scripted{script: []step{{}}},
			[]grpc.ServerOption{grpc.ChainUnaryInterceptor(count, resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(b)))},
			grpc.WithDefaultServiceConfig(config))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := healthpb.NewHealthClient(cc).Check(ctx, checkReq)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
		assert.Equal(t, int64(1), attempts.Load())
	})
	t.Run("grpc-go's built-in retry", func(t *testing.T) {
		// Refuses the first call with a pushback of 30ms, then admits.
		b := resilience.NewBreaker(resilience.WithBreakerCoolDown(30 * time.Millisecond))
		trippedBy := time.Now() // the breaker half-opens 30ms after this, not before
		b.Trip()
		srv := &scripted{script: []step{{}}}
		config := `{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}], "retryPolicy": {
			"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
			"retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`
		var refusedAt time.Time
		first := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if refusedAt.IsZero() {
				refusedAt = time.Now()
			}
			return h(ctx, req)
		}
		cc := serve(t, srv,
			[]grpc.ServerOption{grpc.ChainUnaryInterceptor(first, resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(b)))},
			grpc.WithDefaultServiceConfig(config))
		_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq)
		require.NoError(t, err, "the built-in retry waited for the breaker")
		require.Equal(t, 1, srv.count())
		assert.False(t, refusedAt.IsZero(), "the first attempt was refused")
		assert.GreaterOrEqual(t, srv.times[0].Sub(trippedBy), 30*time.Millisecond, "it waited for the pushback: the breaker's cool-down")
	})
}

// TestServerPanicFreesGuard: a handler's panic frees the bulkhead slot,
// and goes on up to the recovery interceptor outside.
func TestServerPanicFreesGuard(t *testing.T) {
	bh := resilience.NewBulkhead(1)
	srv := &scripted{script: []step{{panic: true}, {}}}
	cc := serve(t, srv, []grpc.ServerOption{grpc.ChainUnaryInterceptor(recoverer,
		resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(bh)))})
	client := healthpb.NewHealthClient(cc)
	_, err := client.Check(context.Background(), checkReq)
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Contains(t, fmt.Sprint(err), "handler broke")
	assert.Equal(t, 0, bh.InFlight(), "the slot is free again")
	_, err = client.Check(context.Background(), checkReq)
	assert.NoError(t, err)
}

func TestServerStreamGuard(t *testing.T) {
	b := resilience.NewBreaker(resilience.WithBreakerThreshold(1))
	srv := &scripted{script: []step{{msgs: 1, code: codes.Internal}, {msgs: 1}}}
	cc := serve(t, srv, []grpc.ServerOption{grpc.StreamInterceptor(resiliencegrpc.StreamServerInterceptor(resiliencegrpc.WithServerGuards(b)))})
	client := healthpb.NewHealthClient(cc)
	stream, err := client.Watch(context.Background(), checkReq)
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Equal(t, resilience.BreakerOpen, b.State(), "the stream's failure reached the breaker")
	var trailer metadata.MD
	stream, err = client.Watch(context.Background(), checkReq, grpc.Trailer(&trailer))
	require.NoError(t, err)
	_, err = stream.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.NotEmpty(t, stream.Trailer().Get(resiliencegrpc.PushbackKey))
}

// TestServerCallerGoneWhileWaiting: a call whose caller went away while it
// waited for a guard ends with the caller's status (CANCELLED), not the
// refusal's, and the handler never runs.
func TestServerCallerGoneWhileWaiting(t *testing.T) {
	bh := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Hour))
	require.True(t, bh.TryAcquire())
	defer bh.Release()
	interceptor := resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(bh))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := interceptor(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/svc/Method"}, func(context.Context, any) (any, error) {
		t.Error("the handler ran")
		return nil, nil
	})
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
}

// TestServerCallerLeft: when the client hangs up before the answer, the
// guards are told an error matching context.Canceled whatever the handler
// then returns (grpc-go's CANCELED, OK, INTERNAL), so that a breaker
// counts the call neither way: a call whose caller left is not a sample.
func TestServerCallerLeft(t *testing.T) {
	answers := []struct {
		name string
		step step
	}{
		{"CANCELED", step{block: true}},
		{"OK", step{block: true, answer: true}},
		{"INTERNAL", step{block: true, answer: true, code: codes.Internal}},
	}
	for _, kind := range []string{"unary", "stream"} {
		for _, a := range answers {
			t.Run(kind+"/"+a.name, func(t *testing.T) {
				br := resilience.NewBreaker(resilience.WithBreakerThreshold(1), resilience.WithBreakerFailureRate(0.5, 1, 10))
				told := &outcomeGuard{told: make(chan error, 1)} // told after the breaker
				guards := resiliencegrpc.WithServerGuards(told, br)
				arrived := make(chan struct{}, 1)
				srv := &scripted{script: []step{a.step}, arrived: arrived}
				cc := serve(t, srv, []grpc.ServerOption{
					grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(guards)),
					grpc.StreamInterceptor(resiliencegrpc.StreamServerInterceptor(guards))})
				client := healthpb.NewHealthClient(cc)
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					if kind == "unary" {
						_, err := client.Check(ctx, checkReq)
						errc <- err
						return
					}
					stream, err := client.Watch(ctx, checkReq)
					if err == nil {
						_, err = stream.Recv()
					}
					errc <- err
				}()
				<-arrived
				cancel()
				assert.Equal(t, codes.Canceled, status.Code(<-errc), "the client's error")

				outcome := <-told.told
				assert.ErrorIs(t, outcome, context.Canceled, "the outcome told to the guards")
				assert.Equal(t, codes.Canceled, status.Code(outcome), "the outcome's status")
				m := br.Snapshot()
				assert.Equal(t, resilience.BreakerClosed, m.State)
				assert.Zero(t, m.WindowCalls, "outcomes the breaker counted")
			})
		}
	}
}

// TestServerKeyedGuard: a resilience.Keyed bulkhead per tenant, keyed by
// the incoming metadata with KeyFromMetadata, in front of a real gRPC server: a
// tenant whose bulkhead is full is refused, another is served.
func TestServerKeyedGuard(t *testing.T) {
	tenants := resilience.NewKeyed(resiliencegrpc.KeyFromMetadata("x-tenant"),
		func(string) *resilience.Bulkhead { return resilience.NewBulkhead(1) })
	done, err := tenants.EnterKey(context.Background(), "noisy") // the noisy tenant's one slot is taken
	require.NoError(t, err)
	defer done(nil)
	srv := &scripted{script: []step{{}}}
	cc := serve(t, srv, []grpc.ServerOption{grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(tenants)))})
	for _, tc := range []struct {
		tenant string
		want   codes.Code
	}{{"noisy", codes.ResourceExhausted}, {"quiet", codes.OK}} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", tc.tenant)
		_, err := healthpb.NewHealthClient(cc).Check(ctx, checkReq)
		assert.Equal(t, tc.want, status.Code(err), "tenant %q: %v", tc.tenant, err)
	}
	assert.Equal(t, 2, tenants.Len())
}

package resiliencegrpc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// cycling is a health service that answers call n (from 0) with
// codes[n % len(codes)].
type cycling struct {
	healthpb.UnimplementedHealthServer
	codes []codes.Code
	calls atomic.Int64
}

func (s *cycling) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	c := s.codes[int(s.calls.Add(1)-1)%len(s.codes)]
	if c != codes.OK {
		return nil, status.Error(c, "cycling "+c.String())
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// TestClientAdaptiveThrottler: an AdaptiveThrottler as the client
// interceptor's guard, told what the server accepted by ThrottleOutcome, starts
// refusing calls locally against a server that refuses three calls in
// four with RESOURCE_EXHAUSTED or UNAVAILABLE, and sends it fewer; its
// refusals match ErrThrottled, carry a retry hint, and are not retried.
// Against a server that answers, if only with INTERNAL, it refuses
// nothing.
func TestClientAdaptiveThrottler(t *testing.T) {
	tests := []struct {
		name    string
		codes   []codes.Code
		refuses bool
	}{
		{"RESOURCE_EXHAUSTED three times in four", []codes.Code{codes.ResourceExhausted, codes.ResourceExhausted, codes.ResourceExhausted, codes.OK}, true},
		{"UNAVAILABLE three times in four", []codes.Code{codes.Unavailable, codes.OK, codes.Unavailable, codes.Unavailable}, true},
		{"INTERNAL always", []codes.Code{codes.Internal}, false},
		{"NOT_FOUND and OK", []codes.Code{codes.NotFound, codes.OK}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &cycling{codes: tc.codes}
			th := resilience.NewAdaptiveThrottler(
				resilience.WithThrottleClassifier(resiliencegrpc.ThrottleOutcome),
				resilience.WithRand(rand.New(rand.NewPCG(1, 2))),
				resilience.WithClock(clock.NewMock())) // the window never slides
			cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
				resiliencegrpc.WithClock(newRecordingClock()), // retries at once
				resiliencegrpc.WithRetryOptions(resilience.WithoutBudget()),
				resiliencegrpc.WithClientGuard(resiliencegrpc.PerTarget, func(string) resilience.Guard { return th }))))
			client := healthpb.NewHealthClient(cc)
			const calls = 200
			refused := 0
			for range calls {
				_, err := client.Check(context.Background(), checkReq)
				if !errors.Is(err, resilience.ErrThrottled) {
					continue
				}
				d, ok := resilience.RetryAfter(err)
				assert.True(t, ok && d > 0, "RetryAfter(%v) = %v, %t, want a hint", err, d, ok)
				assert.NotErrorIs(t, err, resilience.ErrRetriesExhausted, "a local refusal is not retried")
				refused++
			}
			if !tc.refuses {
				assert.Zero(t, refused, "refusals")
				assert.EqualValues(t, calls, srv.calls.Load(), "calls the server saw")
				return
			}
			t.Logf("%d calls, %d refused locally, %d attempts reached the server", calls, refused, srv.calls.Load())
			assert.Greater(t, refused, calls/2, "refused locally")
			assert.Less(t, srv.calls.Load(), int64(calls), "attempts the server saw, retries included")
		})
	}
}

// TestThrottleOutcome: what the client interceptors tell their guards, read as
// the AdaptiveThrottler's outcomes: accepted (true) or not.
func TestThrottleOutcome(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"OK", nil, true},
		{"INTERNAL", status.Error(codes.Internal, "x"), true},
		{"NOT_FOUND", status.Error(codes.NotFound, "x"), true},
		{"UNKNOWN", errors.New("not a status"), true},
		{"RESOURCE_EXHAUSTED", status.Error(codes.ResourceExhausted, "x"), false},
		{"UNAVAILABLE", status.Error(codes.Unavailable, "x"), false},
		{"DEADLINE_EXCEEDED", status.Error(codes.DeadlineExceeded, "x"), false},
		{"wrapped", fmt.Errorf("attempt: %w", status.Error(codes.ResourceExhausted, "x")), false},
		{"an attempt's timeout", resilience.ErrTimeout, false},
		{"context deadline", context.DeadlineExceeded, false},
		// A guard's refusal, as the client's guards give it (UNAVAILABLE)
		// or bare, as a throttle of Compose's sees it: any guard's.
		{"a bulkhead's refusal", resilience.ErrBulkheadFull, false},
		{"a rate limiter's refusal", fmt.Errorf("users: %w", resilience.ErrRateLimited), false},
		{"an adaptive limiter's refusal", resilience.ErrLimitExceeded, false},
		{"a breaker's refusal", resilience.ErrBreakerOpen, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := resilience.OutcomeFailure
			if tc.want {
				want = resilience.OutcomeSuccess
			}
			assert.Equal(t, want, resiliencegrpc.ThrottleOutcome(tc.err), "ThrottleOutcome(%v)", tc.err)
		})
	}
}

// TestClientCancelledCountsForNothing: a call its caller cancels is told
// to the guards as context.Canceled, so that a throttle counts it for
// nothing and a breaker neither as a failure nor as a success.
func TestClientCancelledCountsForNothing(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := &scripted{script: []step{{block: true}}, arrived: arrived}
	g := &outcomeGuard{}
	cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
		resiliencegrpc.WithClientGuard(resiliencegrpc.PerTarget, func(string) resilience.Guard { return g }))))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := healthpb.NewHealthClient(cc).Check(ctx, checkReq)
		errc <- err
	}()
	<-arrived
	cancel()
	err := <-errc
	assert.Equal(t, codes.Canceled, status.Code(err))
	require.Len(t, g.outcomes, 1)
	assert.ErrorIs(t, g.outcomes[0], context.Canceled, "the outcome told to the guard")
	assert.Equal(t, codes.Canceled, status.Code(g.outcomes[0]), "the outcome keeps its status")
	assert.Equal(t, err.Error(), g.outcomes[0].Error(), "the outcome's message")
}

// outcomeGuard admits every call and records the outcomes it is told, in
// outcomes or, if told is not nil, on told alone.
type outcomeGuard struct {
	outcomes []error
	told     chan error
}

func (g *outcomeGuard) Enter(context.Context) (func(error), error) {
	return func(err error) {
		if g.told != nil {
			g.told <- err
			return
		}
		g.outcomes = append(g.outcomes, err)
	}, nil
}

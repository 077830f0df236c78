package resiliencegrpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// priorities is a health service that records the priority each call's
// context carries in its handler.
type priorities struct {
	healthpb.UnimplementedHealthServer
	mu   sync.Mutex
	seen []resilience.Priority
}

func (s *priorities) record(ctx context.Context) {
	s.mu.Lock()
	s.seen = append(s.seen, resilience.PriorityFrom(ctx))
	s.mu.Unlock()
}

func (s *priorities) last() resilience.Priority {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

func (s *priorities) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.record(ctx)
	return &healthpb.HealthCheckResponse{}, nil
}

func (s *priorities) Watch(_ *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	s.record(stream.Context())
	return nil
}

// priorityGuard admits every call and records the priority of the
// context it is asked with.
type priorityGuard struct {
	mu   sync.Mutex
	seen []resilience.Priority
}

func (g *priorityGuard) Enter(ctx context.Context) (func(error), error) {
	g.mu.Lock()
	g.seen = append(g.seen, resilience.PriorityFrom(ctx))
	g.mu.Unlock()
	return func(error) {}, nil
}

func (g *priorityGuard) last() resilience.Priority {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[len(g.seen)-1]
}

// TestServerPriorityFromMetadata: with WithPriorityMetadata, the server
// interceptors give a call the priority its metadata entry names, by name
// or number, to the guards and to the handler, for unary calls and
// streams; a call without one, or with an unknown value, is normal.
func TestServerPriorityFromMetadata(t *testing.T) {
	tests := []struct {
		name  string
		value []string // nil: no entry
		want  resilience.Priority
	}{
		{"no entry", nil, resilience.PriorityNormal},
		{"critical", []string{"critical"}, resilience.PriorityCritical},
		{"any case", []string{"Sheddable"}, resilience.PrioritySheddable},
		{"number", []string{"-1"}, resilience.PriorityLow},
		{"first value counts", []string{"high", "low"}, resilience.PriorityHigh},
		{"unknown", []string{"urgent"}, resilience.PriorityNormal},
		{"number out of range", []string{"3"}, resilience.PriorityNormal},
	}
	srv := &priorities{}
	g := &priorityGuard{}
	opts := []resiliencegrpc.ServerOption{resiliencegrpc.WithServerGuards(g), resiliencegrpc.WithPriorityMetadata("X-Priority")}
	cc := serve(t, srv, []grpc.ServerOption{
		grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(opts...)),
		grpc.StreamInterceptor(resiliencegrpc.StreamServerInterceptor(opts...)),
	})
	client := healthpb.NewHealthClient(cc)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			for _, v := range tc.value {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-priority", v)
			}
			_, err := client.Check(ctx, checkReq)
			require.NoError(t, err)
			assert.Equal(t, tc.want, g.last(), "unary: the guard's")
			assert.Equal(t, tc.want, srv.last(), "unary: the handler's")

			stream, err := client.Watch(ctx, checkReq)
			require.NoError(t, err)
			_, err = stream.Recv()
			require.Error(t, err) // io.EOF: the handler returned
			assert.Equal(t, tc.want, g.last(), "stream: the guard's")
			assert.Equal(t, tc.want, srv.last(), "stream: the handler's")
		})
	}
}

// TestServerPriorityDefault: without WithPriorityMetadata the metadata is
// not read.
func TestServerPriorityDefault(t *testing.T) {
	srv := &priorities{}
	cc := serve(t, srv, []grpc.ServerOption{grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor())})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-priority", "critical")
	_, err := healthpb.NewHealthClient(cc).Check(ctx, checkReq)
	require.NoError(t, err)
	assert.Equal(t, resilience.PriorityNormal, srv.last())
}

func TestWithPriorityMetadataRefused(t *testing.T) {
	assert.PanicsWithValue(t, "resiliencegrpc: WithPriorityMetadata: name is empty", func() { resiliencegrpc.WithPriorityMetadata("") })
}

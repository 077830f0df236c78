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

// TestPriorityPropagates: a client with WithPriorityMetadata sends the
// priority of each call's context, once, beside the call's other metadata,
// unless it is normal or the call's metadata has the entry already, and a
// server with the same option gives it to the call, for unary calls and
// streams.
func TestPriorityPropagates(t *testing.T) {
	tests := []struct {
		name  string
		ctx   context.Context
		entry string // the call's own outgoing entry, if not ""
		other bool   // the call has outgoing metadata of its own
		want  resilience.Priority
		sent  bool // the entry reaches the server, once
	}{
		{"no priority", context.Background(), "", false, resilience.PriorityNormal, false},
		{"normal", resilience.WithPriority(context.Background(), resilience.PriorityNormal), "", false, resilience.PriorityNormal, false},
		{"low", resilience.WithPriority(context.Background(), resilience.PriorityLow), "", false, resilience.PriorityLow, true},
		{"critical", resilience.WithPriority(context.Background(), resilience.PriorityCritical), "", false, resilience.PriorityCritical, true},
		{"beside other metadata", resilience.WithPriority(context.Background(), resilience.PriorityLow), "", true, resilience.PriorityLow, true},
		{"the call's own entry wins", resilience.WithPriority(context.Background(), resilience.PriorityLow), "high", false, resilience.PriorityHigh, true},
	}
	srv := &priorities{}
	g := &priorityGuard{}
	prio := resiliencegrpc.WithPriorityMetadata("X-Priority")
	sent := make(chan int, 1)
	peek := func(ctx context.Context) { sent <- len(metadata.ValueFromIncomingContext(ctx, "x-priority")) }
	cc := serve(t, srv, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			peek(ctx)
			return h(ctx, req)
		}, resiliencegrpc.UnaryServerInterceptor(resiliencegrpc.WithServerGuards(g), prio)),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			peek(ss.Context())
			return h(srv, ss)
		}, resiliencegrpc.StreamServerInterceptor(resiliencegrpc.WithServerGuards(g), prio)),
	}, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(prio)),
		grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor(prio)))
	client := healthpb.NewHealthClient(cc)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if tc.entry != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-priority", tc.entry)
			}
			if tc.other {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-other", "1")
			}
			entries := 0
			if tc.sent {
				entries = 1
			}
			_, err := client.Check(ctx, checkReq)
			require.NoError(t, err)
			assert.Equal(t, entries, <-sent, "unary: the entries sent")
			assert.Equal(t, tc.want, g.last(), "unary: the guard's")
			assert.Equal(t, tc.want, srv.last(), "unary: the handler's")

			stream, err := client.Watch(ctx, checkReq)
			require.NoError(t, err)
			_, err = stream.Recv()
			require.Error(t, err) // io.EOF: the handler returned
			assert.Equal(t, entries, <-sent, "stream: the entries sent")
			assert.Equal(t, tc.want, g.last(), "stream: the guard's")
			assert.Equal(t, tc.want, srv.last(), "stream: the handler's")
		})
	}
}

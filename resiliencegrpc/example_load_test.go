package resiliencegrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// priorityHealth is a health service that prints the priority of each
// call.
type priorityHealth struct {
	healthpb.UnimplementedHealthServer
}

func (priorityHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	fmt.Println("priority:", resilience.PriorityFrom(ctx))
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// A server whose adaptive limiter sheds the lowest priorities first, each
// call's priority taken from its x-priority metadata entry.
func ExampleWithPriorityMetadata() {
	limiter := resilience.NewAdaptiveLimiter()
	srv := grpc.NewServer(grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(
		resiliencegrpc.WithServerGuards(limiter), resiliencegrpc.WithPriorityMetadata("x-priority"))))
	healthpb.RegisterHealthServer(srv, priorityHealth{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	for _, p := range []string{"critical", "-2", "urgent"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-priority", p)
		_, _ = health.Check(ctx, &healthpb.HealthCheckRequest{})
	}
	// Output:
	// priority: critical
	// priority: sheddable
	// priority: normal
}

// refusing is a health service that refuses every call, as an overloaded
// server does.
type refusing struct {
	healthpb.UnimplementedHealthServer
}

func (refusing) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(codes.ResourceExhausted, "overloaded")
}

// A client whose adaptive throttler, told by ThrottleOutcome what the server
// took, soon refuses calls itself rather than send them to a server that
// refuses them all.
func ExampleThrottleOutcome() {
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, refusing{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	throttle := resilience.NewAdaptiveThrottler(resilience.WithThrottleClassifier(resiliencegrpc.ThrottleOutcome))
	conn, _ := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithClientGuard(resiliencegrpc.PerTarget,
			func(string) resilience.Guard { return throttle }))))
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	throttled := 0
	for range 100 {
		_, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if errors.Is(err, resilience.ErrThrottled) {
			throttled++
		}
	}
	fmt.Println("some refused locally:", throttled > 0)
	// Output: some refused locally: true
}

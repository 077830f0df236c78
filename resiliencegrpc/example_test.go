package resiliencegrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// flakyHealth is a health service that is unavailable for its first
// calls.
type flakyHealth struct {
	healthpb.UnimplementedHealthServer
	failures atomic.Int32
}

func (h *flakyHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.failures.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "warming up")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// A health service that is unavailable for its first two calls, behind a
// client that retries (gRFC A6 style) and a server that sheds load with a
// bulkhead.
func Example() {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := grpc.NewServer(grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(
		resiliencegrpc.WithServerGuards(resilience.NewBulkhead(100)))))
	flaky := &flakyHealth{}
	flaky.failures.Store(2)
	healthpb.RegisterHealthServer(srv, flaky)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
			resiliencegrpc.WithBackoff(resilience.Constant(10*time.Millisecond)),
			resiliencegrpc.WithRetryOptions(resilience.WithObserver(resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
				if e.Kind == resilience.EventRetry {
					fmt.Printf("attempt %d: %v; retrying in %v\n", e.Attempt, e.Err, e.Wait)
				}
			}))),
		)))
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output:
	// attempt 1: rpc error: code = Unavailable desc = warming up; retrying in 10ms
	// attempt 2: rpc error: code = Unavailable desc = warming up; retrying in 10ms
	// SERVING <nil>
}

// A client whose calls are retried by the interceptors alone, and one call
// that must not be repeated.
func Example_client() {
	conn, err := grpc.NewClient("dns:///users.internal:8443",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(), // the interceptors retry: grpc-go's retry would multiply their attempts
		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor()),
		grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor()),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	resp, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}, resiliencegrpc.CallAttempts(1)) // no retry
	fmt.Println(resp.GetStatus(), err)
}

// A server that gives each tenant, named by the x-tenant metadata entry,
// a burst of 2 calls, then 1 a minute.
func ExampleKeyFromMetadata() {
	perTenant := resilience.NewKeyedRateLimiter[string](1.0/60, 2)
	srv := grpc.NewServer(grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(
		resiliencegrpc.WithServerGuards(perTenant.Guard(resiliencegrpc.KeyFromMetadata("x-tenant"))))))
	healthpb.RegisterHealthServer(srv, &flakyHealth{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	for _, tenant := range []string{"acme", "acme", "acme", "globex"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", tenant)
		_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		fmt.Println(tenant, status.Code(err))
	}
	// Output:
	// acme OK
	// acme OK
	// acme ResourceExhausted
	// globex OK
}

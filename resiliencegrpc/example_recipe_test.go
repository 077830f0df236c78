package resiliencegrpc_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/faf87a20/resilience/resiliencegrpc"
)

// Example_client is the README's recipe: a gRPC client whose calls are
// retried by the interceptor, against a server that is warming up.
func Example_client() {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := grpc.NewServer()
	warming := &flakyHealth{}
	warming.failures.Store(2)
	healthpb.RegisterHealthServer(srv, warming)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	addr, ctx := lis.Addr().String(), context.Background()

	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The interceptor retries (3 attempts, pushback honoured): grpc-go's
		// own retry would multiply the attempts.
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output: SERVING <nil>
}

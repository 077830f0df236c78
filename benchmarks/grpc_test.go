package benchmarks

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// flakyHealth fails its first `failures` calls with UNAVAILABLE and a
// pushback, then answers; it records when each call arrived.
type flakyHealth struct {
	healthpb.UnimplementedHealthServer
	failures int
	pushback string
	mu       sync.Mutex
	arrivals []time.Time
}

func (h *flakyHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.mu.Lock()
	h.arrivals = append(h.arrivals, time.Now())
	n := len(h.arrivals)
	h.mu.Unlock()
	if n <= h.failures {
		if h.pushback != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(resiliencegrpc.PushbackKey, h.pushback))
		}
		return nil, status.Error(codes.Unavailable, "unavailable")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// grpcClients are the client setups compared: none, this library's
// interceptor, grpc-go's built-in retry (a service config), and
// go-grpc-middleware's retry interceptor, each retrying UNAVAILABLE up to
// 3 attempts with a 10ms wait.
var grpcClients = []struct {
	name string
	opts []grpc.DialOption
}{
	{"direct", nil},
	{"resilience", []grpc.DialOption{grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(
		resiliencegrpc.WithBackoff(resilience.Constant(10 * time.Millisecond))))}},
	{"grpc-builtin", []grpc.DialOption{grpc.WithDefaultServiceConfig(`{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}],
		"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s", "backoffMultiplier": 1,
		"retryableStatusCodes": ["UNAVAILABLE"]}}]}`)}},
	{"go-grpc-middleware", []grpc.DialOption{grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(
		grpcretry.WithMax(3), grpcretry.WithCodes(codes.Unavailable),
		grpcretry.WithBackoff(grpcretry.BackoffLinear(10*time.Millisecond))))}},
}

func serveHealth(tb testing.TB, srv healthpb.HealthServer, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cc.Close()
		s.Stop()
	})
	return cc
}

// BenchmarkGRPCUnary is the cost of one successful unary call on loopback
// through each client setup.
func BenchmarkGRPCUnary(b *testing.B) {
	for _, c := range grpcClients {
		b.Run(c.name, func(b *testing.B) {
			cc := serveHealth(b, &flakyHealth{}, c.opts...)
			client := healthpb.NewHealthClient(cc)
			ctx := context.Background()
			req := &healthpb.HealthCheckRequest{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGRPCFlakyServer runs the same flaky server (UNAVAILABLE twice, each
// with a pushback of 100ms, then an answer) through each client and logs
// what each did: attempts, whether it waited as the server asked, and how
// long the call took. Run with -v to see the table.
func TestGRPCFlakyServer(t *testing.T) {
	var rows []string
	for _, c := range grpcClients[1:] {
		srv := &flakyHealth{failures: 2, pushback: "100"}
		cc := serveHealth(t, srv, c.opts...)
		start := time.Now()
		_, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
		took := time.Since(start)
		srv.mu.Lock()
		arrivals := srv.arrivals
		srv.mu.Unlock()
		honoured := len(arrivals) > 1
		for i := 1; i < len(arrivals); i++ {
			if arrivals[i].Sub(arrivals[i-1]) < 100*time.Millisecond {
				honoured = false
			}
		}
		rows = append(rows, strings.Join([]string{c.name, itoa(len(arrivals)), yes(honoured), took.Round(time.Millisecond).String(), status.Code(err).String()}, " | "))
		if c.name == "resilience" && (err != nil || !honoured || len(arrivals) != 3) {
			t.Errorf("resilience: err %v, %d attempts, pushback honoured %v; want success in 3 attempts, honouring it", err, len(arrivals), honoured)
		}
	}
	t.Logf("\n| client | attempts | pushback honoured | time | outcome |\n| --- | ---: | --- | ---: | --- |\n| %s |", strings.Join(rows, " |\n| "))
}

func itoa(n int) string { return strconv.Itoa(n) }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

package resiliencegrpc_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is how the test server answers one call: an error code (OK for a
// success), a pushback trailer, messages to stream first, or blocking until
// the call's context ends (then answering with the context's error, or,
// with answer, with code).
type step struct {
	code     codes.Code
	pushback string
	msgs     int
	block    bool
	answer   bool
	panic    bool
}

// scripted is a health service whose calls follow a script: call n (from
// 1) follows script[min(n, len)-1].
type scripted struct {
	healthpb.UnimplementedHealthServer
	mu      sync.Mutex
	script  []step
	calls   int
	times   []time.Time     // when each call arrived
	arrived chan struct{}   // one send a call, if not nil
	ctxs    []time.Duration // each call's time to its deadline, 0 if none
}

func (s *scripted) next(ctx context.Context) step {
	s.mu.Lock()
	s.calls++
	st := s.script[min(s.calls, len(s.script))-1]
	s.times = append(s.times, time.Now())
	var left time.Duration
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	s.ctxs = append(s.ctxs, left)
	arrived := s.arrived
	s.mu.Unlock()
	if arrived != nil {
		arrived <- struct{}{}
	}
	return st
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (st step) end(ctx context.Context, setTrailer func(metadata.MD)) error {
	if st.panic {
		panic("handler broke")
	}
	if st.pushback != "" {
		setTrailer(metadata.Pairs("grpc-retry-pushback-ms", st.pushback))
	}
	if st.block {
		<-ctx.Done()
		if !st.answer {
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if st.code != codes.OK {
		return status.Error(st.code, "scripted "+st.code.String())
	}
	return nil
}

func (s *scripted) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st := s.next(ctx)
	if err := st.end(ctx, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) }); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (s *scripted) Watch(_ *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	st := s.next(stream.Context())
	for range st.msgs {
		if err := stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
	}
	return st.end(stream.Context(), stream.SetTrailer)
}

// serve starts srv on a loopback listener and returns a client connection
// to it with the given dial options; both end with the test.
func serve(t *testing.T, srv healthpb.HealthServer, serverOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, lis, srv, serverOpts, dialOpts...)
}

// serveOn is serve on the listener lis.
func serveOn(t *testing.T, lis net.Listener, srv healthpb.HealthServer, serverOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	s := grpc.NewServer(serverOpts...)
	healthpb.RegisterHealthServer(s, srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	cc, err := grpc.NewClient(lis.Addr().String(), append(dialOpts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		s.Stop()
		<-done
	})
	return cc
}

// recordingClock is a clock on which every wait ends at once, and which
// records how long each was asked to be: the retry's waits, exactly.
type recordingClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newRecordingClock() *recordingClock { return &recordingClock{now: time.Now()} }

func (c *recordingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *recordingClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	c.mu.Lock()
	c.waits = append(c.waits, d.Sub(c.now))
	if d.After(c.now) {
		c.now = d
	}
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(parent)
	cancel()
	return ctx, cancel
}

func (c *recordingClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

var checkReq = &healthpb.HealthCheckRequest{}

package resiliencegrpc_test

import (
	"context"
	"net"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// TestServerKeyedLimit: a keyed rate limiter behind the server
// interceptor, keyed by a metadata entry or by the peer's address, with no
// code of the user's between them. Each key has one token, and the
// limiter's clock stands still: a key's second call is refused.
func TestServerKeyedLimit(t *testing.T) {
	type call struct {
		tenant string // the x-tenant metadata entry; "" for none
		from   string // the client's loopback address
		want   codes.Code
	}
	tests := []struct {
		name  string
		key   func(context.Context) string
		calls []call
	}{
		{name: "KeyFromMetadata", key: resiliencegrpc.KeyFromMetadata("X-Tenant"), calls: []call{
			{tenant: "a", from: "127.0.0.1", want: codes.OK},
			{tenant: "a", from: "127.0.0.2", want: codes.ResourceExhausted},
			{tenant: "b", from: "127.0.0.1", want: codes.OK},
			{from: "127.0.0.1", want: codes.OK}, // no entry: the key ""
			{from: "127.0.0.2", want: codes.ResourceExhausted},
		}},
		{name: "KeyFromPeer", key: resiliencegrpc.KeyFromPeer, calls: []call{
			{tenant: "a", from: "127.0.0.1", want: codes.OK},
			{tenant: "b", from: "127.0.0.1", want: codes.ResourceExhausted}, // another connection, the same address
			{tenant: "a", from: "127.0.0.2", want: codes.OK},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limiter := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(clock.NewMock()))
			srv := &scripted{script: []step{{}}}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			serveOn(t, lis, srv, []grpc.ServerOption{grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(
				resiliencegrpc.WithServerGuards(limiter.Guard(tc.key))))})
			for i, c := range tc.calls {
				ctx := context.Background()
				if c.tenant != "" {
					ctx = metadata.AppendToOutgoingContext(ctx, "x-tenant", c.tenant)
				}
				// A connection of its own, from the call's address.
				conn := dialFrom(t, lis.Addr().String(), c.from)
				_, err := healthpb.NewHealthClient(conn).Check(ctx, checkReq)
				assert.Equal(t, c.want, status.Code(err), "call %d (%+v): %v", i+1, c, err)
			}
		})
	}
}

// dialFrom returns a connection to addr from the local address from, which
// ends with the test.
func dialFrom(t *testing.T, addr, from string) *grpc.ClientConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestKeyFromPeer(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no peer", context.Background(), ""},
		{"IPv4: the address without the port", peer.NewContext(context.Background(),
			&peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 51234}}), "10.0.0.7"},
		{"IPv6", peer.NewContext(context.Background(),
			&peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 443}}), "2001:db8::1"},
		{"a Unix socket: its name", peer.NewContext(context.Background(),
			&peer.Peer{Addr: &net.UnixAddr{Name: "/run/app.sock", Net: "unix"}}), "/run/app.sock"},
		{"a peer without an address", peer.NewContext(context.Background(), &peer.Peer{}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resiliencegrpc.KeyFromPeer(tc.ctx))
		})
	}
}

func TestKeyFromMetadata(t *testing.T) {
	in := func(kv ...string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
	}
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no metadata", context.Background(), ""},
		{"the entry", in("x-user", "ada"), "ada"},
		{"the first of several values", in("x-user", "ada", "x-user", "bob"), "ada"},
		{"another entry", in("x-other", "ada"), ""},
		{"outgoing metadata is not the caller's", metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-user", "ada")), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resiliencegrpc.KeyFromMetadata("X-User")(tc.ctx))
		})
	}
	assert.PanicsWithValue(t, "resiliencegrpc: KeyFromMetadata: name is empty", func() { resiliencegrpc.KeyFromMetadata("") })
}

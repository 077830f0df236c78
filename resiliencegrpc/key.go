package resiliencegrpc

import (
	"context"
	"net"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// KeyFromMetadata returns a key function for a keyed guard on the server,
// such as [resilience.KeyedRateLimiter.Guard]: it gives the first value of
// the incoming metadata entry name (a header the client sends, such as
// "x-tenant" or "x-api-key"; the name is matched in lower case), or "" when
// the call has none, so that every call without it shares the key "".
// Authenticate the value first, in an interceptor before this one: a
// client chooses what it sends.
//
//	perTenant := resilience.NewKeyedRateLimiter[string](10, 20)
//	srv := grpc.NewServer(grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(
//		resiliencegrpc.WithServerGuards(perTenant.Guard(resiliencegrpc.KeyFromMetadata("x-tenant"))))))
//
// The function is safe for concurrent use. KeyFromMetadata panics if name
// is empty.
func KeyFromMetadata(name string) func(ctx context.Context) string {
	if name == "" {
		panic("resiliencegrpc: KeyFromMetadata: name is empty")
	}
	return func(ctx context.Context) string {
		if vals := metadata.ValueFromIncomingContext(ctx, name); len(vals) > 0 {
			return vals[0]
		}
		return ""
	}
}

// KeyFromPeer is a key function for a keyed guard on the server, such as
// [resilience.KeyedRateLimiter.Guard]: it gives the address of the client
// the call came from, without the port for TCP ("10.0.0.7", "2001:db8::1"),
// so that every connection of one host shares a key; the address as
// net.Addr.String gives it for other networks; "" when the context carries
// no peer. Behind a proxy or a load balancer that ends connections, the
// peer is the proxy: key by what the proxy sends instead, with
// [KeyFromMetadata].
func KeyFromPeer(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	if tcp, ok := p.Addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return p.Addr.String()
}

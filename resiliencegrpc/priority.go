package resiliencegrpc

import (
	"context"
	"strings"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/internal/prioritytext"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// WithPriorityMetadata makes the server interceptors give each call the
// priority its incoming metadata entry name carries (resilience.WithPriority
// on the call's context), so that the guards, an adaptive limiter's shares
// among them, and the handler see it. The entry holds a priority's name as
// resilience.Priority.String writes it ("critical", "high", "normal",
// "low", "sheddable"; any case) or its number (2 to -2); its first value
// counts. A call without the entry, or with any other value, keeps the
// priority of its context, which is resilience.PriorityNormal unless an
// earlier interceptor set one. By default the interceptors set none. The
// name is matched in lower case, as gRPC sends it. A client chooses what
// it sends: authenticate it before a priority decides who is shed. It
// panics if name is empty.
func WithPriorityMetadata(name string) ServerOption {
	if name == "" {
		panic("resiliencegrpc: WithPriorityMetadata: name is empty")
	}
	name = strings.ToLower(name)
	return serverOptionFunc(func(c *serverConfig) { c.priority = name })
}

// withPriority returns ctx with the priority of its metadata, if the
// interceptor reads one and the call carries a valid one, or ctx itself.
func (cfg *serverConfig) withPriority(ctx context.Context) context.Context {
	if cfg.priority == "" {
		return ctx
	}
	vals := metadata.ValueFromIncomingContext(ctx, cfg.priority)
	if len(vals) == 0 {
		return ctx
	}
	p, ok := prioritytext.Parse(vals[0])
	if !ok {
		return ctx
	}
	return resilience.WithPriority(ctx, p)
}

// priorityStream is a server stream whose context carries the call's
// priority.
type priorityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *priorityStream) Context() context.Context { return s.ctx }

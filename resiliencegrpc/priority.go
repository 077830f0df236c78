package resiliencegrpc

import (
	"context"
	"strings"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/internal/prioritytext"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// PriorityOption configures the server interceptors and the client
// interceptors alike: [WithPriorityMetadata] is one.
type PriorityOption interface {
	ServerOption
	ClientOption
}

// WithPriorityMetadata names the metadata entry that carries a call's
// priority (resilience.WithPriority) from a client to a server; it is an
// option of both sides. By default neither side reads or sends one. The
// name is matched in lower case, as gRPC sends it. It panics if name is
// empty.
//
// The server interceptors give each call the priority its incoming entry
// names, so that the guards, an adaptive limiter's shares among them, and
// the handler see it. The entry holds a priority's name as
// resilience.Priority.String writes it ("critical", "high", "normal",
// "low", "sheddable"; any case) or its number (2 to -2); its first value
// counts. A call without the entry, or with any other value, keeps the
// priority of its context, which is resilience.PriorityNormal unless an
// earlier interceptor set one. A client chooses what it sends:
// authenticate it before a priority decides who is shed.
//
// The client interceptors send the priority of each call's context in the
// entry, so that a service passes on the priority of the call it serves;
// a call whose context carries no priority or resilience.PriorityNormal,
// which a server gives a call without the entry, is sent as it is, as is
// one whose outgoing metadata has the entry already.
func WithPriorityMetadata(name string) PriorityOption {
	if name == "" {
		panic("resiliencegrpc: WithPriorityMetadata: name is empty")
	}
	return priorityMetadata(strings.ToLower(name))
}

type priorityMetadata string

func (p priorityMetadata) applyServer(c *serverConfig) { c.priority = string(p) }
func (p priorityMetadata) applyClient(c *clientConfig) { c.priority = string(p) }

// withPriority returns ctx with its priority in its outgoing metadata, if
// the interceptor sends one and ctx carries one to send, or ctx itself.
func (c *client) withPriority(ctx context.Context) context.Context {
	if c.cfg.priority == "" {
		return ctx
	}
	p := resilience.PriorityFrom(ctx)
	if p == resilience.PriorityNormal {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(c.cfg.priority)) > 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, c.cfg.priority, prioritytext.Format(p))
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

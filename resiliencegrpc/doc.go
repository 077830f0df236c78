// Package resiliencegrpc brings the policies of
// github.com/faf87a20/resilience to gRPC as interceptors that follow gRPC's
// own retry design (gRFC A6), so that nothing surprising happens on the
// wire.
//
// On the client, [UnaryClientInterceptor] and [StreamClientInterceptor]
// retry calls that fail with a retryable status (UNAVAILABLE by default),
// honour the server's pushback (the grpc-retry-pushback-ms trailer: a value
// is the wait, a negative or malformed one forbids a retry), bound each
// attempt within the call's deadline, draw retries from the library's
// default retry throttle or a shared one, and pass attempts through guards
// (a breaker, a bulkhead) kept per method or per target. A stream is
// retried only until it is committed: until its first response header or
// message.
//
//	conn, err := grpc.NewClient(target,
//		grpc.WithTransportCredentials(creds),
//		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor()),
//		grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor()),
//	)
//
// On the server, [UnaryServerInterceptor] and [StreamServerInterceptor]
// shed load with guards: a refusal becomes RESOURCE_EXHAUSTED (or
// UNAVAILABLE) with pushback from the guard's retry hint, which this
// package's client and grpc-go's built-in retry both honour.
package resiliencegrpc

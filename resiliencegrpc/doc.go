// Package resiliencegrpc brings the policies of
// github.com/faf87a20/resilience to gRPC as interceptors that follow gRPC's
// own retry design (gRFC A6), so that nothing surprising happens on the
// wire:
//
//	conn, err := grpc.NewClient("dns:///users.internal:8443",
//		grpc.WithTransportCredentials(insecure.NewCredentials()),
//		grpc.WithDisableRetry(), // the interceptors retry: grpc-go's retry would multiply their attempts
//		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor()),
//		grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor()),
//	)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer conn.Close()
//	health := healthpb.NewHealthClient(conn)
//	resp, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}, resiliencegrpc.CallAttempts(1)) // no retry
//	fmt.Println(resp.GetStatus(), err)
//
// On the client, [UnaryClientInterceptor] and [StreamClientInterceptor]
// retry calls that fail with a retryable status (UNAVAILABLE by default),
// honour the server's pushback (the grpc-retry-pushback-ms trailer: a value
// is the wait, a negative or malformed one forbids a retry), bound each
// attempt within the call's deadline, draw retries from the library's
// default retry quota or a shared budget, and pass attempts through guards
// (a breaker, a bulkhead) kept per method or per target. A stream is
// retried only until it is committed: until its first response header or
// message. [CallAttempts], a grpc.CallOption, sets the attempts of one
// call. Dial with grpc.WithDisableRetry() when a service config may turn
// grpc-go's own retry on: its attempts multiply the interceptors'.
//
// On the server, [UnaryServerInterceptor] and [StreamServerInterceptor]
// shed load with guards: a refusal becomes RESOURCE_EXHAUSTED (or
// UNAVAILABLE) with pushback from the guard's retry hint, which this
// package's client and grpc-go's built-in retry both honour.
// [WithPriorityMetadata] carries a call's priority from the client's
// context to the server's, for an adaptive limiter that sheds the lowest
// first. [KeyFromMetadata] and [KeyFromPeer] key a keyed guard, such as a
// resilience.KeyedRateLimiter's, by a metadata entry or by the client's
// address.
package resiliencegrpc

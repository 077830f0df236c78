package resiliencegrpc

import (
	"fmt"

	"google.golang.org/grpc"
)

// CallAttempts is a grpc.CallOption that sets how many attempts one call
// makes in all, the first included, in place of the interceptor's
// [WithAttempts]: CallAttempts(1) turns retries off for the call, for a
// method that is not safe to repeat. Given to grpc.WithDefaultCallOptions
// it sets the attempts of every call on the connection, and a call's own
// comes after it and wins. The call's retries draw on the same retry
// quota, throttle or budget as every other call through the interceptor.
// Without [UnaryClientInterceptor] or [StreamClientInterceptor] on the
// connection it does nothing. It panics unless 1 <= n <= 10.
func CallAttempts(n int) grpc.CallOption {
	if n < 1 || n > maxAttempts {
		panic(fmt.Sprintf("resiliencegrpc: CallAttempts: attempts must be between 1 and %d, got %d", maxAttempts, n))
	}
	return callAttempts{n: n}
}

// callAttempts is the call option CallAttempts makes. It embeds
// grpc.EmptyCallOption, as call options meant for interceptors do, so that
// grpc-go passes it along and does nothing with it.
type callAttempts struct {
	grpc.EmptyCallOption
	n int
}

// maxAttempts bounds WithAttempts and CallAttempts: past it, a retry
// storm, not a recovery.
const maxAttempts = 10

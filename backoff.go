package resilience

import "time"

// Backoff decides how long to wait before each retry. Implementations are
// stateless values, safe for concurrent use; a stateful walk over one is
// kept by the caller.
type Backoff interface {
	// Delay is the wait before retry n (n >= 1), given the wait before the
	// previous retry (0 before the first). ok is false when no further retry
	// should be made.
	Delay(n int, prev time.Duration) (d time.Duration, ok bool)
}

// BackoffFunc adapts an ordinary function to a [Backoff].
type BackoffFunc func(n int, prev time.Duration) (time.Duration, bool)

// Delay calls f(n, prev).
func (f BackoffFunc) Delay(n int, prev time.Duration) (time.Duration, bool) { return f(n, prev) }

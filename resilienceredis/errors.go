package resilienceredis

import (
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience"
)

var (
	// ErrUnavailable is matched by the error of a call refused because the
	// limiter could not reach Redis within its timeout and was built with
	// [WithFailClosed]. It is also returned, wrapped with the Redis error,
	// when a fail-closed limiter is degraded. A fail-open limiter (the
	// default) never returns it. It does not match resilience.ErrRefused:
	// it is a fault of the limiter's store, not a decision about the load,
	// and is counted as a failure.
	ErrUnavailable = errors.New("resilienceredis: redis unavailable")

	// ErrKeyConflict is matched by the error of a decision on a key whose
	// Redis value is not a limiter's state: another program's data under
	// the same name (a hash, a list, a string that is not a number…). The
	// error names the key, with its prefix, and the value's Redis type.
	// The data is left as it is, and only that key's decisions fail: Redis
	// answered, so the limiter is not degraded and other keys are decided
	// as before. Give the limiter a prefix of its own ([WithKeyPrefix]), or
	// remove the other data.
	ErrKeyConflict = errors.New("resilienceredis: key holds other data")

	errReply = errors.New("resilienceredis: unexpected reply from the script")
)

// RefusedError is the error of a call refused by a [Limiter] because its
// tokens are not there. It matches [resilience.ErrRateLimited] and
// [resilience.ErrRefused], as every guard's refusal does, and implements [resilience.RetryHint]: RetryAfter tells how long until the
// tokens asked for are there, as of the refusal, or 0 when waiting never
// helps (more tokens were asked for than the burst).
type RefusedError struct {
	after time.Duration
	local bool
}

// Error returns "resilienceredis: rate limited", with a note when the
// refusal came from the local limiter of a degraded Limiter.
func (e *RefusedError) Error() string {
	if e.local {
		return "resilienceredis: rate limited (local limit, redis unavailable)"
	}
	return "resilienceredis: rate limited"
}

// Is reports whether target is [resilience.ErrRateLimited] or
// [resilience.ErrRefused].
func (e *RefusedError) Is(target error) bool {
	return target == resilience.ErrRateLimited || target == resilience.ErrRefused
}

// RetryAfter returns the time from the refusal until the tokens are there,
// or 0 when they never will be.
func (e *RefusedError) RetryAfter() time.Duration { return e.after }

// unavailableError wraps the Redis error of a fail-closed refusal.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string {
	return ErrUnavailable.Error() + ": " + e.err.Error()
}
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *unavailableError) Unwrap() error        { return e.err }

// keyConflictError is the error of a decision on a key holding other data.
type keyConflictError struct{ key, typ string }

func (e *keyConflictError) Error() string {
	return fmt.Sprintf("%s: %q is a Redis %s, not a rate limit's state", ErrKeyConflict.Error(), e.key, e.typ)
}
func (e *keyConflictError) Is(target error) bool { return target == ErrKeyConflict }

package resilience

import (
	"math"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// BreakerOpenError is the error of a call refused by an open [Breaker]. It
// matches [ErrBreakerOpen] and [ErrRefused], and is a [RetryHint]. Every
// call refused during one trip gets the same *BreakerOpenError.
type BreakerOpenError struct {
	until    time.Time // end of the cool-down
	isolated bool      // open until Reset
	cfg      *breakerConfig
}

// Error returns "resilience: circuit breaker open".
func (e *BreakerOpenError) Error() string { return ErrBreakerOpen.Error() }

// Is reports whether target is ErrBreakerOpen or ErrRefused.
func (e *BreakerOpenError) Is(target error) bool {
	return target == ErrBreakerOpen || target == ErrRefused
}

// CoolDownLeft returns the time left until the breaker's cool-down ends: 0
// once it has ended, the largest Duration while it is isolated.
func (e *BreakerOpenError) CoolDownLeft() time.Duration {
	if e.isolated {
		return sat.Max
	}
	var now time.Time
	if e.cfg != nil {
		now = e.cfg.now()
	} else {
		now = time.Now()
	}
	return max(e.until.Sub(now), 0) // Sub saturates
}

// RetryAfter returns how long to wait before trying again: the cool-down
// left plus a millisecond, plus the jitter of [WithBreakerHintJitter],
// drawn afresh by each call. It saturates at the largest Duration, which it
// returns while the breaker is isolated.
func (e *BreakerOpenError) RetryAfter() time.Duration {
	left := e.CoolDownLeft()
	d := sat.Add(left, retryAfterMargin)
	if e.cfg != nil && e.cfg.hintJitter > 0 && left > 0 {
		if j := float64(left) * e.cfg.hintJitter; j < math.MaxInt64 {
			d = sat.Add(d, time.Duration(e.cfg.rand.int64n(int64(j)+1)))
		} else {
			d = sat.Max
		}
	}
	return d
}

// retryAfterMargin lets the cool-down's timer fire before the retry comes.
const retryAfterMargin = time.Millisecond

// errProbesBusy refuses a call while every probe of a half-open breaker is
// in flight. It matches ErrBreakerOpen and ErrRefused.
var errProbesBusy error = probesBusyError{}

type probesBusyError struct{}

func (probesBusyError) Error() string        { return "resilience: circuit breaker half-open, probes busy" }
func (probesBusyError) Is(target error) bool { return target == ErrBreakerOpen || target == ErrRefused }

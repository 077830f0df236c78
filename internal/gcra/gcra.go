// Package gcra is the arithmetic of the generic cell rate algorithm: a rate
// and a burst, and a bucket whose whole state is one number, its
// theoretical arrival time tat. A bucket holds burst − (tat − t)/interval
// tokens at time t, or burst when tat ≤ t. Taking n tokens at t moves tat
// to max(tat, t) + n·interval, which is allowed when the result is at most
// t + tau. Times are nanoseconds on a limiter's own time line.
package gcra

import (
	"errors"
	"math"
)

// Params are the arithmetic of one rate and burst.
type Params struct {
	Interval int64 // ns a token takes to come back; 0: no limit
	Tau      int64 // Burst·Interval, how far tat may run ahead of now; MaxInt64 with no limit
	MaxN     int64 // most tokens one call can get: the burst, or MaxInt64 with no limit
	Frozen   bool  // rate 0: time adds no tokens, so it need not be read at all
	Burst    int
}

const (
	// MaxRefill bounds the time a bucket takes to fill (36 years), MaxSpan
	// the times a limiter counts in (73 years either side of its
	// creation), and MaxAhead how far ahead of now booked tokens may come
	// (2^60 ns, 36 years): so no sum of them overflows.
	MaxRefill = 1 << 60
	MaxSpan   = 1 << 61
	MaxAhead  = 1 << 60
)

// Errors of New.
var (
	ErrRate   = errors.New("gcra: rate must be finite and at least 0")
	ErrBurst  = errors.New("gcra: burst must not be negative")
	ErrRefill = errors.New("gcra: the bucket takes more than MaxRefill to fill")
)

// New returns the arithmetic of rate tokens a second and burst. A rate
// whose interval rounds to 0 ns (above 2e9 a second) is no limit.
func New(rate float64, burst int) (Params, error) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return Params{}, ErrRate
	}
	if burst < 0 {
		return Params{}, ErrBurst
	}
	p := Params{Burst: burst, MaxN: int64(burst)}
	switch iv := math.Round(1e9 / rate); {
	case rate == 0:
		p.Frozen, p.Interval, p.Tau = true, 1, int64(burst)
	case iv < 1:
		p.Tau, p.MaxN = math.MaxInt64, math.MaxInt64
	case iv*float64(max(burst, 1)) > MaxRefill:
		return Params{}, ErrRefill
	default:
		p.Interval = int64(iv)
		p.Tau = p.Interval * int64(burst)
	}
	return p, nil
}

// Take moves tat to make room for cost at t. It returns tat's new value
// and how long from t until the tokens are there (≤ 0: now); ok is false,
// and tat unchanged, when that is more than maxWait, more than MaxAhead, or
// more than 0 at a rate of 0, which never brings them.
//
// Nothing overflows: t is within ±MaxSpan, tat never runs more than tau +
// MaxAhead past the latest t, and cost is at most tau, which is at most
// MaxRefill but for a rate of 0 (t is then 0 and tat at most tau) and no
// limit (cost is then 0).
func (g *Params) Take(tat, t, cost, maxWait int64) (next, wait int64, ok bool) {
	from := max(tat, t)
	wait = from - t - g.Tau + cost // in this order: cost ≤ tau
	if wait > maxWait || wait > MaxAhead || (g.Frozen && wait > 0) {
		return tat, wait, false
	}
	return from + cost, wait, true
}

// Never reports whether n tokens can never be had: more than the burst,
// or more than a rate of 0 has left.
func (g *Params) Never(n int64, wait int64) bool {
	return n > g.MaxN || (g.Frozen && wait > 0)
}

// Tokens returns the tokens in a bucket whose state is tat, at t.
func (g *Params) Tokens(tat, t int64) float64 {
	if g.Interval == 0 {
		return math.Inf(1)
	}
	return float64(g.Tau-(max(tat, t)-t)) / float64(g.Interval)
}

// Rate returns the rate enforced, in tokens a second.
func (g *Params) Rate() float64 {
	switch {
	case g.Frozen:
		return 0
	case g.Interval == 0:
		return math.MaxFloat64
	}
	return 1e9 / float64(g.Interval)
}

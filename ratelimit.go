package resilience

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/gcra"
)

// RateUnlimited is the rate of a limiter that admits every call at once,
// whatever the burst. Any rate above 2e9 per second, whose interval between
// tokens rounds to less than a nanosecond, is unlimited too.
const RateUnlimited = math.MaxFloat64

// RateLimiter lets calls through at a steady rate with room for bursts, as
// golang.org/x/time/rate's Limiter does: a token bucket that holds at most
// burst tokens, starts full and refills at rate tokens a second. A call
// takes one token; AllowN, WaitN and ReserveN take n. Tokens are booked at
// most 2^60 ns (36 years) ahead; a clock that goes backwards adds none
// (docs/rate-limits.md). As a [Guard] it refuses at once with a
// *[RateLimitError], unless [WithRateLimitWait] lets the call wait. A
// RateLimiter is safe for concurrent use; the zero value is not usable.
type RateLimiter struct {
	// tat is the theoretical arrival time of the algorithm: when the bucket
	// will be full again if nothing more is taken, in nanoseconds since
	// origin. The rest is read-only, kept off tat's cache line so that
	// callers on other cores keep reading it while tat changes hands.
	tat atomic.Int64
	_   [56]byte
	limits
	refusalCount
	wait time.Duration
	common
}

// limits is a limiter's rate and burst: their arithmetic (see
// internal/gcra), and the time its tat counts from.
type limits struct {
	gcra.Params
	origin time.Time // time 0 of tat, on the limiter's clock
}

// newLimits checks rate and burst for the constructor fn and returns their
// arithmetic.
func newLimits(fn string, rate float64, burst int, c *common) limits {
	p, err := gcra.New(rate, burst)
	switch err {
	case gcra.ErrRate:
		panic(fmt.Sprintf("resilience: %s: rate must be a finite number of tokens a second, at least 0, got %v (RateUnlimited means no limit)", fn, rate))
	case gcra.ErrBurst:
		panic(fmt.Sprintf("resilience: %s: burst must not be negative, got %d", fn, burst))
	case gcra.ErrRefill:
		panic(fmt.Sprintf("resilience: %s: rate %v with burst %d takes more than 36 years to refill", fn, rate, burst))
	}
	return limits{Params: p, origin: c.now()}
}

// nowNs returns the time on c in nanoseconds since origin, within
// ±gcra.MaxSpan.
func (g *limits) nowNs(c *common) int64 {
	if g.Frozen {
		return 0
	}
	var d time.Duration
	if c.clock == nil {
		d = time.Since(g.origin)
	} else {
		d = c.clock.Now().Sub(g.origin)
	}
	return min(max(int64(d), -gcra.MaxSpan), gcra.MaxSpan)
}

// checkN panics if n is negative, naming the method fn.
func checkN(fn string, n int) {
	if n < 0 {
		panic(fmt.Sprintf("resilience: %s: n must not be negative, got %d", fn, n))
	}
}

// NewRateLimiter returns a limiter that admits rate tokens a second on
// average, and up to burst at once. A rate of 0 never refills; a burst of 0
// admits nothing but at [RateUnlimited]. It panics if rate is NaN, infinite
// or negative, if burst is negative, if the bucket would take more than 36
// years to refill, or if an option is invalid.
func NewRateLimiter(rate float64, burst int, opts ...RateLimitOption) *RateLimiter {
	var cfg rateLimitConfig
	for _, o := range opts {
		checkOption("NewRateLimiter", o)
		o.applyRateLimit(&cfg)
	}
	cfg.route = newRoute(KindRateLimiter, &cfg.common)
	return &RateLimiter{limits: newLimits("NewRateLimiter", rate, burst, &cfg.common), wait: cfg.wait, common: cfg.common}
}

// RateLimitOption configures [NewRateLimiter] and [NewKeyedRateLimiter];
// an [Option] is one too.
type RateLimitOption interface {
	applyRateLimit(*rateLimitConfig)
	KeyedRateLimitOption
}

type rateLimitConfig struct {
	wait time.Duration
	common
}

type rateLimitOptionFunc func(*rateLimitConfig)

func (f rateLimitOptionFunc) applyRateLimit(c *rateLimitConfig) { f(c) }

func (o Option) applyRateLimit(c *rateLimitConfig) { o.set(&c.common) }

// WithRateLimitWait lets a call through the limiter as a [Guard] wait up to
// d for its token; a call whose token comes later, or after its context's
// deadline, is still refused at once. The default, 0, is not to wait. It
// panics if d is negative.
func WithRateLimitWait(d time.Duration) RateLimitOption {
	checkDuration("WithRateLimitWait", "wait", d)
	return rateLimitOptionFunc(func(c *rateLimitConfig) { c.wait = d })
}

// Rate returns the rate the limiter enforces, in tokens a second: the rate
// given, with the interval between tokens rounded to the nanosecond.
func (l *RateLimiter) Rate() float64 { return l.Params.Rate() }

// Burst returns the most tokens the bucket holds.
func (l *RateLimiter) Burst() int { return l.Params.Burst }

// Tokens returns the number of tokens in the bucket now: fractional while
// one refills, negative when reservations have booked tokens ahead, +Inf
// with [RateUnlimited].
func (l *RateLimiter) Tokens() float64 { return l.Params.Tokens(l.tat.Load(), l.nowNs(&l.common)) }

// Allow takes a token if one is there, and reports whether it did. It
// never waits.
func (l *RateLimiter) Allow() bool {
	t := l.nowNs(&l.common)
	for {
		tat := l.loadTat()
		next, wait, ok := l.Take(tat, t, l.Interval, 0)
		if !ok {
			l.refusedN.Add(1)
			if l.reports() {
				l.refusedEvent(context.Background(), ErrRateLimited, wait, 1)
			}
			return false
		}
		if l.tat.CompareAndSwap(tat, next) {
			return true
		}
	}
}

// AllowN takes n tokens if they are all there, and reports whether it did.
// It never waits. AllowN(0) is true unless reservations have left fewer
// than 0 tokens. It panics if n is negative.
func (l *RateLimiter) AllowN(n int) bool {
	checkN("RateLimiter.AllowN", n)
	if int64(n) > l.MaxN {
		l.refusedN.Add(1)
		if l.reports() {
			l.refusedEvent(context.Background(), ErrRateLimited, 0, int64(n))
		}
		return false
	}
	cost := int64(n) * l.Interval // at most tau
	t := l.nowNs(&l.common)
	for {
		tat := l.loadTat()
		next, wait, ok := l.Take(tat, t, cost, 0)
		if !ok {
			l.refusedN.Add(1)
			if l.reports() {
				l.refusedEvent(context.Background(), ErrRateLimited, wait, int64(n))
			}
			return false
		}
		if next == tat || l.tat.CompareAndSwap(tat, next) {
			return true
		}
	}
}

// refusedEvent reports a refusal with the time until the tokens are there
// as its hint, none when they never will be.
func (l *RateLimiter) refusedEvent(ctx context.Context, err error, wait, n int64) {
	if l.Never(n, wait) {
		wait = 0
	}
	l.observe(ctx, Event{Kind: EventRefused, Component: KindRateLimiter, Err: err, Wait: time.Duration(max(wait, 0))})
}

// loadTat reads tat for a compare-and-swap to move it.
func (l *RateLimiter) loadTat() int64 {
	tat := l.tat.Load()
	if tatRead != nil {
		tatRead(l)
	}
	return tat
}

// tatRead is nil but in the package's tests, which set it to move a
// limiter's tat after a caller has read it and before its compare-and-swap,
// as a caller on another core can: a seam where a race must be forced.
var tatRead func(*RateLimiter)

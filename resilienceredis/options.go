package resilienceredis

import (
	"fmt"
	"math"
	"time"

	"github.com/faf87a20/resilience"
)

// Defaults of a [Limiter].
const (
	// DefaultTimeout bounds each decision: a call that gets no answer from
	// Redis in this time is answered without it.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultProbeInterval is how often a degraded limiter tries Redis
	// again.
	DefaultProbeInterval = time.Second
	// DefaultKeyPrefix is put before every key the limiter keeps in Redis.
	DefaultKeyPrefix = "resilience:rate:"
)

// Option configures [NewLimiter].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	timeout  time.Duration
	probe    time.Duration
	wait     time.Duration
	share    float64
	closed   bool
	prefix   string
	observer resilience.Observer
	name     string
}

// WithTimeout bounds each decision: the longest a call waits for Redis
// before it is answered without it ([WithFailOpen], [WithFailClosed]). The
// default is [DefaultTimeout]. It panics if d is not positive.
func WithTimeout(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("resilienceredis: WithTimeout: timeout must be positive, got %v", d))
	}
	return optionFunc(func(c *config) { c.timeout = d })
}

// WithProbeInterval sets how often a degraded limiter tries Redis again:
// one call at most per interval asks Redis (bounded by the timeout), the
// others are answered without it. The default is [DefaultProbeInterval].
// It panics if d is not positive.
func WithProbeInterval(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("resilienceredis: WithProbeInterval: interval must be positive, got %v", d))
	}
	return optionFunc(func(c *config) { c.probe = d })
}

// WithFailOpen makes a limiter that cannot reach Redis limit calls locally,
// in this process, at share of its rate and burst (burst rounded up, at
// least 1): with n machines sharing the limit, a share of 1/n keeps the
// fleet near it. This is the default, with a share of 1: each machine
// alone gets the whole limit. It panics if share is not in (0, 1].
func WithFailOpen(share float64) Option {
	if !(share > 0 && share <= 1) {
		panic(fmt.Sprintf("resilienceredis: WithFailOpen: share must be in (0, 1], got %v", share))
	}
	return optionFunc(func(c *config) { c.share, c.closed = share, false })
}

// WithFailClosed makes a limiter that cannot reach Redis refuse every call,
// with an error matching [ErrUnavailable].
func WithFailClosed() Option {
	return optionFunc(func(c *config) { c.closed = true })
}

// WithRateLimitWait lets a call through the limiter as a guard wait up to
// d for its tokens instead of being refused at once, as
// resilience.WithRateLimitWait does for the local limiter. The tokens are
// booked in Redis before the wait, so a call whose context ends while it
// waits has spent them. The default, 0, is not to wait. It panics if d is
// negative.
func WithRateLimitWait(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("resilienceredis: WithRateLimitWait: wait must not be negative, got %v", d))
	}
	return optionFunc(func(c *config) { c.wait = d })
}

// WithKeyPrefix sets what is put before every key in Redis, to keep the
// limiter's keys apart from others'. The default is [DefaultKeyPrefix].
func WithKeyPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.prefix = prefix })
}

// WithObserver makes the limiter report refusals
// ([resilience.EventRefused]) and its faults
// ([resilience.EventDegraded], [resilience.EventRecovered]) to o. It
// panics if o is nil.
func WithObserver(o resilience.Observer) Option {
	if o == nil {
		panic("resilienceredis: WithObserver: observer is nil")
	}
	return optionFunc(func(c *config) { c.observer = o })
}

// WithName labels the limiter in the events it reports.
func WithName(name string) Option {
	return optionFunc(func(c *config) { c.name = name })
}

// maxTau bounds the burst tolerance, in microseconds, so that the script's
// sums of times stay exact integers in Lua's doubles: about 36 years.
const maxTau = int64(1) << 50

// intervalMicros turns a rate into the interval between two tokens, in
// whole microseconds, panicking if it is not one.
func intervalMicros(rate float64, burst int) int64 {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0 {
		panic(fmt.Sprintf("resilienceredis: NewLimiter: rate must be positive and finite, got %v", rate))
	}
	if burst < 0 {
		panic(fmt.Sprintf("resilienceredis: NewLimiter: burst must not be negative, got %d", burst))
	}
	iv := math.Round(1e6 / rate)
	if iv < 1 {
		panic(fmt.Sprintf("resilienceredis: NewLimiter: rate must be at most 1e6 a second, got %v", rate))
	}
	if iv*float64(burst) > float64(maxTau) || iv > float64(maxTau) {
		panic(fmt.Sprintf("resilienceredis: NewLimiter: rate %v with burst %d takes too long to refill", rate, burst))
	}
	return int64(iv)
}

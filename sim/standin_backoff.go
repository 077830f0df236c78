package main

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// Stand-ins for the library's backoff strategies, used until they exist.

func standinExpo(base, cap time.Duration, n int) time.Duration {
	d := float64(base) * math.Pow(2, float64(n-1))
	if d >= float64(cap) {
		return cap
	}
	return time.Duration(d)
}

func standinStrategies(p backoffParams) []contentionStrategy {
	return []contentionStrategy{
		{"none", func(*rand.Rand) resilience.Backoff {
			return resilience.BackoffFunc(func(int, time.Duration) (time.Duration, bool) { return 0, true })
		}},
		{"exponential", func(*rand.Rand) resilience.Backoff {
			return resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
				return standinExpo(p.Base, p.Cap, n), true
			})
		}},
		{"full jitter", func(r *rand.Rand) resilience.Backoff {
			return resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
				return time.Duration(r.Int64N(int64(standinExpo(p.Base, p.Cap, n)) + 1)), true
			})
		}},
		{"equal jitter", func(r *rand.Rand) resilience.Backoff {
			return resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
				h := standinExpo(p.Base, p.Cap, n) / 2
				return h + time.Duration(r.Int64N(int64(h)+1)), true
			})
		}},
		{"decorrelated", func(r *rand.Rand) resilience.Backoff {
			return resilience.BackoffFunc(func(_ int, prev time.Duration) (time.Duration, bool) {
				hi := 3 * max(prev, p.Base)
				d := p.Base + time.Duration(r.Int64N(int64(hi-p.Base)+1))
				return min(d, p.Cap), true
			})
		}},
		{"polly smooth", func(r *rand.Rand) resilience.Backoff {
			// Polly's DecorrelatedJitterBackoffV2 keeps the formula's last
			// value between retries, so each client needs its own.
			var last float64
			return resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
				t := float64(n-1) + r.Float64()
				next := math.Pow(2, t) * math.Tanh(math.Sqrt(4*t))
				d := (next - last) / 1.4 * float64(p.Base)
				last = next
				if d >= float64(p.Cap) {
					return p.Cap, true
				}
				return time.Duration(d), true
			})
		}},
	}
}

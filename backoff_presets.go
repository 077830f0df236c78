package resilience

import (
	"fmt"
	"math"
	"time"
)

// KubernetesBackoff reproduces Kubernetes' wait.Backoff and the waits its
// Step method returns, one per retry:
//
//   - while Steps last, each Step returns Duration and then multiplies it by
//     Factor (a Factor of 0 keeps it as it is);
//   - when the grown Duration passes Cap (if Cap > 0) it becomes Cap and the
//     steps end at once;
//   - once the steps are spent, every Step returns the last Duration: with
//     {1s, ×2, Steps 10, Cap 5s} the waits are 1s, 2s, 4s, 5s, 5s, …, and
//     with {1s, ×2, Steps 3} they are 1s, 2s, 4s, 8s, 8s, …;
//   - Jitter > 0 adds up to Jitter·d on top (upward, as wait.Jitter does), so
//     like the original a jittered wait may pass Cap; wrap it in [Cap] for a
//     hard bound.
//
// Unlike wait.Jitter, a Jitter of 0 means no jitter (Kubernetes treats a
// factor of 0 passed to wait.Jitter as 1). It never stops retrying; combine
// it with [MaxRetries] for that. The zero value waits 0 every time.
type KubernetesBackoff struct {
	Duration time.Duration
	Factor   float64
	Jitter   float64
	Steps    int
	Cap      time.Duration

	src source
}

// Delay returns the wait Step would return on its n-th call.
func (k KubernetesBackoff) Delay(n int, _ time.Duration) (time.Duration, bool) {
	d := k.base(n)
	if k.Jitter > 0 { // [d, d + Jitter·d)
		d += k.src.below(uint64(scale(d, 1+k.Jitter) - d))
	}
	return d, true
}

// base is the wait before jitter: Duration grown k-1 times, where k is n
// while steps last and Steps+1 after.
func (k *KubernetesBackoff) base(n int) time.Duration {
	if k.Steps < 1 || k.Factor == 0 || k.Duration <= 0 {
		return max(k.Duration, 0)
	}
	grown := min(max(n, 1)-1, k.Steps)
	if grown == 0 {
		return k.Duration
	}
	d := scale(k.Duration, pow(k.Factor, grown))
	if k.Cap > 0 && d > k.Cap {
		return k.Cap
	}
	return d
}

func (k KubernetesBackoff) withRand(r Rand) Backoff { k.src = source{r}; return k }

// Jpillora reproduces github.com/jpillora/backoff: retry n waits
// min·factor^(n-1), clamped to [min, max]; with jitter, a uniform time in
// [min, d) instead. Zero arguments take that library's defaults: min
// 100ms, max 10s, factor 2, so the waits are 100ms, 200ms, … 6.4s, 10s,
// 10s. When min >= max every wait is max. It panics on negative durations
// or a factor below 1 (other than 0) or not finite.
func Jpillora(min, max time.Duration, factor float64, jitter bool) Backoff {
	checkDuration("Jpillora", "min", min)
	checkDuration("Jpillora", "max", max)
	if factor != 0 && (!(factor >= 1) || math.IsInf(factor, 0)) {
		panic(fmt.Sprintf("resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got %v", factor))
	}
	if min == 0 {
		min = 100 * time.Millisecond
	}
	if max == 0 {
		max = 10 * time.Second
	}
	if factor == 0 {
		factor = 2
	}
	return &jpillora{min: min, max: max, factor: factor, jitter: jitter}
}

type jpillora struct {
	min, max time.Duration
	factor   float64
	jitter   bool
	src      source
}

func (j *jpillora) Delay(n int, _ time.Duration) (time.Duration, bool) {
	if j.min >= j.max {
		return j.max, true
	}
	d := scale(j.min, pow(j.factor, max(n, 1)-1))
	if j.jitter && d > j.min && d < maxDuration {
		d = j.min + time.Duration(j.src.int64n(int64(d-j.min)))
	}
	return min(max(d, j.min), j.max), true
}

func (j jpillora) withRand(r Rand) Backoff { j.src = source{r}; return &j }

// Celery reproduces Celery's exponential retry countdown: retry n waits
// factor·2^(n-1), at most maximum; with fullJitter, a uniform whole number
// of seconds in [0, that] instead, as Celery's retry_jitter does. It panics
// if factor or maximum is negative.
func Celery(factor, maximum time.Duration, fullJitter bool) Backoff {
	checkDuration("Celery", "factor", factor)
	checkDuration("Celery", "maximum", maximum)
	return &celery{factor: factor, maximum: maximum, jitter: fullJitter}
}

type celery struct {
	factor, maximum time.Duration
	jitter          bool
	src             source
}

func (c *celery) Delay(n int, _ time.Duration) (time.Duration, bool) {
	var d time.Duration // factor·2^(n-1), saturated
	if k := max(n, 1) - 1; k < 63 {
		d = times(c.factor, 1<<k)
	} else if c.factor > 0 {
		d = maxDuration
	}
	d = min(d, c.maximum)
	if c.jitter {
		d = time.Duration(c.src.int64n(int64(d/time.Second)+1)) * time.Second
	}
	return d, true
}

func (c celery) withRand(r Rand) Backoff { c.src = source{r}; return &c }

// Ethernet is the binary exponential backoff of IEEE 802.3: after c
// collisions, wait a uniform whole number of slot times in [0, 2^c − 1],
// with c counted up to 10 and no retry after the 16th attempt. Retry n is
// after collision n. The classic slot time is 51.2µs (10 Mbit/s). It panics
// if slot is negative.
func Ethernet(slot time.Duration) Backoff {
	checkDuration("Ethernet", "slot", slot)
	return &ethernet{slot: slot}
}

type ethernet struct {
	slot time.Duration
	src  source
}

func (e *ethernet) Delay(n int, _ time.Duration) (time.Duration, bool) {
	if n > 15 {
		return 0, false
	}
	c := min(max(n, 1), 10)
	return times(e.slot, e.src.int64n(1<<c)), true
}

func (e ethernet) withRand(r Rand) Backoff { e.src = source{r}; return &e }

// GRPC is gRPC's connection backoff: 1s, then ×1.6 per retry up to 120s,
// each wait then jittered by ±20%.
func GRPC() Backoff {
	return SymmetricJitter(Cap(Exponential(time.Second, 1.6), 120*time.Second), 0.2)
}

// ConstantSchedule returns go-resiliency's ConstantBackoff as a [Schedule]:
// n retries, each after d.
func ConstantSchedule(n int, d time.Duration) Backoff {
	return Schedule(scheduleOf("ConstantSchedule", n, func(int) time.Duration { return d })...)
}

// ExponentialSchedule returns go-resiliency's ExponentialBackoff as a
// [Schedule]: n retries, waiting initial, 2·initial, 4·initial, ….
func ExponentialSchedule(n int, initial time.Duration) Backoff {
	return Schedule(scheduleOf("ExponentialSchedule", n, func(i int) time.Duration {
		return scale(initial, pow(2, i))
	})...)
}

// LimitedExponentialSchedule returns go-resiliency's
// LimitedExponentialBackoff as a [Schedule]: as [ExponentialSchedule], no
// wait longer than limit.
func LimitedExponentialSchedule(n int, initial, limit time.Duration) Backoff {
	return Schedule(scheduleOf("LimitedExponentialSchedule", n, func(i int) time.Duration {
		return min(scale(initial, pow(2, i)), limit)
	})...)
}

func scheduleOf(fn string, n int, wait func(i int) time.Duration) []time.Duration {
	if n < 0 {
		panic(fmt.Sprintf("resilience: %s: n must not be negative, got %d", fn, n))
	}
	waits := make([]time.Duration, n)
	for i := range waits {
		waits[i] = wait(i)
	}
	return waits
}

package resilience

import (
	"fmt"
	"math"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// Jpillora reproduces github.com/jpillora/backoff: retry n waits
// min·factor^(n-1) within [min, max], or with jitter a uniform time in
// [min, that); zero arguments mean 100ms, 10s and 2. It panics on negative
// durations or a factor below 1 (other than 0) or not finite.
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
	d := sat.Scale(j.min, pow(j.factor, max(n, 1)-1))
	if j.jitter && d > j.min && d < sat.Max {
		d = j.min + time.Duration(j.src.int64n(int64(d-j.min)))
	}
	return min(max(d, j.min), j.max), true
}

func (j jpillora) withRand(r Rand) Backoff { j.src = source{r}; return &j }

// Celery reproduces Celery's exponential retry countdown: retry n waits
// factor·2^(n-1), at most maximum; with fullJitter, a uniform whole number
// of seconds in [0, that] instead. It panics if factor or maximum is
// negative.
func Celery(factor, maximum time.Duration, fullJitter bool) Backoff {
	checkDuration("Celery", "factor", factor)
	checkDuration("Celery", "maximum", maximum)
	return &celery{doubling: doubling{initial: factor, limit: maximum}, jitter: fullJitter}
}

type celery struct {
	doubling
	jitter bool
	src    source
}

func (c *celery) Delay(n int, prev time.Duration) (time.Duration, bool) {
	d, _ := c.doubling.Delay(n, prev)
	if c.jitter {
		d = time.Duration(c.src.int64n(int64(d/time.Second)+1)) * time.Second
	}
	return d, true
}

func (c celery) withRand(r Rand) Backoff { c.src = source{r}; return &c }

// doubling waits initial·2^(n-1), at most limit, computed in integers.
type doubling struct{ initial, limit time.Duration }

func (d *doubling) Delay(n int, _ time.Duration) (time.Duration, bool) {
	return min(sat.Shift(d.initial, max(n, 1)-1), d.limit), true
}

// Ethernet is the binary exponential backoff of IEEE 802.3: retry n waits
// a uniform whole number of slot times in [0, 2^min(n,10) − 1], and there
// is no retry after the 16th attempt. It panics if slot is negative.
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
	return sat.Mul(e.slot, e.src.int64n(1<<c)), true
}

func (e ethernet) withRand(r Rand) Backoff { e.src = source{r}; return &e }

// GRPCConnect is gRPC's backoff between attempts to connect (its
// connection-backoff document): 1s, then ×1.6 per retry up to 120s, each
// wait then jittered by ±20%. It is not the backoff of gRPC's retry policy,
// which resiliencegrpc.DefaultBackoff gives.
func GRPCConnect() Backoff {
	return SymmetricJitter(Cap(Exponential(time.Second, 1.6), 120*time.Second), 0.2)
}

// The go-resiliency schedules below build no slice of waits: n retries of
// the wait, then none, so any n from 0 to the largest int costs the same
// small table. Wrap one in [HoldLast] for go-resiliency's infinite retry.

// ConstantSchedule returns go-resiliency's ConstantBackoff: n retries, each
// after d, then no more. It panics if n or d is negative.
func ConstantSchedule(n int, d time.Duration) Backoff {
	checkCount("ConstantSchedule", n)
	checkDuration("ConstantSchedule", "d", d)
	return limitedTo(&constant{d}, n)
}

// ExponentialSchedule returns go-resiliency's ExponentialBackoff: n retries,
// waiting initial, 2·initial, 4·initial, …, then no more. It panics if n or
// initial is negative.
func ExponentialSchedule(n int, initial time.Duration) Backoff {
	checkCount("ExponentialSchedule", n)
	checkDuration("ExponentialSchedule", "initial", initial)
	return limitedTo(&doubling{initial: initial, limit: sat.Max}, n)
}

// LimitedExponentialSchedule returns go-resiliency's
// LimitedExponentialBackoff: as [ExponentialSchedule], no wait longer than
// limit. It panics if n, initial or limit is negative.
func LimitedExponentialSchedule(n int, initial, limit time.Duration) Backoff {
	checkCount("LimitedExponentialSchedule", n)
	checkDuration("LimitedExponentialSchedule", "initial", initial)
	checkDuration("LimitedExponentialSchedule", "limit", limit)
	return limitedTo(&doubling{initial: initial, limit: limit}, n)
}

func checkCount(fn string, n int) {
	if n < 0 {
		panic(fmt.Sprintf("resilience: %s: n must not be negative, got %d", fn, n))
	}
}

package main

import (
	"fmt"
	"strconv"
)

var targets = map[string][]target{
	"RetrySuccess":           retryOrBreaker,
	"RetrySuccessParallel":   retryOrBreakerParallel,
	"RetryFailFailSucceed":   {{maxAllocs: -1, bounds: []bound{atMost(150), speedupOver("failsafe-go", 10)}, text: "≤ 150 ns, ≥ 10× failsafe-go"}},
	"BreakerSuccess":         retryOrBreaker,
	"BreakerSuccessParallel": retryOrBreakerParallel,
	"BreakerOpenRefusal": {{maxAllocs: 0, bounds: []bound{plusOf("policy-refusal-floor", 1.5)},
		text: "≤ policy-refusal-floor + 1.5 ns, 0 allocs"}},
	"Bulkhead":                             {{maxAllocs: 0, bounds: []bound{atMost(25), speedupOver("failsafe-go", 10)}, text: "≤ 25 ns, 0 allocs, ≥ 10× failsafe-go"}},
	"Timeout":                              timeouts,
	"TimeoutChild":                         timeouts,
	"Composed":                             composed(2),
	"ComposedParallel":                     composed(2),
	"ComposedChild":                        composed(1.7),
	"ComposedChildParallel":                composed(1.7),
	"BatchPerItem":                         {{maxAllocs: 2, bounds: []bound{atMost(300)}, text: "≤ 300 ns, ≤ 2 allocs per item"}},
	"RateLimitAllow":                       {{maxAllocs: 0, bounds: []bound{atMost(25)}, text: "≤ 25 ns, 0 allocs"}},
	"RateLimitAllowParallel":               {{maxAllocs: 0, bounds: []bound{atMost(25)}, text: "≤ 25 ns, 0 allocs"}},
	"RateLimitGuarded":                     {{maxAllocs: 0, bounds: []bound{atMost(30)}, text: "≤ 30 ns, 0 allocs"}},
	"RateLimitKeyed":                       {{maxAllocs: 0, bounds: []bound{atMost(60)}, text: "≤ 60 ns, 0 allocs"}},
	"AdaptiveLimiter":                      adaptive,
	"AdaptiveLimiterParallel":              adaptive,
	"AdaptiveThrottler":                    adaptive,
	"AdaptiveThrottlerParallel":            adaptive,
	"RedisRateLimit":                       redisTargets,
	"RedisRateLimitParallel":               redisTargets,
	"RedisRateLimitDefaultOptions":         redisTargets,
	"RedisRateLimitDefaultOptionsParallel": redisTargets,
	"HedgeFast": {
		{maxAllocs: -1, bounds: []bound{plusOf("timeout-cooperative", 50)}, text: "≤ cooperative Timeout + 50 ns"},
		{maxAllocs: -1, bounds: []bound{plusOf("timeout-cooperative", 50)}, lib: "resilience-fixed", text: "fixed delay ≤ cooperative Timeout + 50 ns"},
	},
	"FallbackSuccess": {{maxAllocs: 0, bounds: []bound{plusOf("direct", 3)}, text: "≤ the bare call + 3 ns, 0 allocs"}},
	"SingleflightLeader": {{maxAllocs: -1, lib: "resilience-cancellable", bounds: []bound{timesOf("cancellable-floor", 2)},
		text: "cancellable ≤ 2× cancellable-floor"}},
	"ObservedRetrySuccess": {
		{maxAllocs: 0, bounds: []bound{plusOf("resilience", 5)}, lib: "resilience-counting", text: "counting ≤ unobserved + 5 ns, 0 allocs"},
		{maxAllocs: 0, bounds: []bound{plusOf("resilience", 5)}, lib: "resilience-slog", text: "slog (disabled) ≤ unobserved + 5 ns, 0 allocs"},
		{maxAllocs: 0, bounds: []bound{plusOf("resilience", 5)}, lib: "resilience-otel", text: "otel ≤ unobserved + 5 ns, 0 allocs"},
	},
	"ObservedRetryFailFailSucceed": {
		{maxAllocs: 0, lib: "resilience-counting", text: "counting: 0 allocs"},
		{maxAllocs: 0, lib: "resilience-slog", text: "slog (disabled): 0 allocs"},
	},
}

// adaptive is the adaptive guards' target: a call that succeeds costs at
// most 50 ns and allocates nothing, by Guarded and by Enter and done.
var adaptive = []target{
	{maxAllocs: 0, bounds: []bound{atMost(50)}, text: "≤ 50 ns, 0 allocs"},
	{maxAllocs: 0, bounds: []bound{atMost(50)}, lib: "resilience-enter", text: "Enter and done ≤ 50 ns, 0 allocs"},
}

// target is what the project promised for one of our columns in a row: at
// most maxAllocs allocations, and an ns/op within every bound.
type target struct {
	lib       string  // which of our columns; "" is "resilience"
	maxAllocs float64 // -1: none
	bounds    []bound
	text      string
}

// bound is the most a column may cost: the ns of col and of the columns
// of with, summed, × times ÷ speedup + plus, or, with or set, or's ns if
// that is larger.
type bound struct {
	col      string   // a column of the row; "": plus alone
	with     []string // columns whose ns adds to col's
	times    float64  // 0 is 1
	speedup  float64  // 0 is 1
	plus     float64  // ns
	or       string   // a column whose ns is allowed too
	ahead    bool     // strictly less than the bound: ahead of col
	optional bool     // a row without col is not judged by this bound
}

func atMost(ns float64) bound             { return bound{plus: ns} }
func timesOf(col string, k float64) bound { return bound{col: col, times: k} }

// timesSum is "at most k times the sum of the columns' costs".
func timesSum(k float64, cols ...string) bound { return bound{col: cols[0], with: cols[1:], times: k} }
func plusOf(col string, ns float64) bound      { return bound{col: col, plus: ns} }
func speedupOver(col string, k float64) bound  { return bound{col: col, speedup: k} }
func aheadOf(col string) bound                 { return bound{col: col, ahead: true} }

// floorOrPeer is "at most the peer's cost or the floor's + plus, whichever
// is larger".
func floorOrPeer(floor string, plus float64, peer string) bound {
	return bound{col: floor, plus: plus, or: peer}
}

var (
	retryOrBreaker = []target{{maxAllocs: 0, bounds: []bound{floorOrPeer("policy-floor", 3, "go-resiliency")},
		text: "≤ max(go-resiliency, policy-floor + 3 ns), 0 allocs"}}
	retryOrBreakerParallel = []target{{maxAllocs: 0, bounds: []bound{floorOrPeer("policy-floor", 1.5, "go-resiliency")},
		text: "≤ max(go-resiliency, policy-floor + 1.5 ns), 0 allocs"}}
	timeouts = []target{
		{maxAllocs: -1, bounds: []bound{timesSum(1.15, "context.WithTimeoutCause", "handoff"), {col: "go-resiliency", ahead: true, optional: true}},
			text: "default ≤ 1.15× (context.WithTimeoutCause + handoff), ahead of go-resiliency"},
		{maxAllocs: -1, lib: "resilience-cooperative", bounds: []bound{timesOf("context.WithTimeoutCause", 1.15), aheadOf("failsafe-go")},
			text: "cooperative ≤ 1.15× context.WithTimeoutCause, ahead of failsafe-go"},
	}
	redisTargets = []target{{maxAllocs: 21, bounds: []bound{timesOf("redis_rate", 1)}, text: "≤ redis_rate's latency, fewer allocs"}}
)

// composed is the targets of a composition row: the default mode ahead of
// failsafe-go, the cooperative one at least k× faster.
func composed(k float64) []target {
	return []target{
		{maxAllocs: -1, bounds: []bound{aheadOf("failsafe-go")}, text: "default ahead of failsafe-go"},
		{maxAllocs: -1, lib: "resilience-cooperative", bounds: []bound{speedupOver("failsafe-go", k)},
			text: "cooperative ≥ " + strconv.FormatFloat(k, 'g', -1, 64) + "× failsafe-go"},
	}
}

func find(rw row, lib string) (result, bool) {
	for _, r := range rw.results {
		if r.lib == lib {
			return r, true
		}
	}
	return result{}, false
}

// end says which figures of the results a target is judged on: the
// medians, or the worse end of each spread (ours at its slowest round, the
// columns it is compared with at their fastest).
type end int

const (
	medians end = iota
	worseEnds
)

// limit is the bound's ns in rw at end e; missing names a column the bound
// needs and rw lacks, and skip is true when the bound does not apply.
func (b bound) limit(rw row, e end) (lim float64, missing string, skip bool) {
	lim = b.plus
	at := func(r result) float64 {
		if e == worseEnds {
			return r.nsLo
		}
		return r.ns
	}
	if b.col != "" {
		c, ok := find(rw, b.col)
		if !ok {
			if b.optional {
				return 0, "", true
			}
			return 0, b.col, false
		}
		v := at(c)
		for _, w := range b.with {
			c, ok := find(rw, w)
			if !ok {
				return 0, w, false
			}
			v += at(c)
		}
		if b.times != 0 {
			v *= b.times
		}
		if b.speedup != 0 {
			v /= b.speedup
		}
		lim += v
	}
	if b.or != "" {
		o, ok := find(rw, b.or)
		if !ok {
			return 0, b.or, false
		}
		lim = max(lim, at(o))
	}
	return lim, "", false
}

// holds reports whether r meets t in rw at end e, or names a column t
// needs and rw lacks.
func (t target) holds(rw row, r result, e end) (ok bool, missing string) {
	ns, allocs := r.ns, r.allocs
	if e == worseEnds {
		ns, allocs = r.nsHi, r.allocsHi
	}
	ok = t.maxAllocs < 0 || allocs <= t.maxAllocs
	for _, b := range t.bounds {
		lim, missing, skip := b.limit(rw, e)
		switch {
		case missing != "":
			return false, missing
		case skip:
		case b.ahead && ns >= lim, !b.ahead && ns > lim:
			ok = false
		}
	}
	return ok, ""
}

// state is a target's verdict.
type state int

const (
	met state = iota
	withinNoise
	missed
)

// verdict is a target and its state in one run.
type verdict struct {
	target
	state
	missing string // a column the target needs and the run lacks
}

func (v verdict) String() string {
	switch {
	case v.missing != "":
		return fmt.Sprintf("%s: **missed** (no %s column)", v.text, v.missing)
	case v.state == met:
		return v.text + ": met"
	case v.state == withinNoise:
		return v.text + ": within noise"
	}
	return v.text + ": **missed**"
}

// verdicts judges a row's targets for one of our columns. A target is met
// when it holds at the worse ends of the spreads, within noise when it
// holds at the medians only, and missed otherwise.
func verdicts(rw row, lib string) []verdict {
	var out []verdict
	for _, t := range targets[rw.name] {
		if t.lib == "" && lib != "resilience" || t.lib != "" && t.lib != lib {
			continue
		}
		r, ok := find(rw, lib)
		if !ok {
			continue
		}
		v := verdict{target: t, state: missed}
		atMedians, missing := t.holds(rw, r, medians)
		atEnds, _ := t.holds(rw, r, worseEnds)
		switch {
		case missing != "":
			v.missing = missing
		case atEnds:
			v.state = met
		case atMedians:
			v.state = withinNoise
		}
		out = append(out, v)
	}
	return out
}

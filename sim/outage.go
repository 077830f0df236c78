package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// outageConfig sets the outage scenario: M clients send requests at a steady
// rate to one server, which fails every call for a while, then recovers.
// With Refuse below 1 the outage is a brownout: the server, overloaded
// rather than down, refuses that share of the calls and serves the others.
type outageConfig struct {
	Clients     int           // M
	Rate        float64       // requests per second sent by each client
	Duration    time.Duration // length of the run
	OutageStart time.Duration // when the server starts failing
	Outage      time.Duration // how long it fails every call (T)
	Refuse      float64       // share of the calls it refuses meanwhile (0 or 1: every call)
	Capacity    float64       // calls per second the server can serve
	Queue       int           // calls the server lets wait; beyond, it rejects (0: no limit)
	Timeout     time.Duration // a client gives up on an attempt after this long (0: never)
	Transient   float64       // chance that a call the server serves fails anyway, outage or not
	NetMean     time.Duration // mean one-way network delay
	NetSD       time.Duration // its standard deviation
	Bucket      time.Duration // width of one point of the load series
	Tolerance   float64       // drained: load within this fraction of the offered load
}

// offered is the load the clients offer, in calls per second.
func (c outageConfig) offered() float64 { return float64(c.Clients) * c.Rate }

// recovery is when the server stops failing.
func (c outageConfig) recovery() time.Duration { return c.OutageStart + c.Outage }

// refuses reports whether the server, during the outage, refuses a call:
// always in a full outage; in a brownout, with the chance Refuse, drawn
// only then so that full outages draw what they always drew.
func (c outageConfig) refuses(r *rand.Rand) bool {
	return c.Refuse <= 0 || c.Refuse >= 1 || r.Float64() < c.Refuse
}

// outageResult is what one run of the outage scenario measured.
type outageResult struct {
	Policy string
	// Per bucket: calls that reached the server, requests the clients
	// completed and requests they gave up on.
	Load, Succeeded, Failed []int
	// Attempts that failed in each bucket: refused or failed by the server,
	// timed out, or refused by the client's own breaker.
	Failures []int
	// Latencies of the requests that ended within the run, successes and
	// failures alike: from the request's start to its last answer.
	Latencies []time.Duration
	Requests  int // requests the clients sent
	Calls     int // calls that reached the server
	Refused   int // attempts the clients' breakers refused
	// Peak is the highest bucket load divided by the offered load.
	Peak float64
	// Drain is the time from recovery until the load is back within the
	// tolerance of the offered load and no attempt fails; Drained is false
	// when that never happened before the run ended.
	Drain   time.Duration
	Drained bool
}

// Event kinds of the outage scenario.
const (
	evArrive  uint8 = iota // id: client; its next request starts
	evWake                 // id: request; its wait is over
	evServer               // id: request; its call reaches the server
	evOutcome              // id: request; the client learns how the call went
)

type outageRequest struct {
	task     *task
	start    time.Duration // when the request began
	deadline time.Duration // when the client gives up on the current call
	ok       bool          // the current call succeeded
	calls    uint64        // calls made so far, the current one included
}

// errServer is the error of a failed call, as the client's policy sees it.
var errServer = errors.New("sim: server error")

// errRunOver ends the calls still waiting when the run is over.
var errRunOver = errors.New("sim: run over")

// runOutage runs the outage scenario once for one policy. The server serves
// calls in arrival order at its capacity; a call that would wait past the
// queue limit is refused at once, and during the outage every call fails at
// once. A client times out a call that takes too long, though the server
// still does the work. With cfg.Transient, a call the server serves fails
// anyway with that chance: the failures every service has now and then.
// Whether it does is decided by the request and the call's number within
// it, drawn from a source of their own: two policies run with the same
// seed meet the same failures, so that one that makes fewer retries makes
// fewer calls, not other ones.
//
// Each request runs the client's policy (the library's Retry, budget and
// breaker) in a task of its own; the call it guards yields to the loop,
// which answers once the network and the server have had their say.
func runOutage(cfg outageConfig, pol outagePolicy, r *rand.Rand) outageResult {
	var (
		e         engine
		busyUntil time.Duration // when the server will have served every call it took
		reqs      []outageRequest
		salt      uint64 // of the transient failures
	)
	if cfg.Transient > 0 {
		// Drawn only when asked for, so that runs without transient
		// failures draw what they always drew.
		salt = r.Uint64()
	}
	s := newScheduler()
	vc := virtualClock{e: &e, s: s}
	nb := int((cfg.Duration + cfg.Bucket - 1) / cfg.Bucket)
	res := outageResult{
		Policy: pol.Name,
		Load:   make([]int, nb), Succeeded: make([]int, nb),
		Failed: make([]int, nb), Failures: make([]int, nb),
	}
	bucket := func(t time.Duration) int { return min(int(t/cfg.Bucket), nb-1) }
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	service := time.Duration(float64(time.Second) / cfg.Capacity)
	maxWait := time.Duration(cfg.Queue) * service
	delay := func() time.Duration { return netDelay(r, cfg.NetMean, cfg.NetSD) }

	countRefusals := func(g resilience.Guard) resilience.Guard {
		return countingGuard{g: g, refused: func() {
			res.Refused++
			res.Failures[bucket(e.now)]++
		}}
	}
	policies := make([]resilience.Policy[struct{}], cfg.Clients)
	for i := range policies {
		policies[i] = pol.New(vc, r, countRefusals)
		e.at(time.Duration(r.Int64N(int64(interval))), evArrive, int32(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := func(context.Context) (struct{}, error) {
		return struct{}{}, s.suspend(yield{kind: yieldCall})
	}

	// handle acts on what request id's task yielded.
	handle := func(id int32, y yield) {
		q := &reqs[id]
		switch y.kind {
		case yieldSleep:
			e.after(y.d, evWake, id)
		case yieldCall:
			if cfg.Timeout > 0 {
				q.deadline = e.now + cfg.Timeout
			}
			q.calls++
			e.after(delay(), evServer, id)
		case yieldDone:
			q.task = nil
			res.Latencies = append(res.Latencies, e.now-q.start)
			if y.err == nil {
				res.Succeeded[bucket(e.now)]++
			} else {
				res.Failed[bucket(e.now)]++
			}
		}
	}

	e.run(cfg.Duration, func(kind uint8, id int32) {
		switch kind {
		case evArrive:
			if next := e.now + interval; next < cfg.Duration {
				e.at(next, evArrive, id)
			}
			res.Requests++
			p := policies[id]
			rid := int32(len(reqs))
			reqs = append(reqs, outageRequest{start: e.now})
			t, y := s.start(func() error {
				_, err := p.Execute(ctx, call)
				return err
			})
			reqs[rid].task = t
			handle(rid, y)
		case evWake:
			handle(id, s.switchTo(reqs[id].task, nil))
		case evServer:
			q := &reqs[id]
			res.Calls++
			res.Load[bucket(e.now)]++
			reply := e.now + delay()
			q.ok = false
			switch {
			case e.now >= cfg.OutageStart && e.now < cfg.recovery() && cfg.refuses(r):
			case cfg.Queue > 0 && busyUntil-e.now > maxWait:
			default:
				busyUntil = max(busyUntil, e.now) + service
				reply += busyUntil - e.now
				q.ok = cfg.Transient == 0 || unit(mix(mix(salt^uint64(id))^q.calls)) >= cfg.Transient
			}
			if cfg.Timeout > 0 && reply > q.deadline {
				reply, q.ok = q.deadline, false
			}
			e.at(reply, evOutcome, id)
		case evOutcome:
			var err error
			if !reqs[id].ok {
				err = errServer
				res.Failures[bucket(e.now)]++
			}
			handle(id, s.switchTo(reqs[id].task, err))
		}
	})

	// The run is over: end every request still under way, so that no task
	// is left behind. Their outcomes are not counted.
	cancel()
	for id := range reqs {
		for t := reqs[id].task; t != nil; t = reqs[id].task {
			y := s.switchTo(t, errRunOver)
			if y.kind == yieldDone {
				reqs[id].task = nil
			}
		}
	}
	res.measure(cfg)
	return res
}

// measure works out the peak amplification and the drain time from the
// per-bucket series.
func (res *outageResult) measure(cfg outageConfig) {
	perBucket := cfg.offered() * cfg.Bucket.Seconds()
	for _, n := range res.Load {
		res.Peak = max(res.Peak, float64(n)/perBucket)
	}
	first := int(cfg.recovery() / cfg.Bucket)
	last := len(res.Load) - 1 // the final bucket may be partial: ignore it
	settled := last
	for b := last - 1; b >= first; b-- {
		load := float64(res.Load[b])
		if res.Failures[b] > 0 || load > perBucket*(1+cfg.Tolerance) || load < perBucket*(1-cfg.Tolerance) {
			break
		}
		settled = b
	}
	res.Drained = settled < last
	res.Drain = max(0, time.Duration(settled)*cfg.Bucket-cfg.recovery())
}

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
	o := newOutageRun(cfg, pol, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.e.run(cfg.Duration, func(kind uint8, id int32) {
		switch kind {
		case evArrive:
			o.arrive(ctx, id)
		case evWake:
			o.handle(id, o.s.switchTo(o.reqs[id].task, nil))
		case evServer:
			o.serve(id)
		case evOutcome:
			o.outcome(id)
		}
	})
	cancel()
	o.endAll()
	o.res.measure(cfg)
	return o.res
}

// outageRun is one run of the outage scenario under way: the event loop,
// the clients' policies, the server's queue, the requests and what the run
// measures.
type outageRun struct {
	cfg       outageConfig
	r         *rand.Rand
	e         engine
	s         *scheduler
	policies  []resilience.Policy[struct{}] // one per client
	reqs      []outageRequest               // every request, by id
	busyUntil time.Duration                 // when the server will have served every call it took
	salt      uint64                        // of the transient failures
	interval  time.Duration                 // between two requests of a client
	service   time.Duration                 // the server's time for one call
	maxWait   time.Duration                 // the longest wait in the server's queue
	res       outageResult
}

// newOutageRun builds each client's policy and schedules each client's
// first request.
func newOutageRun(cfg outageConfig, pol outagePolicy, r *rand.Rand) *outageRun {
	o := &outageRun{cfg: cfg, r: r, s: newScheduler()}
	if cfg.Transient > 0 {
		// Drawn only when asked for, so that runs without transient
		// failures draw what they always drew.
		o.salt = r.Uint64()
	}
	nb := int((cfg.Duration + cfg.Bucket - 1) / cfg.Bucket)
	o.res = outageResult{
		Policy: pol.Name,
		Load:   make([]int, nb), Succeeded: make([]int, nb),
		Failed: make([]int, nb), Failures: make([]int, nb),
	}
	o.interval = time.Duration(float64(time.Second) / cfg.Rate)
	o.service = time.Duration(float64(time.Second) / cfg.Capacity)
	o.maxWait = time.Duration(cfg.Queue) * o.service
	vc := virtualClock{e: &o.e, s: o.s}
	o.policies = make([]resilience.Policy[struct{}], cfg.Clients)
	for i := range o.policies {
		o.policies[i] = pol.New(vc, r, o.countRefusals)
		o.e.at(time.Duration(r.Int64N(int64(o.interval))), evArrive, int32(i))
	}
	return o
}

// bucket is the point of the series that time t falls in.
func (o *outageRun) bucket(t time.Duration) int {
	return min(int(t/o.cfg.Bucket), len(o.res.Load)-1)
}

// delay draws one network delay.
func (o *outageRun) delay() time.Duration { return netDelay(o.r, o.cfg.NetMean, o.cfg.NetSD) }

// countRefusals puts g behind a guard that counts the calls g refuses as
// failed attempts.
func (o *outageRun) countRefusals(g resilience.Guard) resilience.Guard {
	return countingGuard{g: g, refused: func() {
		o.res.Refused++
		o.res.Failures[o.bucket(o.e.now)]++
	}}
}

// call is the call every policy guards: it yields to the loop, which
// resumes it with the call's outcome.
func (o *outageRun) call(context.Context) (struct{}, error) {
	return struct{}{}, o.s.suspend(yield{kind: yieldCall})
}

// arrive starts client id's next request, in a task of its own, and
// schedules the request after it.
func (o *outageRun) arrive(ctx context.Context, id int32) {
	if next := o.e.now + o.interval; next < o.cfg.Duration {
		o.e.at(next, evArrive, id)
	}
	o.res.Requests++
	p := o.policies[id]
	rid := int32(len(o.reqs))
	o.reqs = append(o.reqs, outageRequest{start: o.e.now})
	t, y := o.s.start(func() error {
		_, err := p.Execute(ctx, o.call)
		return err
	})
	o.reqs[rid].task = t
	o.handle(rid, y)
}

// handle acts on what request id's task yielded.
func (o *outageRun) handle(id int32, y yield) {
	q := &o.reqs[id]
	switch y.kind {
	case yieldSleep:
		o.e.after(y.d, evWake, id)
	case yieldCall:
		if o.cfg.Timeout > 0 {
			q.deadline = o.e.now + o.cfg.Timeout
		}
		q.calls++
		o.e.after(o.delay(), evServer, id)
	case yieldDone:
		q.task = nil
		o.res.Latencies = append(o.res.Latencies, o.e.now-q.start)
		if y.err == nil {
			o.res.Succeeded[o.bucket(o.e.now)]++
		} else {
			o.res.Failed[o.bucket(o.e.now)]++
		}
	}
}

// serve has the server take request id's call: refuse it during the
// outage or when its queue is full, or queue it and serve it. It schedules
// the answer's arrival at the client, or the client's timeout if that
// comes first.
func (o *outageRun) serve(id int32) {
	cfg, now := &o.cfg, o.e.now
	q := &o.reqs[id]
	o.res.Calls++
	o.res.Load[o.bucket(now)]++
	reply := now + o.delay()
	q.ok = false
	switch {
	case now >= cfg.OutageStart && now < cfg.recovery() && cfg.refuses(o.r):
	case cfg.Queue > 0 && o.busyUntil-now > o.maxWait:
	default:
		o.busyUntil = max(o.busyUntil, now) + o.service
		reply += o.busyUntil - now
		q.ok = cfg.Transient == 0 || unit(mix(mix(o.salt^uint64(id))^q.calls)) >= cfg.Transient
	}
	if cfg.Timeout > 0 && reply > q.deadline {
		reply, q.ok = q.deadline, false
	}
	o.e.at(reply, evOutcome, id)
}

// outcome resumes request id's task with how its call went.
func (o *outageRun) outcome(id int32) {
	var err error
	if !o.reqs[id].ok {
		err = errServer
		o.res.Failures[o.bucket(o.e.now)]++
	}
	o.handle(id, o.s.switchTo(o.reqs[id].task, err))
}

// endAll ends every request still under way once the run is over, so that
// no task is left behind. Their outcomes are not counted.
func (o *outageRun) endAll() {
	for id := range o.reqs {
		for t := o.reqs[id].task; t != nil; t = o.reqs[id].task {
			y := o.s.switchTo(t, errRunOver)
			if y.kind == yieldDone {
				o.reqs[id].task = nil
			}
		}
	}
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

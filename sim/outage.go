package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// outageConfig sets the outage scenario: M clients send requests at a steady
// rate to one server, which fails every call for a while, then recovers.
type outageConfig struct {
	Clients     int           // M
	Rate        float64       // requests per second sent by each client
	Duration    time.Duration // length of the run
	OutageStart time.Duration // when the server starts failing
	Outage      time.Duration // how long it fails every call (T)
	Capacity    float64       // calls per second the server can serve
	Queue       int           // calls the server lets wait; beyond, it rejects (0: no limit)
	Timeout     time.Duration // a client gives up on an attempt after this long (0: never)
	NetMean     time.Duration // mean one-way network delay
	NetSD       time.Duration // its standard deviation
	Bucket      time.Duration // width of one point of the load series
	Tolerance   float64       // drained: load within this fraction of the offered load
}

// offered is the load the clients offer, in calls per second.
func (c outageConfig) offered() float64 { return float64(c.Clients) * c.Rate }

// recovery is when the server stops failing.
func (c outageConfig) recovery() time.Duration { return c.OutageStart + c.Outage }

// budget is what the simulation asks of a retry budget: it is told of every
// request (first attempt) and asked before every retry.
type budget interface {
	onRequest()
	allowRetry() bool
}

// outagePolicy is one client-side policy of the outage scenario. Each client
// builds its own backoff, budget and breaker, as separate processes would.
type outagePolicy struct {
	Name       string
	Attempts   int // in all, the first included
	NewBackoff func(r *rand.Rand) resilience.Backoff
	NewBudget  func(c clock.Clock) budget           // nil: no budget
	NewBreaker func(c clock.Clock) resilience.Guard // nil: no breaker
	MaxWait    time.Duration                        // cap on a RetryAfter hint
}

// outageResult is what one run of the outage scenario measured.
type outageResult struct {
	Policy string
	// Per bucket: calls that reached the server, calls it served well,
	// requests the clients completed and requests they gave up on.
	Load, Served, Succeeded, Failed []int
	// Attempts that failed in each bucket: refused or failed by the server,
	// timed out, or refused by the client's own breaker.
	Failures []int
	Requests int // requests the clients sent
	Calls    int // calls that reached the server
	Rejected int // attempts the clients' breakers refused
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
	evArrive  uint8 = iota // id: client; a new request starts
	evAttempt              // id: request; a retry starts
	evServer               // id: request; the attempt reaches the server
	evOutcome              // id: request; the client learns how the attempt went
)

type outageClient struct {
	backoff resilience.Backoff
	budget  budget
	breaker resilience.Guard
}

type outageRequest struct {
	client   int32
	attempt  int
	prev     time.Duration // the wait before the previous retry
	deadline time.Duration // when the client gives up on the current attempt
	ok       bool          // the current attempt succeeded
	done     func(error)   // the breaker's done for the current attempt
}

// errServer is the error of a failed attempt, as the client's breaker sees it.
var errServer = errors.New("sim: server error")

// runOutage runs the outage scenario once for one policy. The server serves
// calls in arrival order at its capacity; a call that would wait past the
// queue limit is refused at once, and during the outage every call fails at
// once. A client times out an attempt that takes too long, though the
// server still does the work.
func runOutage(cfg outageConfig, pol outagePolicy, r *rand.Rand) outageResult {
	var (
		e         engine
		busyUntil time.Duration // when the server will have served every call it took
		reqs      []outageRequest
	)
	vc := virtualClock{&e}
	nb := int((cfg.Duration + cfg.Bucket - 1) / cfg.Bucket)
	res := outageResult{
		Policy: pol.Name,
		Load:   make([]int, nb), Served: make([]int, nb),
		Succeeded: make([]int, nb), Failed: make([]int, nb), Failures: make([]int, nb),
	}
	bucket := func() int { return min(int(e.now/cfg.Bucket), nb-1) }
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	service := time.Duration(float64(time.Second) / cfg.Capacity)
	maxWait := time.Duration(cfg.Queue) * service
	delay := func() time.Duration { return netDelay(r, cfg.NetMean, cfg.NetSD) }

	clients := make([]outageClient, cfg.Clients)
	for i := range clients {
		c := &clients[i]
		c.backoff = pol.NewBackoff(r)
		if pol.NewBudget != nil {
			c.budget = pol.NewBudget(vc)
		}
		if pol.NewBreaker != nil {
			c.breaker = pol.NewBreaker(vc)
		}
		e.at(time.Duration(r.Int64N(int64(interval))), evArrive, int32(i))
	}

	var outcome func(id int32, err error)
	attempt := func(id int32) {
		q := &reqs[id]
		q.attempt++
		q.done = nil
		if b := clients[q.client].breaker; b != nil {
			done, err := b.Enter(context.Background())
			if err != nil {
				res.Rejected++
				outcome(id, err)
				return
			}
			q.done = done
		}
		if cfg.Timeout > 0 {
			q.deadline = e.now + cfg.Timeout
		}
		e.after(delay(), evServer, id)
	}
	outcome = func(id int32, err error) {
		q := &reqs[id]
		if q.done != nil {
			q.done(err)
			q.done = nil
		}
		b := bucket()
		if err == nil {
			res.Succeeded[b]++
			return
		}
		res.Failures[b]++
		c := &clients[q.client]
		if q.attempt < pol.Attempts {
			d, ok := c.backoff.Delay(q.attempt, q.prev)
			if ok && (c.budget == nil || c.budget.allowRetry()) {
				q.prev = d
				var ra interface{ RetryAfter() time.Duration }
				if errors.As(err, &ra) && ra.RetryAfter() > d {
					d = min(ra.RetryAfter(), max(pol.MaxWait, d))
				}
				e.after(d, evAttempt, id)
				return
			}
		}
		res.Failed[b]++
	}

	e.run(cfg.Duration, func(kind uint8, id int32) {
		switch kind {
		case evArrive:
			if next := e.now + interval; next < cfg.Duration {
				e.at(next, evArrive, id)
			}
			reqs = append(reqs, outageRequest{client: id})
			res.Requests++
			if b := clients[id].budget; b != nil {
				b.onRequest()
			}
			attempt(int32(len(reqs) - 1))
		case evAttempt:
			attempt(id)
		case evServer:
			q := &reqs[id]
			res.Calls++
			res.Load[bucket()]++
			reply := e.now + delay()
			q.ok = false
			switch {
			case e.now >= cfg.OutageStart && e.now < cfg.recovery():
			case cfg.Queue > 0 && busyUntil-e.now > maxWait:
			default:
				busyUntil = max(busyUntil, e.now) + service
				reply += busyUntil - e.now
				q.ok = true
			}
			if cfg.Timeout > 0 && reply > q.deadline {
				reply, q.ok = q.deadline, false
			}
			if q.ok {
				res.Served[min(int(busyUntil/cfg.Bucket), nb-1)]++
			}
			e.at(reply, evOutcome, id)
		case evOutcome:
			var err error
			if !reqs[id].ok {
				err = errServer
			}
			outcome(id, err)
		}
	})
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

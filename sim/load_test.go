package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	fslimiter "github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/faf87a20/resilience"
)

// The load scenario: a server of known capacity behind a concurrency
// limiter, offered a load that rises from half its capacity to three times
// and back, with a stretch where its capacity halves. Each limiter runs
// the same calls (the same arrivals, the same service times) on the same
// virtual time line; failsafe-go's reads time.Now, so its run happens in a
// testing/synctest bubble whose fake time follows the simulation's. A
// bubble is only to be had in a test, so the scenario is one.
//
//	go test -run 'TestLoad$' -v                 # the table for seed 1
//	go test -run 'TestLoad$' -args -load charts # and charts/load*.png, charts/load.txt
//	go test -run TestAdaptiveTargets            # the targets, seeds 1–20

// loadConfig is the server and its load.
type loadConfig struct {
	seed     uint64
	workers  int           // at full capacity
	service  time.Duration // mean service time, log-normal
	sigma    float64
	deadline time.Duration // the client gives up after it: an answer later is no goodput
	phases   []loadPhase
	critical float64 // share of calls of PriorityCritical, the rest PrioritySheddable; 0: no priority
	// A mix of endpoints: a share slowShare of the calls take slowFactor
	// times the service time of the others (0: every call alike).
	slowShare, slowFactor float64
}

// loadPhase is a stretch of constant load and capacity.
type loadPhase struct {
	name    string
	d       time.Duration
	load    float64 // offered, times the full capacity
	workers int     // 0: the full number
	slow    float64 // every call's service time times this; 0: 1
	// settle is how long after the phase's start its figures begin; 0:
	// settleAfter.
	settle time.Duration
}

// capacity returns the calls per second the server serves with w workers
// at the service time of the first phase.
func (c loadConfig) capacity(w int) float64 { return float64(w) / c.meanService().Seconds() }

// meanService returns the mean service time of a call, the mix of
// endpoints included.
func (c loadConfig) meanService() time.Duration {
	if c.slowShare == 0 {
		return c.service
	}
	return time.Duration(float64(c.service) * (1 - c.slowShare + c.slowShare*c.slowFactor))
}

// phaseCapacity returns the calls per second the server serves in phase p.
func (c loadConfig) phaseCapacity(p loadPhase) float64 {
	return c.capacity(cmp.Or(p.workers, c.workers)) / cmp.Or(p.slow, 1)
}

// defaultLoad is the scenario: 20 workers at 10 ms a call (2000 calls/s).
func defaultLoad(seed uint64) loadConfig {
	return loadConfig{seed: seed, workers: 20, service: 10 * time.Millisecond, sigma: 0.5, deadline: 100 * time.Millisecond,
		phases: []loadPhase{
			{name: "0.5×", d: 40 * time.Second, load: 0.5},
			{name: "1.5×", d: 20 * time.Second, load: 1.5},
			{name: "2×", d: 20 * time.Second, load: 2},
			{name: "3×", d: 20 * time.Second, load: 3},
			{name: "3×, capacity halved", d: 20 * time.Second, load: 3, workers: 10},
			{name: "3×, capacity back", d: 20 * time.Second, load: 3},
			{name: "2× again", d: 20 * time.Second, load: 2},
			{name: "0.5× again", d: 20 * time.Second, load: 0.5},
		}}
}

// loadGate is a limiter in front of the server, as the simulation drives
// it: enter admits or refuses a call and returns what exit needs.
type loadGate interface {
	enter(ctx context.Context) (token any, ok bool)
	exit(token any)
	limit() float64 // the current limit; NaN for none
}

// guardGate is one of this library's guards, or none.
type guardGate struct {
	g   resilience.Guard // nil: no limiter
	lim func() float64
}

func (g guardGate) enter(ctx context.Context) (any, bool) {
	if g.g == nil {
		return nil, true
	}
	done, err := g.g.Enter(ctx)
	return done, err == nil
}

func (g guardGate) exit(token any) {
	if done, ok := token.(func(error)); ok {
		done(nil)
	}
}

func (g guardGate) limit() float64 {
	if g.lim == nil {
		return math.NaN()
	}
	return g.lim()
}

// failsafeGate is failsafe-go's adaptive limiter. It reads time.Now: sync
// moves the bubble's fake time to the simulation's before each use.
type failsafeGate struct {
	l    fslimiter.AdaptiveLimiter[any]
	sync func()
}

func (g failsafeGate) enter(context.Context) (any, bool) {
	g.sync()
	p, ok := g.l.TryAcquirePermit()
	return p, ok
}

func (g failsafeGate) exit(token any) {
	g.sync()
	token.(fslimiter.Permit).Record()
}

func (g failsafeGate) limit() float64 { return float64(g.l.Limit()) }

// waitGate is the library's AdaptiveLimiter, whose critical calls may
// wait for a slot. A call that may wait enters in a goroutine of its own;
// the loop waits until it is admitted, refused or waiting (its limiter
// then asks loadClock for the wait's deadline, which the loop turns into
// an event). A slot freed by a call's end or a deadline reached wakes
// waiters, each of which tells the loop how its wait ended; the loop
// handles them in the order of their arrival, the limiter's order, so a
// run stays a pure function of its seed.
type waitGate struct {
	l       *resilience.AdaptiveLimiter
	regs    chan waitDeadline
	results chan waitResult

	waiting map[uint64]loadCall // calls waiting in the limiter, by number
	waits   []waitDeadline      // the waits' ends, by event id
	waitOf  []uint64            // the call of each wait
	woken   []wokenCall         // waits ended, not yet handed to the loop
}

// wokenCall is a call whose wait ended: admitted with its token, or
// refused.
type wokenCall struct {
	c     loadCall
	token any
	ok    bool
}

// waitDeadline is when a waiting call's wait ends, and how to end it.
type waitDeadline struct {
	at     time.Duration
	cancel context.CancelFunc
}

// waitResult is how a call's entry ended: its done, or the refusal.
type waitResult struct {
	n    uint64 // the call's number
	done func(error)
	err  error
}

func (g *waitGate) enter(ctx context.Context) (any, bool) {
	done, err := g.l.Enter(ctx)
	return done, err == nil
}

// exit ends an admitted call; the waiters it woke are in g.woken.
func (g *waitGate) exit(token any) {
	q := g.l.Waiting()
	token.(func(error))(nil)
	g.collect(q - g.l.Waiting())
}

func (g *waitGate) limit() float64 { return float64(g.l.Limit()) }

// enterWaiting enters call c, number n, in a goroutine and returns its
// token and whether it was admitted, or, if it waits, schedules the end of
// its wait as event loadWaitEnd on e and returns waiting.
func (g *waitGate) enterWaiting(e *engine, ctx context.Context, c loadCall, n uint64) (token any, ok, waiting bool) {
	go func() {
		done, err := g.l.Enter(ctx)
		g.results <- waitResult{n: n, done: done, err: err}
	}()
	select {
	case r := <-g.results:
		return r.done, r.err == nil, false
	case d := <-g.regs:
		g.waiting[n] = c
		g.waits, g.waitOf = append(g.waits, d), append(g.waitOf, n)
		e.at(d.at, loadWaitEnd, int32(len(g.waits)-1))
		return nil, false, true
	}
}

// endWait ends wait id, unless a slot ended it first.
func (g *waitGate) endWait(id int32) {
	if _, ok := g.waiting[g.waitOf[id]]; ok {
		g.waits[id].cancel()
		g.collect(1)
	}
}

// endWaits ends the waits still running, so that no goroutine outlives
// the run.
func (g *waitGate) endWaits() {
	for id := range g.waitOf {
		g.endWait(int32(id))
	}
}

// collect adds the results of k waiters woken to g.woken, by call number.
func (g *waitGate) collect(k int) {
	rs := make([]waitResult, k)
	for i := range rs {
		rs[i] = <-g.results
	}
	slices.SortFunc(rs, func(a, b waitResult) int { return cmp.Compare(a.n, b.n) })
	for _, r := range rs {
		g.woken = append(g.woken, wokenCall{c: g.waiting[r.n], token: r.done, ok: r.err == nil})
		delete(g.waiting, r.n)
	}
}

// takeWoken returns the calls whose wait ended since it was last asked.
func (g *waitGate) takeWoken() []wokenCall {
	w := g.woken
	g.woken = g.woken[:0:0]
	return w
}

// loadClock is the clock of the waitGate's limiter: the loop's virtual
// time, and deadline contexts (the limiter's waits) that the loop cancels
// when virtual time reaches them. Only a call's goroutine makes one, while
// the loop waits for it in start.
type loadClock struct {
	e    *engine
	regs chan<- waitDeadline
}

func (c loadClock) Now() time.Time { return epoch.Add(c.e.now) }

func (c loadClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	c.regs <- waitDeadline{at: d.Sub(epoch), cancel: cancel}
	return ctx, cancel
}

// deadlineCtx is a call's context: it carries the client's deadline in
// virtual time, so that the limiter knows how long the call may wait. The
// client gives up by itself; the context never ends.
type deadlineCtx struct {
	context.Context
	at time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }

// loadContender is one limiter of the scenario.
type loadContender struct {
	name string
	// run calls body with the gate, made on clock c; failsafe-go's runs
	// body in a bubble.
	run func(t *testing.T, c resilience.Clock, e *engine, body func(loadGate))
}

func guardContender(name string, make func(c resilience.Clock) (resilience.Guard, func() float64)) loadContender {
	return loadContender{name: name, run: func(_ *testing.T, c resilience.Clock, _ *engine, body func(loadGate)) {
		g, lim := make(c)
		body(guardGate{g: g, lim: lim})
	}}
}

func bulkheadContender(name string, size int) loadContender {
	return guardContender(name, func(resilience.Clock) (resilience.Guard, func() float64) {
		return resilience.NewBulkhead(size), func() float64 { return float64(size) }
	})
}

// ourOptions configure the library's AdaptiveLimiter in the scenario: its
// defaults, but that a critical call that finds the limit reached waits
// for a slot, as long as its deadline leaves time for an answer (the other
// priorities are refused at once).
var ourOptions = []resilience.AdaptiveLimiterOption{resilience.WithAdaptiveWait(100 * time.Millisecond),
	resilience.WithAdaptiveWaitPriority(resilience.PriorityCritical)}

var (
	oursContender = loadContender{name: "AdaptiveLimiter", run: func(_ *testing.T, _ resilience.Clock, e *engine, body func(loadGate)) {
		g := &waitGate{regs: make(chan waitDeadline), results: make(chan waitResult), waiting: map[uint64]loadCall{}}
		g.l = resilience.NewAdaptiveLimiter(append([]resilience.AdaptiveLimiterOption{
			resilience.WithClock(loadClock{e: e, regs: g.regs})}, ourOptions...)...)
		body(g)
	}}
	failsafeContender = loadContender{name: "failsafe-go", run: func(t *testing.T, _ resilience.Clock, e *engine, body func(loadGate)) {
		synctest.Test(t, func(*testing.T) {
			start := time.Now()
			l := fslimiter.NewWithDefaults[any]()
			body(failsafeGate{l: l, sync: func() {
				if d := e.now - time.Since(start); d > 0 {
					time.Sleep(d)
				}
			}})
		})
	}}
)

// loadContenders are the limiters of the scenario, ours first: the
// bulkheads are sized for the full capacity (20 workers, so 20 calls in
// flight, no queue) and four times that.
var loadContenders = []loadContender{
	oursContender,
	bulkheadContender("Bulkhead(20)", 20),
	bulkheadContender("Bulkhead(80)", 80),
	guardContender("no limiter", func(resilience.Clock) (resilience.Guard, func() float64) { return nil, nil }),
	failsafeContender,
}

// loadBucket is one second of a run.
type loadBucket struct {
	offered, admitted, good  int
	offeredCrit, refusedCrit int
	lateCrit                 int // critical calls answered after their deadline
	refusedLow               int
	latencies                []time.Duration // of the calls answered in the second
	limit                    float64         // at its end
	workers                  int
	capacity                 float64 // calls per second the server serves
}

// loadResult is one contender's run.
type loadResult struct {
	name    string
	buckets []loadBucket
}

type loadCall struct {
	arrived  time.Duration
	service  time.Duration
	critical bool
	token    any
}

const (
	loadArrive uint8 = iota
	loadFinish
	loadTick
	loadWaitEnd
)

// runLoad runs one contender through the scenario.
func runLoad(t *testing.T, cfg loadConfig, ct loadContender) loadResult {
	e := &engine{}
	res := loadResult{name: ct.name}
	ct.run(t, virtualClock{e: e}, e, func(g loadGate) { res.buckets = simulateLoad(e, cfg, g) })
	return res
}

// call returns the n-th call of the run, arrived at t: its service time, a
// log-normal of mean cfg.service, and whether it is critical, drawn from
// the seed and n alone.
func (cfg loadConfig) call(n uint64, t time.Duration, slow float64) loadCall {
	h := mix(cfg.seed ^ mix(n))
	mean := float64(cfg.service) * cmp.Or(slow, 1)
	if cfg.slowShare > 0 && unit(mix(h^0x1b873593)) < cfg.slowShare {
		mean *= cfg.slowFactor
	}
	mu := math.Log(mean) - cfg.sigma*cfg.sigma/2
	// Box–Muller from two halves of the hash.
	u1, u2 := max(unit(h), 1e-12), unit(mix(h))
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return loadCall{arrived: t, service: time.Duration(math.Exp(mu + cfg.sigma*z)),
		critical: cfg.critical > 0 && unit(mix(h^0x5bd1e995)) < cfg.critical}
}

// simulateLoad is the event loop of one run: Poisson arrivals at the
// phase's rate, drawn from the seed alone, so that every contender meets
// the same calls; a call's service time is log-normal, drawn from the seed
// and the call's number. Admitted calls wait in a FIFO queue for a worker.
// The server does not know the client's deadline: it serves every call it
// admitted, and one answered after the deadline is no goodput.
func simulateLoad(e *engine, cfg loadConfig, g loadGate) []loadBucket {
	arrivals := newRand(cfg.seed, 7)
	var total time.Duration
	for _, p := range cfg.phases {
		total += p.d
	}
	buckets := make([]loadBucket, int(total/time.Second))
	srv := &loadServer{e: e, workers: cmp.Or(cfg.phases[0].workers, cfg.workers)}
	phase, phaseEnd := 0, cfg.phases[0].d
	wg, _ := g.(*waitGate)
	n := uint64(0) // calls offered so far
	critical := resilience.WithPriority(context.Background(), resilience.PriorityCritical)
	sheddable := resilience.WithPriority(context.Background(), resilience.PrioritySheddable)
	next := func() {
		rate := cfg.phases[phase].load * cfg.capacity(cfg.workers)
		e.after(time.Duration(arrivals.ExpFloat64()/rate*float64(time.Second)), loadArrive, 0)
	}
	next()
	e.after(time.Second, loadTick, 0)
	e.run(total, func(kind uint8, id int32) {
		b := &buckets[min(int(e.now/time.Second), len(buckets)-1)]
		switch kind {
		case loadArrive:
			n++
			c := cfg.call(n, e.now, cfg.phases[phase].slow)
			ctx := context.Background()
			if cfg.critical > 0 {
				ctx = sheddable
				if c.critical {
					ctx = critical
					b.offeredCrit++
				}
			}
			b.offered++
			var token any
			var ok, waiting bool
			if wg != nil && c.critical {
				token, ok, waiting = wg.enterWaiting(e, deadlineCtx{ctx, epoch.Add(e.now + cfg.deadline)}, c, n)
			} else {
				token, ok = g.enter(ctx)
			}
			if !waiting {
				srv.settle(b, c, token, ok)
			}
			next()
		case loadFinish:
			c := srv.finish(id)
			lat := e.now - c.arrived
			b.latencies = append(b.latencies, lat)
			if lat <= cfg.deadline {
				b.good++
			} else if c.critical {
				b.lateCrit++
			}
			g.exit(c.token)
			srv.settleWoken(b, wg)
			srv.start()
		case loadWaitEnd:
			wg.endWait(id)
			srv.settleWoken(b, wg)
		case loadTick:
			b := &buckets[int(e.now/time.Second)-1]
			b.limit, b.workers = g.limit(), srv.workers
			b.capacity = cfg.phaseCapacity(cfg.phases[phase])
			if e.now >= phaseEnd && phase < len(cfg.phases)-1 {
				phase++
				phaseEnd += cfg.phases[phase].d
				srv.workers = cmp.Or(cfg.phases[phase].workers, cfg.workers)
				srv.start() // the capacity may have grown
			}
			e.after(time.Second, loadTick, 0)
		}
	})
	if wg != nil {
		wg.endWaits()
		srv.settleWoken(&buckets[len(buckets)-1], wg)
	}
	return buckets
}

// loadServer is the server of the load scenario: its workers, and the
// calls admitted, served in the order of their admission.
type loadServer struct {
	e           *engine
	workers     int        // now
	busy        int        // workers serving a call
	calls       []loadCall // admitted calls, by slot
	free, queue []int32    // free slots; slots waiting for a worker
}

// start hands calls waiting to the workers free.
func (s *loadServer) start() {
	for s.busy < s.workers && len(s.queue) > 0 {
		id := s.queue[0]
		s.queue = s.queue[1:]
		s.busy++
		s.e.after(s.calls[id].service, loadFinish, id)
	}
}

// settle counts call c in b as admitted with token (ok) or refused; an
// admitted call joins the queue.
func (s *loadServer) settle(b *loadBucket, c loadCall, token any, ok bool) {
	switch {
	case !ok && c.critical:
		b.refusedCrit++
		return
	case !ok:
		b.refusedLow++
		return
	}
	b.admitted++
	c.token = token
	var slot int32
	if k := len(s.free); k > 0 {
		slot, s.free = s.free[k-1], s.free[:k-1]
		s.calls[slot] = c
	} else {
		slot = int32(len(s.calls))
		s.calls = append(s.calls, c)
	}
	s.queue = append(s.queue, slot)
	s.start()
}

// settleWoken settles the calls whose wait in wg ended, in their order.
func (s *loadServer) settleWoken(b *loadBucket, wg *waitGate) {
	if wg == nil {
		return
	}
	for _, w := range wg.takeWoken() {
		s.settle(b, w.c, w.token, w.ok)
	}
}

// finish frees the worker and the slot of call id, and returns the call.
func (s *loadServer) finish(id int32) loadCall {
	c := s.calls[id]
	s.calls[id].token = nil
	s.busy--
	s.free = append(s.free, id)
	return c
}

// quantile returns the q-quantile of d, sorted in place.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(int(q*float64(len(d))), len(d)-1)]
}

// throttleConfig is the brownout the client-side throttle meets: clients
// whose calls a server accepts up to a rate, half the offered load during
// the brownout and all of it outside; it answers at once, refusing what
// it does not accept with an overload error.
type throttleConfig struct {
	seed          uint64
	clients       int
	rate          float64 // calls per second, each client
	from, to, end time.Duration
	accept        float64 // share of the offered load accepted during the brownout
	opts          []resilience.AdaptiveThrottlerOption
}

func defaultThrottle(seed uint64) throttleConfig {
	return throttleConfig{seed: seed, clients: 20, rate: 50, from: 15 * time.Second, to: 45 * time.Second, end: 60 * time.Second, accept: 0.5}
}

// throttleBucket is 100 ms of the brownout run.
type throttleBucket struct{ offered, sent, accepted int }

// runThrottle runs the clients, each with a throttle of its own, through
// the brownout, and returns what happened every 100 ms.
func runThrottle(cfg throttleConfig) []throttleBucket {
	e := &engine{}
	clk := virtualClock{e: e}
	r := newRand(cfg.seed, 8)
	throttles := make([]*resilience.AdaptiveThrottler, cfg.clients)
	for i := range throttles {
		opts := append([]resilience.AdaptiveThrottlerOption{resilience.WithClock(clk),
			resilience.WithRand(newRand(cfg.seed, 9, uint64(i)))}, cfg.opts...)
		throttles[i] = resilience.NewAdaptiveThrottler(opts...)
	}
	const bucket = 100 * time.Millisecond
	buckets := make([]throttleBucket, int(cfg.end/bucket))
	// The server's acceptance during the brownout is a token bucket of the
	// accepted rate, with a burst of 50 ms of it.
	offered := float64(cfg.clients) * cfg.rate
	burst := cfg.accept * offered / 20
	tokens, last := burst, time.Duration(0)
	ctx := context.Background()
	for i := range cfg.clients {
		e.after(time.Duration(r.ExpFloat64()/cfg.rate*float64(time.Second)), 0, int32(i))
	}
	e.run(cfg.end, func(_ uint8, id int32) {
		b := &buckets[min(int(e.now/bucket), len(buckets)-1)]
		b.offered++
		if done, err := throttles[id].Enter(ctx); err == nil {
			b.sent++
			ok := true
			if e.now >= cfg.from && e.now < cfg.to {
				tokens = min(burst, tokens+(e.now-last).Seconds()*cfg.accept*offered)
				last = e.now
				ok = tokens >= 1
				if ok {
					tokens--
				}
			}
			if ok {
				b.accepted++
				done(nil)
			} else {
				done(resilience.ErrBulkheadFull)
			}
		}
		e.after(time.Duration(r.ExpFloat64()/cfg.rate*float64(time.Second)), 0, id)
	})
	return buckets
}

// throttleFigures returns the load on the server over what it accepted
// from settle after the brownout began to its end, and the time from the
// brownout's end until the clients send, every second after, at least 95%
// of what they are offered.
func throttleFigures(cfg throttleConfig, b []throttleBucket, settle time.Duration) (load float64, recovery time.Duration) {
	const bucket = 100 * time.Millisecond
	var sent, accepted int
	for _, x := range b[int((cfg.from+settle)/bucket):int(cfg.to/bucket)] {
		sent += x.sent
		accepted += x.accepted
	}
	load = float64(sent) / float64(max(accepted, 1))
	// The last second that sent less than 95%, ending on a bucket.
	end := int(cfg.to / bucket)
	for i := len(b); i-10 >= end; i-- {
		var off, s int
		for _, x := range b[i-10 : i] {
			off += x.offered
			s += x.sent
		}
		if float64(s) < 0.95*float64(off) {
			return load, time.Duration(i-end) * bucket
		}
	}
	return load, 0
}

// loadFigures are what one run shows, phase by phase.
type loadFigures struct {
	name   string
	phases []phaseFigures
}

// phaseFigures are one phase's: from settleAfter into it to its end, the
// goodput and the p99 latency of the calls answered, the share of the
// offered calls refused and the median limit; and how long after the
// phase began its seconds, every one after, had a goodput of at least 90%
// of what the server could serve and a p99 latency of at most twice the
// unloaded p99 (the phase's length: never).
type phaseFigures struct {
	goodput  float64 // calls per second answered within the deadline
	capacity float64 // calls per second the server serves
	p99      time.Duration
	refused  float64
	limit    float64
	settled  time.Duration
}

const settleAfter = 10 * time.Second

// unloadedP99 is the p99 latency of the server without load: of the calls
// answered in the first phase after its first 10 s, with no limiter.
func unloadedP99(cfg loadConfig, r loadResult) time.Duration {
	var lat []time.Duration
	for _, b := range r.buckets[int(settleAfter/time.Second):int(cfg.phases[0].d/time.Second)] {
		lat = append(lat, b.latencies...)
	}
	return quantile(lat, 0.99)
}

// unloadedOf runs cfg's first phase with no limiter and returns its
// unloaded p99.
func unloadedOf(t *testing.T, cfg loadConfig) time.Duration {
	cfg.phases = cfg.phases[:1]
	return unloadedP99(cfg, runLoad(t, cfg, loadContenders[3]))
}

func figures(cfg loadConfig, r loadResult, unloaded time.Duration) loadFigures {
	f := loadFigures{name: r.name}
	from := 0
	for _, p := range cfg.phases {
		to := from + int(p.d/time.Second)
		var pf phaseFigures
		var good, offered, admitted int
		var lat []time.Duration
		var limits []float64
		skip := int(cmp.Or(p.settle, settleAfter) / time.Second)
		for _, b := range r.buckets[from+skip : to] {
			good += b.good
			offered += b.offered
			admitted += b.admitted
			lat = append(lat, b.latencies...)
			limits = append(limits, b.limit)
		}
		secs := float64(to - from - skip)
		pf.goodput = float64(good) / secs
		pf.capacity = cfg.phaseCapacity(p)
		pf.p99 = quantile(lat, 0.99)
		pf.refused = 1 - float64(admitted)/float64(max(offered, 1))
		slices.Sort(limits)
		pf.limit = limits[len(limits)/2]
		// Settled from the second after the last that missed: goodput is
		// judged over that second and the next (a probe halves the limit for
		// a fraction of a second, and may straddle two), the p99 over the
		// second alone.
		pf.settled = 0
		for i := to - 1; i >= from; i-- {
			b, next := r.buckets[i], r.buckets[min(i+1, to-1)]
			good, could := float64(b.good), min(float64(b.offered), b.capacity)
			if i+1 < to {
				good, could = good+float64(next.good), could+min(float64(next.offered), next.capacity)
			}
			lat := slices.Clone(b.latencies)
			if good < 0.9*could || quantile(lat, 0.99) > 2*time.Duration(cmp.Or(p.slow, 1)*float64(unloaded)) {
				pf.settled = time.Duration(i+1-from) * time.Second
				break
			}
		}
		f.phases = append(f.phases, pf)
		from = to
	}
	return f
}

// runLoadAll runs every contender through cfg and returns their runs and
// the unloaded p99.
func runLoadAll(t *testing.T, cfg loadConfig) ([]loadResult, time.Duration) {
	var rs []loadResult
	var unloaded time.Duration
	for _, ct := range loadContenders {
		r := runLoad(t, cfg, ct)
		if ct.name == "no limiter" {
			unloaded = unloadedP99(cfg, r)
		}
		rs = append(rs, r)
	}
	return rs, unloaded
}

// priorityRun is how long a priority run lasts: 20 s at half the capacity,
// then twice the capacity. Its figures are taken from 30 s to the end. At
// exactly the capacity the share refused is mostly the luck of the sample:
// over one minute the critical calls of one seed bring 0.9% more work
// than the capacity serves, so that no admission could answer all but 1%
// in time; over four and a half no seed's exceeds it by more than 0.27%,
// and the figure measures the limiter.
const priorityRun = 5 * time.Minute

// priorityFigures runs the limiter for priorityRun, a share crit of the
// calls critical, the rest sheddable, and returns the shares of
// priorityShares from 30 s to the end.
func priorityFigures(t *testing.T, seed uint64, crit float64) (critFailed, critLate, lowRefused float64) {
	return priorityShares(priorityLoad(t, seed, crit).buckets[30:])
}

// priorityLoad is the run of priorityFigures.
func priorityLoad(t *testing.T, seed uint64, crit float64) loadResult {
	cfg := defaultLoad(seed)
	cfg.critical = crit
	cfg.phases = []loadPhase{{name: "0.5×", d: 20 * time.Second, load: 0.5}, {name: "2×", d: priorityRun - 20*time.Second, load: 2}}
	return runLoad(t, cfg, oursContender)
}

// priorityShares returns, over the seconds bs, the share of the critical
// calls refused or answered after their deadline (a critical call may
// wait for a slot: one that waited too long is no better than one
// refused), of those answered late, and of the sheddable calls refused.
func priorityShares(bs []loadBucket) (critFailed, critLate, lowRefused float64) {
	var oc, rc, lc, rl, off int
	for _, b := range bs {
		oc += b.offeredCrit
		rc += b.refusedCrit
		lc += b.lateCrit
		rl += b.refusedLow
		off += b.offered
	}
	return float64(rc+lc) / float64(oc), float64(lc) / float64(oc), float64(rl) / float64(off-oc)
}

// priorityBound is what the best FIFO queue could do with priorityFigures'
// calls: the critical calls alone (the sheddable all refused) in front of
// the server's workers, each refused only if it would wait longer than
// wait for a worker, known exactly. It returns the share of the critical
// calls refused over the same time.
func priorityBound(seed uint64, crit float64, wait time.Duration) float64 {
	cfg := defaultLoad(seed)
	cfg.critical = crit
	arrivals := newRand(cfg.seed, 7)
	free := make([]time.Duration, cfg.workers) // when each worker is free, a min-heap
	var now time.Duration
	var offered, refused int
	for n := uint64(1); now < priorityRun; n++ {
		load := 0.5
		if now >= 20*time.Second {
			load = 2
		}
		now += time.Duration(arrivals.ExpFloat64() / (load * cfg.capacity(cfg.workers)) * float64(time.Second))
		c := cfg.call(n, now, 0)
		if load == 2 && !c.critical {
			continue
		}
		ok := max(now, free[0])-now <= wait
		if ok {
			free[0] = max(now, free[0]) + c.service
			siftDown(free)
		}
		if now >= 30*time.Second {
			offered++
			if !ok {
				refused++
			}
		}
	}
	return float64(refused) / float64(offered)
}

// siftDown restores the min-heap h after h[0] grew.
func siftDown(h []time.Duration) {
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l] < h[m] {
			m = l
		}
		if r < len(h) && h[r] < h[m] {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// driftFigures holds the limiter at 1.5 times the capacity for eleven
// minutes and returns the median limit over the 20 s around the first
// minute and around the tenth.
func driftFigures(t *testing.T, seed uint64) (first, tenth float64) {
	cfg := defaultLoad(seed)
	cfg.phases = []loadPhase{{name: "1.5×", d: 11 * time.Minute, load: 1.5}}
	r := runLoad(t, cfg, oursContender)
	median := func(from, to int) float64 {
		var l []float64
		for _, b := range r.buckets[from:to] {
			l = append(l, b.limit)
		}
		slices.Sort(l)
		return l[len(l)/2]
	}
	return median(50, 70), median(590, 610)
}

// loadDir is where TestLoad writes the scenario's tables and charts.
var loadDir = flag.String("load", "", "write the load scenario's tables and charts to this folder")

// throttleTuned is the throttle of the brownout run: K = 1.15, so that the
// clients send at most about 1.15 times what the service accepts, over a
// window of 500 ms, short enough that they find out within seconds that it
// has recovered, refusing at most 80% of the calls, so that no client's
// share drifts to nothing. The defaults (K = 2, 10 s, no cap) send twice
// what it accepts.
var throttleTuned = []resilience.AdaptiveThrottlerOption{resilience.WithThrottleK(1.15),
	resilience.WithThrottleWindow(500 * time.Millisecond), resilience.WithThrottleMaxRatio(0.8)}

// tunedThrottle is the brownout run of the targets: 5 clients of 200
// calls a second each, with throttleTuned.
func tunedThrottle(seed uint64) throttleConfig {
	c := defaultThrottle(seed)
	c.clients, c.rate, c.opts = 5, 200, throttleTuned
	return c
}

// TestLoad runs the load scenario for seed 1 and logs its table; with
// -load it also runs seeds 1–20 for the ranges of the targets, and writes
// load.txt and the charts.
func TestLoad(t *testing.T) {
	cfg := defaultLoad(1)
	rs, unloaded := runLoadAll(t, cfg)
	var table strings.Builder
	writeLoadTable(&table, cfg, rs, unloaded)
	t.Log("\n" + table.String())
	if *loadDir == "" {
		return
	}
	writeSeedRanges(t, &table)
	if err := os.WriteFile(filepath.Join(*loadDir, "load.txt"), []byte(table.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := drawLoad(*loadDir, cfg, rs, unloaded); err != nil {
		t.Fatal(err)
	}
}

// writeLoadTable writes, for each limiter, the goodput (as a share of the
// capacity) and the p99 latency of each phase after its first 10 s, the
// worst settling time and the median limit at 3×, full and halved.
func writeLoadTable(w io.Writer, cfg loadConfig, rs []loadResult, unloaded time.Duration) {
	fmt.Fprintf(w, "Load: %d workers, service time log-normal of mean %v (σ %.1f), so %.0f calls/s; Poisson arrivals; a call's deadline %v; seed %d. Unloaded p99 %v.\n\n",
		cfg.workers, cfg.service, cfg.sigma, cfg.capacity(cfg.workers), cfg.deadline, cfg.seed, unloaded.Round(100*time.Microsecond))
	phases := cfg.phases[1:7]
	fmt.Fprint(w, "| limiter | goodput:")
	for _, p := range phases {
		fmt.Fprintf(w, " %s |", p.name)
	}
	fmt.Fprint(w, " p99:")
	for _, p := range phases {
		fmt.Fprintf(w, " %s |", p.name)
	}
	fmt.Fprintln(w, " settled within | limit at 3× (halved) |")
	fmt.Fprintln(w, "| --- |"+strings.Repeat(" ---: |", 2*len(phases)+2))
	for _, r := range rs {
		f := figures(cfg, r, unloaded)
		fmt.Fprintf(w, "| %s |", r.name)
		for _, p := range f.phases[1:7] {
			fmt.Fprintf(w, " %.0f%% |", 100*p.goodput/p.capacity)
		}
		var settled time.Duration
		for _, p := range f.phases[1:7] {
			fmt.Fprintf(w, " %v |", p.p99.Round(time.Millisecond))
			settled = max(settled, p.settled)
		}
		s := settled.String()
		if settled >= 20*time.Second {
			s = "never"
		}
		lim := "–"
		if !math.IsNaN(f.phases[3].limit) {
			lim = fmt.Sprintf("%.0f (%.0f)", f.phases[3].limit, f.phases[4].limit)
		}
		fmt.Fprintf(w, " %s | %s |\n", s, lim)
	}
	fmt.Fprintln(w, "\ngoodput: calls answered within their deadline per second over the capacity, after each phase's first 10 s; p99: of the calls admitted and answered then.")
	fmt.Fprintln(w, "settled within: the longest time after a change until every second had a p99 within twice the unloaded one and, with the next, a goodput of 90% of what they could (\"never\": not within the phase).")
}

// writeSeedRanges runs the targets' figures for seeds 1–20 and writes their
// ranges.
func writeSeedRanges(t *testing.T, w io.Writer) {
	type seedFigures struct {
		good, p99x, settle, drift, crit50, crit50min, late50, bound50, crit45, low50, thLoad, thRec, thLoadDef float64
	}
	all := make([]seedFigures, 20)
	parallel(runtime.GOMAXPROCS(0), len(all), func(i int) {
		all[i] = seedFigures{good: math.Inf(1)}
		s := &all[i]
		seed := uint64(i + 1)
		cfg := defaultLoad(seed)
		unloaded := unloadedOf(t, cfg)
		f := figures(cfg, runLoad(t, cfg, oursContender), unloaded)
		for k, p := range f.phases[1:7] {
			if cfg.phases[k+1].load >= 2 {
				s.good = min(s.good, p.goodput/p.capacity)
			}
			s.p99x = max(s.p99x, float64(p.p99)/float64(unloaded))
			s.settle = max(s.settle, p.settled.Seconds())
		}
		a, b := driftFigures(t, seed)
		s.drift = (b - a) / a
		r50 := priorityLoad(t, seed, 0.5)
		s.crit50, s.late50, s.low50 = priorityShares(r50.buckets[30:])
		s.crit50min, _, _ = priorityShares(r50.buckets[30:90])
		s.bound50 = priorityBound(seed, 0.5, 58*time.Millisecond)
		s.crit45, _, _ = priorityFigures(t, seed, 0.45)
		tc := tunedThrottle(seed)
		load, rec := throttleFigures(tc, runThrottle(tc), time.Second)
		s.thLoad, s.thRec = load, rec.Seconds()
		def := defaultThrottle(seed)
		def.clients, def.rate = tc.clients, tc.rate
		s.thLoadDef, _ = throttleFigures(def, runThrottle(def), 10*time.Second)
	})
	rng := func(f func(seedFigures) float64, format string, scale float64) string {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range all {
			lo, hi = min(lo, f(s)*scale), max(hi, f(s)*scale)
		}
		return fmt.Sprintf(format+" – "+format, lo, hi)
	}
	fmt.Fprintln(w, "\nAdaptiveLimiter and AdaptiveThrottler, seeds 1–20 (TestAdaptiveTargets checks them):")
	fmt.Fprintln(w, "\n| target | wanted | seeds 1–20 |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	fmt.Fprintf(w, "| goodput at 2× and 3× (capacity full and halved) | ≥ 90%% of capacity | %s |\n", rng(func(s seedFigures) float64 { return s.good }, "%.1f%%", 100))
	fmt.Fprintf(w, "| p99 of admitted calls, overloaded, settled | ≤ 2× unloaded | %s |\n", rng(func(s seedFigures) float64 { return s.p99x }, "%.2f×", 1))
	fmt.Fprintf(w, "| settled after each change | ≤ 10 s | %s |\n", rng(func(s seedFigures) float64 { return s.settle }, "%.0f s", 1))
	fmt.Fprintf(w, "| limit after 10 min of 1.5× over after 1 min | within ±10%% | %s |\n", rng(func(s seedFigures) float64 { return s.drift }, "%+.1f%%", 100))
	fmt.Fprintf(w, "| critical refused or late, 2× for 4.5 min, 45%% critical (0.9× capacity) | < 1%% | %s |\n", rng(func(s seedFigures) float64 { return s.crit45 }, "%.2f%%", 100))
	fmt.Fprintf(w, "| critical refused or late, 2× for 4.5 min, 50%% critical (1.0× capacity) | < 1%% | %s |\n", rng(func(s seedFigures) float64 { return s.crit50 }, "%.2f%%", 100))
	fmt.Fprintf(w, "| of which late (waited, then answered after the deadline) | – | %s |\n", rng(func(s seedFigures) float64 { return s.late50 }, "%.2f%%", 100))
	fmt.Fprintf(w, "| the same calls, a FIFO queue knowing each wait, none over 58 ms | – | %s |\n", rng(func(s seedFigures) float64 { return s.bound50 }, "%.2f%%", 100))
	fmt.Fprintf(w, "| critical refused or late, 50%%, its first minute alone | – | %s |\n", rng(func(s seedFigures) float64 { return s.crit50min }, "%.2f%%", 100))
	fmt.Fprintf(w, "| sheddable refused, same run | the shed load | %s |\n", rng(func(s seedFigures) float64 { return s.low50 }, "%.1f%%", 100))
	fmt.Fprintf(w, "| throttle (K 1.15, 500 ms, at most 80%%): load in a brownout over accepted | ≤ 1.2× | %s |\n", rng(func(s seedFigures) float64 { return s.thLoad }, "%.3f×", 1))
	fmt.Fprintf(w, "| throttle (K 1.15, 500 ms, at most 80%%): back to 95%% sent after it | ≤ 5 s | %s |\n", rng(func(s seedFigures) float64 { return s.thRec }, "%.1f s", 1))
	fmt.Fprintf(w, "| throttle defaults (K 2, 10 s): load in a brownout over accepted | – | %s |\n", rng(func(s seedFigures) float64 { return s.thLoadDef }, "%.3f×", 1))
}

// drawLoad draws the three charts of the load scenario: the limit beside
// the workers, the goodput beside the capacity, and the p99 latency.
func drawLoad(dir string, cfg loadConfig, rs []loadResult, unloaded time.Duration) error {
	limit := newPlot("Load: the limit beside the server's workers (seed 1)", "time (s)", "calls in flight allowed")
	good := newPlot("Load: goodput (calls answered within 100 ms)", "time (s)", "calls per second")
	p99 := newPlot("Load: p99 latency of the calls admitted", "time (s)", "ms (log scale)")
	p99.Y.Scale = plot.LogScale{}
	p99.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var workers, capacity plotter.XYs
	for i, b := range rs[0].buckets {
		x := float64(i) + 0.5
		workers = append(workers, plotter.XY{X: x, Y: float64(b.workers)})
		capacity = append(capacity, plotter.XY{X: x, Y: b.capacity})
	}
	if err := addLine(limit, "workers", 6, workers); err != nil {
		return err
	}
	if err := addLine(good, "capacity", 6, capacity); err != nil {
		return err
	}
	for i, r := range rs {
		var lxy, gxy, pxy plotter.XYs
		for k, b := range r.buckets {
			x := float64(k) + 0.5
			if !math.IsNaN(b.limit) {
				lxy = append(lxy, plotter.XY{X: x, Y: b.limit})
			}
			gxy = append(gxy, plotter.XY{X: x, Y: float64(b.good)})
			if q := quantile(slices.Clone(b.latencies), 0.99); q > 0 {
				pxy = append(pxy, plotter.XY{X: x, Y: min(float64(q)/1e6, 10000)})
			}
		}
		if len(lxy) > 0 {
			if err := addLine(limit, r.name, i, lxy); err != nil {
				return err
			}
		}
		if err := addLine(good, r.name, i, gxy); err != nil {
			return err
		}
		if err := addLine(p99, r.name, i, pxy); err != nil {
			return err
		}
	}
	addRule(p99, "2× unloaded p99", 2*float64(unloaded)/1e6, palette[6])
	limit.Y.Min, limit.Y.Max = 0, 140
	good.Y.Min, good.Y.Max = 0, 2600
	good.Legend.Top = false
	for _, c := range []struct {
		p    *plot.Plot
		name string
	}{{limit, "load-limit"}, {good, "load-goodput"}, {p99, "load-p99"}} {
		c.p.Legend.Left = false
		if err := save(c.p, filepath.Join(dir, c.name+".png"), 20*vg.Centimeter, 10*vg.Centimeter); err != nil {
			return err
		}
	}
	return nil
}

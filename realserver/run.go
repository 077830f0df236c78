package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// scenario is a server and the load it is offered, phase by phase.
type scenario struct {
	name     string
	workers  int           // slots at full capacity
	service  time.Duration // mean service time at full capacity
	sigma    float64       // of the log-normal service time
	deadline time.Duration // the client's, per request
	// A mix of endpoints: a share slowShare of the requests take
	// slowFactor times as long (0: every request alike).
	slowShare, slowFactor float64
	phases                []phase
}

// phase is a stretch of the run.
type phase struct {
	name    string
	d       time.Duration
	load    float64 // offered, times the full capacity at the scenario's service time
	slow    float64 // the service time is this many times the scenario's; 0: 1
	rampTo  float64 // if set, slow moves linearly to this over the phase
	workers int     // 0: the scenario's
	settle  time.Duration
	want    target
}

// target is what a phase checks of the limiter.
type target int

const (
	noTarget   target = iota
	overloaded        // goodput ≥ 90% of the capacity, p99 ≤ 2× the unloaded p99
	light             // at most 1% refused
	recovery          // goodput back within 10% of the phase before the last within 5 s
)

// meanService returns the mean service time at slow, mix included.
func (sc scenario) meanService(slow float64) time.Duration {
	m := float64(sc.service) * cmp.Or(slow, 1)
	if sc.slowShare > 0 {
		m *= 1 - sc.slowShare + sc.slowShare*sc.slowFactor
	}
	return time.Duration(m)
}

// capacity returns the requests per second the server serves with w
// slots at slow.
func (sc scenario) capacity(w int, slow float64) float64 {
	return float64(cmp.Or(w, sc.workers)) / sc.meanService(slow).Seconds()
}

func (sc scenario) length() time.Duration {
	var d time.Duration
	for _, p := range sc.phases {
		d += p.d
	}
	return d
}

// contender is a guard in front of the server.
type contender struct {
	name string
	// make returns the middleware and a reading of its limit (nil: none).
	make func() (func(http.Handler) http.Handler, func() float64)
}

// bucket is one second of a run, by the requests sent in it.
type bucket struct {
	offered, good, refused, timedOut, failed int
	latencies                                []time.Duration // of the good ones
	limit                                    float64         // at the second's end
	capacity                                 float64
	slow                                     float64
}

// run offers the scenario's load to a real net/http server on 127.0.0.1
// behind the contender, with an open-loop client: requests arrive as a
// Poisson process at the phase's rate whatever the server does, each with
// the scenario's deadline; an answer after it is no goodput.
func run(sc scenario, ct contender) []bucket {
	a := newApp(sc.workers, sc.service, sc.sigma)
	a.slowShare, a.slowFactor = sc.slowShare, sc.slowFactor
	wrap, limit := ct.make()
	srv := httptest.NewServer(wrap(a))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	buckets := make([]bucket, int(sc.length()/time.Second))
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	stop := make(chan struct{})
	if limit != nil {
		wg.Add(1)
		go func() { // the limit, read every 100 ms
			defer wg.Done()
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					if i := int(now.Sub(start) / time.Second); i < len(buckets) {
						l := limit()
						mu.Lock()
						buckets[i].limit = l
						mu.Unlock()
					}
				}
			}
		}()
	}
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	next, from := start, start
	for _, p := range sc.phases {
		a.slots.resize(cmp.Or(p.workers, sc.workers))
		a.setMean(time.Duration(float64(sc.service) * cmp.Or(p.slow, 1)))
		rate := p.load * sc.capacity(0, 1)
		end := from.Add(p.d)
		for i := int(from.Sub(start) / time.Second); i < int(end.Sub(start)/time.Second); i++ {
			buckets[i].capacity, buckets[i].slow = sc.capacity(p.workers, p.slow), cmp.Or(p.slow, 1)
		}
		for next.Before(end) {
			slow := cmp.Or(p.slow, 1)
			if p.rampTo > 0 {
				slow += (p.rampTo - slow) * float64(next.Sub(from)) / float64(p.d)
				a.setMean(time.Duration(float64(sc.service) * slow))
			}
			time.Sleep(time.Until(next))
			i := int(next.Sub(start) / time.Second)
			if p.rampTo > 0 {
				buckets[i].capacity, buckets[i].slow = sc.capacity(p.workers, slow), slow
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, lat := send(client, srv.URL, sc.deadline, "")
				mu.Lock()
				b := &buckets[i]
				b.offered++
				switch res {
				case sentGood:
					b.good++
					b.latencies = append(b.latencies, lat)
				case sentRefused:
					b.refused++
				case sentLate:
					b.timedOut++
				default:
					b.failed++
				}
				mu.Unlock()
			}()
			next = next.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second)))
		}
		from = end
	}
	close(stop)
	wg.Wait()
	return buckets
}

type sent int

const (
	sentGood sent = iota
	sentRefused
	sentLate
	sentFailed
)

// send makes one request with deadline d, as tenant if it is not "", and
// says how it ended.
func send(c *http.Client, url string, d time.Duration, tenant string) (sent, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return sentFailed, 0
	}
	if tenant != "" {
		req.Header.Set(tenantHeader, tenant)
	}
	t := time.Now()
	resp, err := c.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	lat := time.Since(t)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return sentLate, lat
	case err != nil:
		return sentFailed, lat
	case resp.StatusCode == http.StatusServiceUnavailable:
		return sentRefused, lat
	case resp.StatusCode != http.StatusOK:
		return sentFailed, lat
	}
	return sentGood, lat
}

// quantile returns the q-quantile of d, sorted in place.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(int(q*float64(len(d))), len(d)-1)]
}

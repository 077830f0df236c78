package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// The noisy-neighbour check: ten tenants share a server of 16 worker slots
// (800 requests a second at 20 ms); each has a share of 60 a second (the
// server is provisioned for 75% of its capacity). Nine send their share;
// one sends ten times its share, and the server is overloaded 1.4×.
const (
	tenantCount    = 10
	tenantSlots    = 16
	tenantShare    = 60.0 // requests a second
	noisyFactor    = 10
	tenantHeader   = "X-Tenant"
	tenantDuration = 13 * time.Second
	tenantSettle   = 3 * time.Second
)

// tenantGuard is one way to guard the shared server.
type tenantGuard struct {
	name  string
	guard func() resilience.Guard // nil: no guard
}

var tenantGuards = []tenantGuard{
	{"no guard", nil},
	{"one Bulkhead(16), queue 16, for every tenant", func() resilience.Guard {
		return resilience.NewBulkhead(tenantSlots, resilience.WithBulkheadQueue(tenantSlots), resilience.WithBulkheadWait(100*time.Millisecond))
	}},
	{"a Bulkhead(4), queue 4, per tenant (Keyed)", func() resilience.Guard {
		return resiliencehttp.ByRequest(resilience.NewKeyed(resiliencehttp.RequestKey(resiliencehttp.Header(tenantHeader)),
			func(string) *resilience.Bulkhead {
				return resilience.NewBulkhead(4, resilience.WithBulkheadQueue(4), resilience.WithBulkheadWait(50*time.Millisecond))
			}))
	}},
}

// tenantFigures is what the tenants got: the share of their requests
// answered in time, for the nine quiet tenants together and for the noisy
// one, measured after the settle time.
type tenantFigures struct {
	quiet, noisy float64 // goodput / offered
	quietP99     time.Duration
}

// runTenants offers the tenants' load to a real net/http server on
// 127.0.0.1 behind g, each request with the scenario's deadline.
func runTenants(g tenantGuard) tenantFigures {
	a := newApp(tenantSlots, service, sigma)
	var h http.Handler = a
	if g.guard != nil {
		h = resiliencehttp.Handler(a, g.guard())
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	var mu sync.Mutex
	var offered, good [tenantCount]int
	var quietLat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for tenant := range tenantCount {
		rate := tenantShare
		if tenant == 0 {
			rate *= noisyFactor
		}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
			var sends sync.WaitGroup
			for next := start; next.Before(start.Add(tenantDuration)); next = next.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second))) {
				time.Sleep(time.Until(next))
				counted := next.Sub(start) >= tenantSettle
				sends.Go(func() {
					res, lat := send(client, srv.URL, deadline, strconv.Itoa(tenant))
					ok := res == sentGood
					if !counted {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					offered[tenant]++
					if ok {
						good[tenant]++
						if tenant != 0 {
							quietLat = append(quietLat, lat)
						}
					}
				})
			}
			sends.Wait()
		})
	}
	wg.Wait()
	var f tenantFigures
	qo, qg := 0, 0
	for t := 1; t < tenantCount; t++ {
		qo, qg = qo+offered[t], qg+good[t]
	}
	f.quiet = float64(qg) / float64(max(qo, 1))
	f.noisy = float64(good[0]) / float64(max(offered[0], 1))
	f.quietP99 = quantile(quietLat, 0.99)
	return f
}

// writeTenants writes the noisy-neighbour table.
func writeTenants(w io.Writer, names []string, fs []tenantFigures) {
	fmt.Fprintf(w, "%d tenants on %d worker slots (capacity %d/s), each with a share of %.0f/s; nine send their share, one %d× its share (%.1f× the capacity in all). Goodput is the share of a tenant's requests answered 200 within %v, from %v into a run of %v.\n\n",
		tenantCount, tenantSlots, int(float64(tenantSlots)/service.Seconds()), tenantShare, noisyFactor,
		tenantShare*(tenantCount-1+noisyFactor)/(float64(tenantSlots)/service.Seconds()), deadline, tenantSettle, tenantDuration)
	fmt.Fprintln(w, "| guard | the nine: goodput · p99 | the noisy one: goodput |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	for i, f := range fs {
		fmt.Fprintf(w, "| %s | %.1f%% · %v | %.1f%% |\n", names[i], 100*f.quiet, f.quietP99.Round(time.Millisecond), 100*f.noisy)
	}
}

package main

import (
	"net/http"
	"time"

	fslimiter "github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// The server of every scenario but the mix: 8 worker slots, a log-normal
// service time of mean 20 ms (σ 0.5), so 400 requests a second; the
// client gives each request 150 ms.
const (
	workers  = 8
	service  = 20 * time.Millisecond
	sigma    = 0.5
	deadline = 150 * time.Millisecond
)

// scenarios returns the scenarios, with phases of length ph measured from
// settle on; a phase's load is a multiple of the full capacity at the
// scenario's service time, so that with the service twice as slow 2× is
// four times what the server then serves.
func scenarios(ph, settle time.Duration) []scenario {
	base := scenario{workers: workers, service: service, sigma: sigma, deadline: deadline}
	with := func(name string, phases ...phase) scenario {
		s := base
		s.name, s.phases = name, phases
		for i := range s.phases {
			if s.phases[i].settle == 0 {
				s.phases[i].settle = settle
			}
		}
		return s
	}
	warm := phase{name: "0.5×", d: ph, load: 0.5}
	mix := with("mix of endpoints",
		phase{name: "0.5×", d: ph, load: 0.5, want: light},
		phase{name: "2×", d: ph, load: 2, want: overloaded},
		phase{name: "0.8×", d: ph, load: 0.8, want: light})
	// 90% of the requests about 10 ms, 10% about 150 ms: 24 ms on average,
	// 333 requests a second; the client gives each 500 ms, as it would
	// knowing that some endpoints are slow.
	mix.service, mix.slowShare, mix.slowFactor, mix.deadline = 10*time.Millisecond, 0.1, 15, 500*time.Millisecond
	return []scenario{
		with("slower service", warm,
			phase{name: "2×", d: ph, load: 2, want: overloaded},
			phase{name: "2×, service ×2", d: ph, load: 2, slow: 2, want: overloaded},
			phase{name: "2×, service ×3", d: ph, load: 2, slow: 3, want: overloaded},
			phase{name: "2×, service back", d: ph, load: 2, want: overloaded},
			phase{name: "2×, service ×1 → ×3 over " + (2 * ph).String(), d: 2 * ph, load: 2, slow: 1, rampTo: 3, settle: 2 * time.Second, want: overloaded},
			phase{name: "2×, service back, half the workers", d: ph, load: 2, workers: workers / 2, want: overloaded}),
		with("spike", warm,
			phase{name: "2×", d: ph, load: 2, want: overloaded},
			phase{name: "2×, service ×5 for 3 s", d: 3 * time.Second, load: 2, slow: 5, settle: -1},
			phase{name: "2× after the spike", d: ph, load: 2, want: recovery}),
		with("not overloaded", warm,
			phase{name: "0.8× of the capacity, service ×2", d: ph + ph/2, load: 0.4, slow: 2, want: light},
			phase{name: "0.8× of the capacity, service ×3", d: ph + ph/2, load: 0.8 / 3, slow: 3, want: light},
			phase{name: "0.8× of the capacity, service back", d: ph, load: 0.8, want: light}),
		mix,
	}
}

// drift is the steady overload under which the limit must hold still: 1.5×
// for eleven minutes.
func drift() scenario {
	return scenario{name: "1.5× for 11 minutes", workers: workers, service: service, sigma: sigma, deadline: deadline,
		phases: []phase{{name: "1.5×", d: 11 * time.Minute, load: 1.5}}}
}

// driftOf returns the median limit over the 20 s around the first minute
// and around the tenth.
func driftOf(bs []bucket) (first, tenth float64) {
	median := func(from, to int) float64 {
		var l []float64
		for _, b := range bs[from:to] {
			l = append(l, b.limit)
		}
		return medianOf(l)
	}
	return median(50, 70), median(590, 610)
}

// The contenders: ours with its defaults, a bulkhead sized for the
// server (8 slots, 8 waiting at most 100 ms) and failsafe-go's adaptive
// limiter with its defaults.
var (
	ours = contender{name: "AdaptiveLimiter", make: func() (func(http.Handler) http.Handler, func() float64) {
		l := resilience.NewAdaptiveLimiter()
		return resiliencehttp.Middleware(l), func() float64 { return float64(l.Limit()) }
	}}
	bulkhead = contender{name: "Bulkhead(8)", make: func() (func(http.Handler) http.Handler, func() float64) {
		b := resilience.NewBulkhead(workers, resilience.WithBulkheadWait(100*time.Millisecond), resilience.WithBulkheadQueue(workers))
		return resiliencehttp.Middleware(b), nil
	}}
	failsafe = contender{name: "failsafe-go", make: func() (func(http.Handler) http.Handler, func() float64) {
		l := fslimiter.NewWithDefaults[any]()
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p, ok := l.TryAcquirePermit()
				if !ok {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				next.ServeHTTP(w, r)
				if r.Context().Err() != nil {
					p.Drop() // the caller left
				} else {
					p.Record()
				}
			})
		}, func() float64 { return float64(l.Limit()) }
	}}
	contenders = []contender{ours, bulkhead, failsafe}
)

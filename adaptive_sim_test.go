package resilience_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/faf87a20/resilience"
)

// simServer is a server of known capacity, for the adaptive guards' tests:
// workers serve calls first come first served, each taking a service time
// drawn around service, and calls that find every worker busy queue, so
// latency grows with the queue. It runs in steps of a millisecond of a
// manualClock, in one goroutine: the same seed gives the same run.
type simServer struct {
	clk     *manualClock
	rnd     *rand.Rand
	workers int
	service time.Duration
	running []simCall // at most workers
	queue   []simCall
}

type simCall struct {
	arrived, ends time.Time
	done          func(error)
	critical      bool
}

// simStats are what a stretch of a run saw.
type simStats struct {
	offered, refused, served   int
	criticalOffered, critRefus int
	latencies                  []time.Duration // of the calls served
	limits                     []int           // the limit at every step
}

func newSimServer(clk *manualClock, seed uint64, workers int, service time.Duration) *simServer {
	return &simServer{clk: clk, rnd: rand.New(rand.NewPCG(seed, 1)), workers: workers, service: service}
}

// capacity returns the calls per second the server serves.
func (s *simServer) capacity() float64 { return float64(s.workers) / s.service.Seconds() }

// serviceTime draws a service time, uniform in [service/2, 3·service/2).
func (s *simServer) serviceTime() time.Duration {
	return s.service/2 + time.Duration(s.rnd.Int64N(int64(s.service)))
}

// run offers rate calls per second through l for d, a share critical of
// them critical (the rest sheddable), and returns what it saw.
func (s *simServer) run(l *resilience.AdaptiveLimiter, rate float64, critical float64, d time.Duration) simStats {
	var st simStats
	perStep := rate / 1000
	acc := 0.0
	for range int(d / time.Millisecond) {
		s.clk.Add(time.Millisecond)
		now := s.clk.Now()
		// Calls that end now leave; queued calls take their workers.
		kept := s.running[:0]
		for _, c := range s.running {
			if c.ends.After(now) {
				kept = append(kept, c)
				continue
			}
			st.served++
			st.latencies = append(st.latencies, c.ends.Sub(c.arrived))
			c.done(nil)
		}
		s.running = kept
		s.startQueued(now)
		for acc += perStep; acc >= 1; acc-- {
			st.offered++
			ctx := context.Background()
			crit := s.rnd.Float64() < critical
			if critical > 0 {
				p := resilience.PrioritySheddable
				if crit {
					p = resilience.PriorityCritical
					st.criticalOffered++
				}
				ctx = resilience.WithPriority(ctx, p)
			}
			done, err := l.Enter(ctx)
			if err != nil {
				st.refused++
				if crit {
					st.critRefus++
				}
				continue
			}
			s.queue = append(s.queue, simCall{arrived: now, done: done, critical: crit})
			s.startQueued(now)
		}
		st.limits = append(st.limits, l.Limit())
	}
	return st
}

func (s *simServer) startQueued(now time.Time) {
	for len(s.running) < s.workers && len(s.queue) > 0 {
		c := s.queue[0]
		s.queue = s.queue[1:]
		c.ends = now.Add(s.serviceTime())
		s.running = append(s.running, c)
	}
}

// goodput returns the calls served per second over d.
func (st simStats) goodput(d time.Duration) float64 { return float64(st.served) / d.Seconds() }

// quantile returns the q-quantile of the latencies of the calls served.
func (st simStats) quantile(q float64) time.Duration {
	if len(st.latencies) == 0 {
		return 0
	}
	l := slices.Clone(st.latencies)
	slices.Sort(l)
	return l[int(q*float64(len(l)-1))]
}

// medianLimit returns the median of the limits seen.
func (st simStats) medianLimit() int {
	l := slices.Clone(st.limits)
	slices.Sort(l)
	return l[len(l)/2]
}

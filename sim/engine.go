package main

import (
	"math"
	"math/rand/v2"
	"time"
)

// engine is a discrete-event loop in virtual time. Events are kept in a
// binary min-heap ordered by time, then by the order they were scheduled, so
// two events at the same instant always run in the same order and a run is a
// pure function of its seed. Nothing sleeps: handling an event moves the
// clock straight to it.
type engine struct {
	now  time.Duration // virtual time since the start of the run
	seq  uint64
	heap []event
}

// event is one thing that happens at time t: kind and id are handed back to
// the scenario's handler, which knows what they mean.
type event struct {
	t    time.Duration
	seq  uint64
	kind uint8
	id   int32
}

func (a event) before(b event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

// at schedules an event at time t. A time in the past is moved to now, so
// virtual time never runs backwards.
func (e *engine) at(t time.Duration, kind uint8, id int32) {
	if t < e.now {
		t = e.now
	}
	e.seq++
	e.heap = append(e.heap, event{t: t, seq: e.seq, kind: kind, id: id})
	e.up(len(e.heap) - 1)
}

// after schedules an event d from now.
func (e *engine) after(d time.Duration, kind uint8, id int32) { e.at(e.now+d, kind, id) }

// run handles events in order until none is left or the next one lies after
// until (a negative until means no limit). It returns the number of events
// handled.
func (e *engine) run(until time.Duration, handle func(kind uint8, id int32)) int {
	n := 0
	for len(e.heap) > 0 {
		ev := e.heap[0]
		if until >= 0 && ev.t > until {
			break
		}
		last := len(e.heap) - 1
		e.heap[0] = e.heap[last]
		e.heap = e.heap[:last]
		if last > 0 {
			e.down(0)
		}
		e.now = ev.t
		handle(ev.kind, ev.id)
		n++
	}
	return n
}

func (e *engine) up(i int) {
	h := e.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (e *engine) down(i int) {
	h := e.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// newRand returns the random source of one run. Every run draws from its own
// source, derived from the seed and the run's coordinates (scenario, strategy,
// size, repetition), so results do not depend on how runs are spread over
// goroutines.
func newRand(seed uint64, coords ...uint64) *rand.Rand {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, c := range coords {
		h = mix(h ^ c)
	}
	return rand.New(rand.NewPCG(h, mix(h)))
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash of one word.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unit maps a hash to [0, 1), as rand.Float64 maps its draws.
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// netDelay draws one network delay from a normal distribution, cut at zero.
func netDelay(r *rand.Rand, mean, sd time.Duration) time.Duration {
	d := float64(mean) + r.NormFloat64()*float64(sd)
	if d < 0 || math.IsNaN(d) {
		return 0
	}
	return time.Duration(d)
}

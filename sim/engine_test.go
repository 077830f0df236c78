package main

import (
	"testing"
	"time"
)

func TestEngineOrder(t *testing.T) {
	type sched struct {
		t  time.Duration
		id int32
	}
	tests := []struct {
		name  string
		in    []sched
		until time.Duration
		want  []int32
	}{
		{"by time", []sched{{30, 3}, {10, 1}, {20, 2}}, -1, []int32{1, 2, 3}},
		{"ties in scheduling order", []sched{{5, 1}, {5, 2}, {5, 3}, {1, 0}}, -1, []int32{0, 1, 2, 3}},
		{"until stops before later events", []sched{{10, 1}, {20, 2}, {30, 3}}, 20, []int32{1, 2}},
		{"empty", nil, -1, nil},
		{"many", func() []sched {
			var s []sched
			for i := range 100 {
				s = append(s, sched{time.Duration((i * 37) % 100), int32((i * 37) % 100)})
			}
			return s
		}(), -1, func() []int32 {
			var w []int32
			for i := range 100 {
				w = append(w, int32(i))
			}
			return w
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e engine
			for _, s := range tc.in {
				e.at(s.t, 0, s.id)
			}
			var got []int32
			last := time.Duration(-1)
			n := e.run(tc.until, func(_ uint8, id int32) {
				if e.now < last {
					t.Fatalf("time ran backwards: %v after %v", e.now, last)
				}
				last = e.now
				got = append(got, id)
			})
			if n != len(got) || len(got) != len(tc.want) {
				t.Fatalf("run handled %d events %v, want %v", n, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("run order = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestEngineSchedulesFromHandlers(t *testing.T) {
	var e engine
	e.at(10, 0, 0)
	var times []time.Duration
	e.run(-1, func(kind uint8, id int32) {
		times = append(times, e.now)
		switch {
		case id < 3:
			e.after(5, 0, id+1)
		case id == 3:
			e.at(0, 0, 99) // in the past: runs now, not before
		}
	})
	want := []time.Duration{10, 15, 20, 25, 25}
	if len(times) != len(want) {
		t.Fatalf("event times = %v, want %v", times, want)
	}
	for i := range want {
		if times[i] != want[i] {
			t.Fatalf("event times = %v, want %v", times, want)
		}
	}
}

func TestNewRand(t *testing.T) {
	draw := func(seed uint64, coords ...uint64) [4]uint64 {
		r := newRand(seed, coords...)
		return [4]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
	}
	if a, b := draw(1, 2, 3), draw(1, 2, 3); a != b {
		t.Errorf("newRand(1, 2, 3) drew %v then %v, want the same", a, b)
	}
	tests := []struct {
		name string
		a, b [4]uint64
	}{
		{"seed", draw(1, 2, 3), draw(2, 2, 3)},
		{"coordinate", draw(1, 2, 3), draw(1, 2, 4)},
		{"coordinate order", draw(1, 2, 3), draw(1, 3, 2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.a == tc.b {
				t.Errorf("different %s drew the same numbers %v", tc.name, tc.a)
			}
		})
	}
}

func TestNetDelay(t *testing.T) {
	r := newRand(1)
	tests := []struct {
		name     string
		mean, sd time.Duration
		lo, hi   time.Duration
	}{
		{"fixed", 10 * time.Millisecond, 0, 10 * time.Millisecond, 10 * time.Millisecond},
		{"never negative", 0, time.Millisecond, 0, time.Hour},
		{"spread", 10 * time.Millisecond, 2 * time.Millisecond, 0, 30 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sum time.Duration
			const n = 1000
			for range n {
				d := netDelay(r, tc.mean, tc.sd)
				if d < tc.lo || d > tc.hi {
					t.Fatalf("netDelay(%v, %v) = %v, want in [%v, %v]", tc.mean, tc.sd, d, tc.lo, tc.hi)
				}
				sum += d
			}
			if tc.mean > 0 {
				if m := sum / n; m < tc.mean*9/10 || m > tc.mean*11/10 {
					t.Errorf("mean of netDelay(%v, %v) = %v, want within 10%%", tc.mean, tc.sd, m)
				}
			}
		})
	}
}

func TestVirtualClock(t *testing.T) {
	var e engine
	c := virtualClock{e: &e}
	start := c.Now()
	e.at(1500*time.Millisecond, 0, 0)
	e.run(-1, func(uint8, int32) {})
	if got := c.Since(start); got != 1500*time.Millisecond {
		t.Errorf("Since(start) = %v, want 1.5s", got)
	}
	if got := c.Until(start.Add(2 * time.Second)); got != 500*time.Millisecond {
		t.Errorf("Until(start+2s) = %v, want 500ms", got)
	}
	waits := map[string]func(){
		"After":     func() { c.After(time.Second) },
		"AfterFunc": func() { c.AfterFunc(time.Second, func() {}) },
		"Sleep":     func() { c.Sleep(time.Second) },
		"Tick":      func() { c.Tick(time.Second) },
		"Ticker":    func() { c.Ticker(time.Second) },
		"Timer":     func() { c.Timer(time.Second) },
		"WithDeadline": func() {
			c.WithDeadline(t.Context(), start)
		},
		"WithTimeout": func() {
			c.WithTimeout(t.Context(), time.Second)
		},
	}
	for name, f := range waits {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s outside a task did not panic; a wait in real time must not pass unnoticed", name)
				}
			}()
			f()
		})
	}
}

// TestSchedulerWaits runs tasks that wait on the virtual clock in each way
// it allows, and checks they wake at the right virtual times, in order.
func TestSchedulerWaits(t *testing.T) {
	const kindWake = 0
	var e engine
	s := newScheduler()
	c := virtualClock{e: &e, s: s}
	type wake struct {
		task int
		at   time.Duration
	}
	var got []wake
	bodies := []func() error{
		func() error { c.Sleep(30 * time.Millisecond); got = append(got, wake{0, e.now}); return nil },
		func() error { <-c.Timer(10 * time.Millisecond).C; got = append(got, wake{1, e.now}); return nil },
		func() error { <-c.After(20 * time.Millisecond); got = append(got, wake{2, e.now}); return nil },
		func() error {
			c.Sleep(10 * time.Millisecond)
			c.Sleep(15 * time.Millisecond)
			got = append(got, wake{3, e.now})
			return nil
		},
	}
	tasks := make([]*task, len(bodies))
	done := 0
	handle := func(i int32, y yield) {
		switch y.kind {
		case yieldSleep:
			e.after(y.d, kindWake, i)
		case yieldDone:
			done++
		default:
			t.Fatalf("task %d yielded %v, want a sleep or the end", i, y.kind)
		}
	}
	for i, b := range bodies {
		tk, y := s.start(b)
		tasks[i] = tk
		handle(int32(i), y)
	}
	e.run(-1, func(_ uint8, id int32) { handle(id, s.switchTo(tasks[id], nil)) })
	want := []wake{{1, 10 * time.Millisecond}, {2, 20 * time.Millisecond}, {3, 25 * time.Millisecond}, {0, 30 * time.Millisecond}}
	if done != len(bodies) || len(got) != len(want) {
		t.Fatalf("%d tasks done, wakes %v; want %d, %v", done, got, len(bodies), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("wakes = %v, want %v", got, want)
		}
	}
}

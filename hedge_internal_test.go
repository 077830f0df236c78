package resilience

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLatencyBuckets: every latency falls in a bucket whose bounds hold it,
// buckets are in order, and a bucket is at most a quarter of a power of two
// wide.
func TestLatencyBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1000, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	for range 10000 {
		values = append(values, int64(r.Uint64()>>(1+r.IntN(63))))
	}
	for _, d := range values {
		i := bucketOf(d)
		if i < 0 || i >= latencyBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of range", d, i)
		}
		lo := int64(0)
		if i > 0 {
			lo = upperOf(i - 1)
		}
		if d < lo || (d >= upperOf(i) && upperOf(i) != math.MaxInt64) {
			t.Fatalf("bucketOf(%d) = %d, whose bounds are [%d, %d)", d, i, lo, upperOf(i))
		}
		if width := upperOf(i) - lo; d >= 8 && float64(width) > float64(lo)/4+1 {
			t.Fatalf("bucket %d of %d is %d wide from %d", i, d, width, lo)
		}
	}
}

// TestLatenciesQuantile compares the estimate with the exact quantile of
// the samples, for windows that rotate.
func TestLatenciesQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
		l := newLatencies(q, 0, time.Hour, 1000)
		if got := l.get(); got != time.Hour {
			t.Fatalf("estimate before samples = %v, want the ceiling", got)
		}
		var all []time.Duration
		for range 5000 {
			d := time.Duration(r.ExpFloat64() * float64(10*time.Millisecond))
			all = append(all, d)
			l.record(d, 1)
		}
		// The estimate covers the last 1,000 to 2,000 samples.
		count := l.hist[0].count.Load() + l.hist[1].count.Load()
		if count < 1000 || count > 2000 {
			t.Fatalf("samples held = %d, want 1000 to 2000", count)
		}
		recent := slices.Clone(all[len(all)-int(count):])
		slices.Sort(recent)
		exact := recent[int(q*float64(len(recent)))]
		got := l.get()
		if got < exact || float64(got) > float64(exact)*1.3 {
			t.Errorf("q=%v: estimate %v, exact %v: want within a bucket above", q, got, exact)
		}
	}
}

func TestLatenciesClamp(t *testing.T) {
	l := newLatencies(0.5, 5*time.Millisecond, 50*time.Millisecond, 1000)
	for range 31 {
		l.record(time.Millisecond, 1)
	}
	if got := l.get(); got != 50*time.Millisecond {
		t.Fatalf("estimate with 31 samples = %v, want the ceiling", got)
	}
	l.record(time.Millisecond, 1)
	for range 12 {
		l.record(time.Millisecond, 1)
	}
	if got := l.get(); got != 5*time.Millisecond {
		t.Fatalf("estimate of 1ms samples = %v, want the floor 5ms", got)
	}
	for range 2000 {
		l.record(time.Second, 1)
	}
	if got := l.get(); got != 50*time.Millisecond {
		t.Fatalf("estimate of 1s samples = %v, want the ceiling 50ms", got)
	}
}

// TestLatenciesClampedBuckets compares the estimate with a model that
// keeps every sample in its own bucket: clamping samples to the buckets
// between floor and ceiling must not change the clamped quantile.
func TestLatenciesClampedBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		floor := time.Duration(r.Int64N(int64(time.Second)))
		ceiling := floor + time.Duration(r.Int64N(int64(time.Second)))
		q := 0.05 + 0.9*r.Float64()
		l := newLatencies(q, floor, ceiling, 1000)
		var all []time.Duration
		for range 32 + r.IntN(900) {
			d := time.Duration(r.ExpFloat64() * float64(r.Int64N(int64(time.Second))+1))
			all = append(all, d)
			l.record(d, 1)
		}
		l.estimate()
		slices.Sort(all)
		rank := int(q*float64(len(all))) + 1
		want := min(max(time.Duration(upperOf(bucketOf(int64(all[rank-1])))), floor), ceiling)
		if got := l.get(); got != want {
			t.Fatalf("q=%v floor=%v ceiling=%v, %d samples: estimate %v, model %v", q, floor, ceiling, len(all), got, want)
		}
	}
}

// TestLatenciesSampled: when every latency over the delay, the current
// estimate, counts once and one in latencySample of the others counts for
// latencySample, as a Hedge on the timing wheel records them, the
// estimate settles near the quantile of all the latencies. The sampling
// makes it noisier where most samples are sampled: a median more than a
// 95th percentile, whose tail is all counted.
func TestLatenciesSampled(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ q, tolerance float64 }{{0.5, 0.1}, {0.9, 0.04}, {0.95, 0.03}, {0.99, 0.03}} {
		for _, mean := range []time.Duration{time.Millisecond, 10 * time.Millisecond} {
			l := newLatencies(tc.q, 0, time.Second, 1000)
			var recent []time.Duration // what the histograms cover
			for range 20000 {
				d := time.Duration(r.ExpFloat64() * float64(mean))
				recent = append(recent, d)
				switch {
				case d > l.get():
					l.record(d, 1)
				case r.IntN(latencySample) == 0:
					l.record(d, latencySample)
				}
			}
			held := l.hist[0].count.Load() + l.hist[1].count.Load()
			recent = recent[len(recent)-int(held):] // about: weights stand for samples
			slices.Sort(recent)
			below := func(d time.Duration) float64 {
				i, _ := slices.BinarySearch(recent, d)
				return float64(i) / float64(len(recent))
			}
			// The estimate is a bucket's upper bound: the quantile lies
			// in the bucket, at most a fifth under it.
			got := l.get()
			if below(got) < tc.q-tc.tolerance || below(got*4/5) > tc.q+tc.tolerance {
				t.Errorf("q=%v, mean %v: estimate %v is the %.3f quantile, its bucket's floor the %.3f",
					tc.q, mean, got, below(got), below(got*4/5))
			}
		}
	}
}

// TestHedgeDrawn: the draw of the first attempts to time takes one in
// latencySample, evenly, whether the addresses of the contexts, the start
// times, or both vary from call to call, and leaves no long run of calls
// untimed.
func TestHedgeDrawn(t *testing.T) {
	const n = 16000
	for _, tc := range []struct {
		name string
		addr func(i int) uintptr // call i's context, from an address on the heap
		now  func(i int) time.Duration
	}{
		{"contexts of 128 bytes in a row, a coarse clock", func(i int) uintptr { return uintptr(128 * i) }, func(int) time.Duration { return time.Hour }},
		{"contexts of 112 bytes in a row, a microsecond clock", func(i int) uintptr { return uintptr(112 * i) }, func(i int) time.Duration { return time.Duration(i/5) * time.Microsecond }},
		{"one address used again, calls 237ns apart", func(int) uintptr { return 0 }, func(i int) time.Duration { return time.Duration(237 * i) }},
		{"both", func(i int) uintptr { return uintptr(128 * i) }, func(i int) time.Duration { return time.Duration(197*i + i*i%61) }},
		{"addresses at random, a coarse clock", func(i int) uintptr { return uintptr(rand.New(rand.NewPCG(uint64(i), 7)).Uint64() &^ 15) }, func(int) time.Duration { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drawnCount, gap, longest := 0, 0, 0
			for i := range n {
				if drawn(0xc000012000+tc.addr(i), tc.now(i)) {
					drawnCount, gap = drawnCount+1, 0
					continue
				}
				gap++
				longest = max(longest, gap)
			}
			if want := n / latencySample; drawnCount < want*85/100 || drawnCount > want*115/100 {
				t.Errorf("drew %d of %d, want about %d", drawnCount, n, want)
			}
			if longest > 16*latencySample {
				t.Errorf("%d calls in a row untimed", longest)
			}
		})
	}
}

// TestHedgeSamplesOnTheWheel: on the timing wheel, the calls that answer
// before the delay are timed one in latencySample, each counting for
// latencySample: a count of calls that is no multiple of it could not
// come out whole otherwise.
func TestHedgeSamplesOnTheWheel(t *testing.T) {
	// A delay of an hour, as learned as it is: on the wheel, and never
	// reached by a call that answers at once, however busy the machine.
	h := Hedge[int](WithHedgeQuantile(0.95, time.Hour, time.Hour)).(*hedge[int])
	const calls = 330
	for range calls {
		if _, err := h.Execute(context.Background(), func(context.Context) (int, error) { return 1, nil }); err != nil {
			t.Fatal(err)
		}
	}
	got := h.lat.hist[0].count.Load() + h.lat.hist[1].count.Load()
	if got%latencySample != 0 {
		t.Fatalf("weight recorded for %d calls = %d, want a multiple of %d", calls, got, latencySample)
	}
}

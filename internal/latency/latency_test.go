package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLatencyBuckets: every latency falls in a bucket whose bounds hold it,
// numBuckets are in order, and a bucket is at most a quarter of a power of two
// wide.
func TestLatencyBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1000, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	for range 10000 {
		values = append(values, int64(r.Uint64()>>(1+r.IntN(63))))
	}
	for _, d := range values {
		i := bucketOf(d)
		if i < 0 || i >= numBuckets {
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
		l := New(q, 0, time.Hour, 1000)
		if got := l.Get(); got != time.Hour {
			t.Fatalf("estimate before samples = %v, want the ceiling", got)
		}
		var all []time.Duration
		for range 5000 {
			d := time.Duration(r.ExpFloat64() * float64(10*time.Millisecond))
			all = append(all, d)
			l.Record(d)
		}
		// The estimate covers the last 1,000 to 2,000 samples.
		count := l.hist[0].count.Load() + l.hist[1].count.Load()
		if count < 1000 || count > 2000 {
			t.Fatalf("samples held = %d, want 1000 to 2000", count)
		}
		recent := slices.Clone(all[len(all)-int(count):])
		slices.Sort(recent)
		exact := recent[int(q*float64(len(recent)))]
		got := l.Get()
		if got < exact || float64(got) > float64(exact)*1.3 {
			t.Errorf("q=%v: estimate %v, exact %v: want within a bucket above", q, got, exact)
		}
	}
}

func TestLatenciesClamp(t *testing.T) {
	l := New(0.5, 5*time.Millisecond, 50*time.Millisecond, 1000)
	for range 31 {
		l.Record(time.Millisecond)
	}
	if got := l.Get(); got != 50*time.Millisecond {
		t.Fatalf("estimate with 31 samples = %v, want the ceiling", got)
	}
	l.Record(time.Millisecond)
	for range 12 {
		l.Record(time.Millisecond)
	}
	if got := l.Get(); got != 5*time.Millisecond {
		t.Fatalf("estimate of 1ms samples = %v, want the floor 5ms", got)
	}
	for range 2000 {
		l.Record(time.Second)
	}
	if got := l.Get(); got != 50*time.Millisecond {
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
		l := New(q, floor, ceiling, 1000)
		var all []time.Duration
		for range 32 + r.IntN(900) {
			d := time.Duration(r.ExpFloat64() * float64(r.Int64N(int64(time.Second))+1))
			all = append(all, d)
			l.Record(d)
		}
		l.estimate()
		slices.Sort(all)
		rank := int(q*float64(len(all))) + 1
		want := min(max(time.Duration(upperOf(bucketOf(int64(all[rank-1])))), floor), ceiling)
		if got := l.Get(); got != want {
			t.Fatalf("q=%v floor=%v ceiling=%v, %d samples: estimate %v, model %v", q, floor, ceiling, len(all), got, want)
		}
	}
}

// TestLatenciesEstimateTimes: the estimate is worked out by the sample that
// brings a histogram to minCount, and then by every stride-th sample only.
func TestLatenciesEstimateTimes(t *testing.T) {
	l := New(0.99, 0, time.Hour, 1000)
	for range 31 {
		l.Record(time.Millisecond)
	}
	if got := l.Get(); got != time.Hour {
		t.Fatalf("estimate of 31 samples = %v, want the ceiling", got)
	}
	l.Record(time.Millisecond)
	ms := time.Duration(upperOf(bucketOf(int64(time.Millisecond))))
	if got := l.Get(); got != ms {
		t.Fatalf("estimate of 32 samples of 1ms = %v, want %v", got, ms)
	}
	for i := 33; i < stride; i++ {
		l.Record(time.Second)
		if got := l.Get(); got != ms {
			t.Fatalf("estimate after sample %d = %v, want %v until sample %d", i, got, ms, stride)
		}
	}
	l.Record(time.Second)
	if s := time.Duration(upperOf(bucketOf(int64(time.Second)))); l.Get() != s {
		t.Fatalf("estimate after sample %d = %v, want %v", stride, l.Get(), s)
	}
}

// TestLatenciesWindow: the estimate covers the last window to two windows
// of samples: when a window of samples has filled a histogram, the other,
// of older samples, is emptied.
func TestLatenciesWindow(t *testing.T) {
	l := New(0.1, 0, time.Hour, stride)
	for range stride {
		l.Record(time.Millisecond)
	}
	for range stride {
		l.Record(time.Second)
	}
	if s := time.Duration(upperOf(bucketOf(int64(time.Second)))); l.Get() != s {
		t.Fatalf("estimate of the 10th percentile = %v once the 1ms samples are a window old, want %v", l.Get(), s)
	}
}

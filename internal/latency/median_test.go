package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestMedianBuckets: every latency falls in the bucket whose lower bound
// is the largest at or below it, a bucket at most 1/16 wide.
func TestMedianBuckets(t *testing.T) {
	for _, d := range []int64{1 << 10, 1<<10 + 63, 1<<10 + 64, 1500, 10_000_000, 20_000_001, 1<<36 - 1} {
		i := medianBucket(d)
		lo := medianLower(i)
		if lo > d || float64(d-lo) >= float64(lo)/16 {
			t.Errorf("medianBucket(%d) = %d, lower bound %d", d, i, lo)
		}
		if i+1 < medianBuckets-1 && medianLower(i+1) <= d {
			t.Errorf("medianBucket(%d) = %d, but the next bucket starts at %d", d, i, medianLower(i+1))
		}
	}
	if medianBucket(0) != 0 || medianBucket(1<<10-1) != 0 || medianBucket(1<<36) != medianBuckets-1 || medianBucket(math.MaxInt64) != medianBuckets-1 {
		t.Error("the first and last buckets")
	}
}

// TestMedian: the median of a window within a bucket's width of the
// exact one, for log-normal latencies and for a mix of fast calls and 10%
// slow ones, whose mean the slow ones double; an empty window's is 0, and
// Take starts a new window.
func TestMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		draw func() time.Duration
	}{
		{"log-normal of 20ms", func() time.Duration { return time.Duration(20e6 * math.Exp(0.5*r.NormFloat64())) }},
		{"90% 10ms, 10% 150ms", func() time.Duration {
			if r.Float64() < 0.1 {
				return time.Duration(150e6 * math.Exp(0.5*r.NormFloat64()))
			}
			return time.Duration(10e6 * math.Exp(0.5*r.NormFloat64()))
		}},
		{"microseconds", func() time.Duration { return time.Duration(5000 + r.IntN(3000)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Median
			var all []time.Duration
			for range 2001 {
				d := tc.draw()
				all = append(all, d)
				m.Record(d)
			}
			slices.Sort(all)
			want := all[len(all)/2]
			if got := m.Take(0.5); math.Abs(float64(got-want)) > float64(want)/16 {
				t.Errorf("Take() = %v, want %v within 1/16", got, want)
			}
			if got := m.Take(0.5); got != 0 {
				t.Errorf("Take() of an empty window = %v, want 0", got)
			}
		})
	}
}

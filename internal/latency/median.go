package latency

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Median counts the latencies of a window in a histogram of log-linear
// buckets, sixteen to each power of two (a bucket is at most 1/16 wider
// than its lower bound), from 1µs to 2^36 ns (about 69 s), without a lock,
// and gives their median at the window's end. A median, not a mean: a few
// slow calls (one slow endpoint among fast ones) move a mean of a few dozen
// samples by half, and the median not at all. Two histograms take turns, so
// that samples that come while a window is read go to the next one.
type Median struct {
	current atomic.Int32
	hist    [2][medianBuckets]atomic.Int64
}

const (
	medianSub     = 4 // sixteen buckets to each power of two
	medianLowBits = 10
	medianHigh    = 36
	// Bucket 0 holds what is below 2^medianLowBits, the last what is at or
	// above 2^medianHigh.
	medianBuckets = (medianHigh-medianLowBits)<<medianSub + 2
)

// medianBucket returns the bucket of a latency of d nanoseconds.
func medianBucket(d int64) int {
	if d < 1<<medianLowBits {
		return 0
	}
	n := bits.Len64(uint64(d)) // d is in [2^(n-1), 2^n)
	if n > medianHigh {
		return medianBuckets - 1
	}
	sub := int(d>>(n-1-medianSub)) & (1<<medianSub - 1)
	return (n-1-medianLowBits)<<medianSub + sub + 1
}

// medianLower returns the least latency of bucket i, which is not the
// first nor the last.
func medianLower(i int) int64 {
	i--
	n := i>>medianSub + medianLowBits // the bucket's values have n+1 bits
	return int64(1)<<n + int64(i&(1<<medianSub-1))<<(n-medianSub)
}

// Record adds a sample of latency d to the current window.
func (m *Median) Record(d time.Duration) {
	m.hist[m.current.Load()][medianBucket(int64(d))].Add(1)
}

// Take ends the window: it returns the q-quantile of the window's samples
// (0.5: their median), interpolated within its bucket (0 with none), and
// empties the window's histogram. Only one goroutine at a time may call
// it.
func (m *Median) Take(q float64) time.Duration {
	cur := m.current.Load()
	m.current.Store(1 - cur)
	h := &m.hist[cur]
	var counts [medianBuckets]int64
	var n int64
	for i := range h {
		counts[i] = h[i].Swap(0)
		n += counts[i]
	}
	if n == 0 {
		return 0
	}
	// The sample at rank q·n (from 0), read as if the samples of a bucket
	// were spread evenly across it.
	rank := q * float64(n)
	var seen int64
	for i, c := range counts {
		if c == 0 || float64(seen+c) <= rank {
			seen += c
			continue
		}
		switch i {
		case 0:
			return time.Duration(1) << medianLowBits / 2
		case medianBuckets - 1:
			return time.Duration(1) << medianHigh
		}
		width := int64(1) << ((i-1)>>medianSub + medianLowBits - medianSub)
		return time.Duration(float64(medianLower(i)) + float64(width)*(rank-float64(seen))/float64(c))
	}
	return 0
}

// Package latency estimates a quantile of recent latencies without a lock,
// for a hedge's delay.
package latency

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Quantile estimates a quantile of recent latencies without a lock: each
// sample adds one to an atomic counter in a histogram of log-linear
// buckets (four to each power of two, so a bucket is at most a fifth wider
// than its lower bound), and the quantile is read off the counts. Two
// histograms take turns, so that the estimate covers the last window to
// two windows of samples: memory is bounded (two arrays of counters) and
// old samples drop out.
//
// Samples below the floor
// share the bucket under the floor's, and samples above the ceiling the
// ceiling's, which gives the same clamped estimate as their own buckets
// would and keeps the scan to the buckets in between.
//
// The quantile is worked out again by the sample that brings a histogram
// to minCount and by every stride-th sample, and published in an atomic
// word that every call reads.
type Quantile struct {
	q        float64
	floor    time.Duration
	ceiling  time.Duration
	window   int64 // samples per histogram
	minCount int64 // samples needed before the estimate is used
	lo, hi   int   // the buckets samples go to: below the floor, the ceiling's

	hist    [2]hist
	current atomic.Int32 // the histogram samples go to
	delay   atomic.Int64 // the published estimate, clamped to [floor, ceiling]
}

type hist struct {
	count   atomic.Int64
	buckets [numBuckets]atomic.Int64
}

const (
	subBits    = 2 // four buckets to each power of two
	numBuckets = 64 << subBits
	stride     = 64 // samples between two estimates
)

// New returns an estimator of the quantile q of the latest window to two
// windows of latencies, kept within [floor, ceiling], and ceiling until
// 32 latencies (or window, if fewer) are known.
func New(q float64, floor, ceiling time.Duration, window int) *Quantile {
	l := &Quantile{q: q, floor: floor, ceiling: ceiling, window: int64(window), minCount: min(int64(window), 32),
		lo: max(bucketOf(int64(floor))-1, 0), hi: bucketOf(int64(ceiling))}
	l.delay.Store(int64(ceiling))
	return l
}

// bucketOf returns the bucket of a latency of d nanoseconds.
func bucketOf(d int64) int {
	if d < 1<<subBits {
		return int(max(d, 0))
	}
	n := bits.Len64(uint64(d)) // d is in [2^(n-1), 2^n)
	sub := int(d>>(n-1-subBits)) & (1<<subBits - 1)
	return (n-subBits)<<subBits + sub
}

// upperOf returns the least latency above every latency of bucket i.
func upperOf(i int) int64 {
	if i < 1<<subBits {
		return int64(i) + 1
	}
	n := i>>subBits + subBits // the bucket's values have n bits
	sub := uint64(i & (1<<subBits - 1))
	up := uint64(1)<<(n-1) + (sub+1)<<(n-1-subBits)
	return int64(min(up, uint64(math.MaxInt64)))
}

// Record adds a sample of latency d.
func (l *Quantile) Record(d time.Duration) {
	cur := l.current.Load()
	h := &l.hist[cur]
	h.buckets[min(max(bucketOf(int64(d)), l.lo), l.hi)].Add(1)
	n := h.count.Add(1)
	if n%stride != 0 && n != l.minCount {
		return // neither a stride ends nor the first estimate is due
	}
	if n >= l.window && l.current.CompareAndSwap(cur, 1-cur) {
		// The other histogram, the older, is emptied and takes the samples
		// from now on; this one stays in the estimate. Samples that raced
		// into the old one as it is emptied are lost: an estimate can
		// afford that.
		old := &l.hist[1-cur]
		for i := l.lo; i <= l.hi; i++ { // the others stay empty
			old.buckets[i].Store(0)
		}
		old.count.Store(0)
	}
	l.estimate()
}

// estimate works out the quantile over both histograms and publishes it.
func (l *Quantile) estimate() {
	total := l.hist[0].count.Load() + l.hist[1].count.Load()
	if total < l.minCount {
		return
	}
	rank := int64(l.q*float64(total)) + 1 // the sample at or above the quantile
	var seen int64
	d := l.ceiling
	for i := l.lo; i <= l.hi; i++ {
		seen += l.hist[0].buckets[i].Load() + l.hist[1].buckets[i].Load()
		if seen >= rank {
			d = time.Duration(upperOf(i))
			break
		}
	}
	l.delay.Store(int64(min(max(d, l.floor), l.ceiling)))
}

// Get returns the published estimate.
func (l *Quantile) Get() time.Duration { return time.Duration(l.delay.Load()) }

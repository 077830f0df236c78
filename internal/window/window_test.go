package window

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCount checks the ring against the plain list of the last n
// outcomes, and its invariant when records race.
func TestCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 63, 64, 65, 130} {
		r := NewCount(n)
		var last []bool
		for i := range 500 {
			failed := rng.IntN(3) == 0
			require.Equal(t, uint64(i), r.Record(failed))
			last = append(last, failed)
			if len(last) > n {
				last = last[1:]
			}
			want := 0
			for _, f := range last {
				if f {
					want++
				}
			}
			calls, failures := r.Counts()
			require.Equal(t, [2]int{len(last), want}, [2]int{calls, failures}, "n=%d, record %d", n, i)
		}
	}
	for _, n := range []uint64{1, 2, 3, 7, 64, 100, 999_983, MaxCalls} {
		r := NewCount(int(n))
		for _, i := range []uint64{0, 1, n - 1, n, n + 1, 1<<63 - 1, 1 << 63, math.MaxUint64, math.MaxUint64 - n + 1} {
			require.Equal(t, i%n, r.slot(i), "%d mod %d", i, n)
		}
		for range 1000 {
			i := rng.Uint64()
			require.Equal(t, i%n, r.slot(i), "%d mod %d", i, n)
		}
	}
	r := NewCount(100)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				r.Record((i+g)%3 == 0)
			}
		})
	}
	wg.Wait()
	set := 0
	for i := range r.bits {
		set += popcount(r.bits[i].Load())
	}
	calls, failures := r.Counts()
	assert.Equal(t, 100, calls)
	assert.Equal(t, set, failures, "the failure count is the bits set")
}

func popcount(x uint64) (n int) {
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestTime: outcomes drop out after the span; times before the
// breaker's start (negative) and a clock that goes back are handled.
func TestTime(t *testing.T) {
	w := NewTime(10 * time.Second)
	s := time.Second
	w.Record(-25*s-s/2, true) // slot -26
	w.Record(-21*s, false)    // slot -21
	calls, failures := w.Counts(-17 * s)
	assert.Equal(t, [2]int{2, 1}, [2]int{calls, failures})
	calls, _ = w.Counts(-16 * s)
	assert.Equal(t, 1, calls, "slot -26 has dropped out")
	calls, _ = w.Counts(-22 * s)
	assert.Equal(t, 1, calls, "slot -21 is ahead: the clock went back")
	w.Record(time.Duration(-1<<63), true)
	w.Record(time.Duration(1<<63-1), true)
	calls, _ = w.Counts(time.Duration(1<<63 - 1))
	assert.Equal(t, 1, calls)
	w.Reset()
	calls, _ = w.Counts(0)
	assert.Zero(t, calls)
}

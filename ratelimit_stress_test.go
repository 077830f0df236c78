package resilience_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// tickClock is a clock shared by many goroutines whose time moves one
// nanosecond at every reading, so a stress test knows, for every call,
// the span of time the limiter read its clock in.
type tickClock struct{ ticks atomic.Int64 }

func (c *tickClock) Now() time.Time { return time.Unix(0, c.ticks.Add(1)) }
func (c *tickClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, d)
}

// admission is a call a limiter admitted for n tokens, at a time it read
// between from and to.
type admission struct{ from, to, n int64 }

// checkRate fails t if the admissions took more tokens in some stretch of
// time than one token an interval and the burst allow. Every run of
// admissions in order of from, i to j, lies within [from_i, max to]; it
// looks at every run of up to maxRun admissions, and at the whole.
func checkRate(t *testing.T, got []admission, interval time.Duration, burst int, maxRun int) {
	t.Helper()
	slices.SortFunc(got, func(a, b admission) int { return int(a.from - b.from) })
	iv, tau := int64(interval), int64(interval)*int64(burst)
	var all, last int64
	for _, a := range got {
		all += a.n
		last = max(last, a.to)
	}
	if all*iv > last-got[0].from+tau {
		t.Fatalf("%d tokens taken in all within %dns: at most %d allowed", all, last-got[0].from, (last-got[0].from+tau)/iv)
	}
	for i := range got {
		var tokens, last int64
		for j := i; j < len(got) && j-i < maxRun; j++ {
			tokens += got[j].n
			last = max(last, got[j].to)
			if tokens*iv > last-got[i].from+tau {
				t.Fatalf("%d tokens taken within %dns (admissions %d to %d): at most %d allowed",
					tokens, last-got[i].from, i, j, (last-got[i].from+tau)/iv)
			}
		}
	}
}

// stressSize returns the calls each goroutine makes: a few by default,
// many with RESILIENCE_STRESS=1.
func stressSize() (calls, maxRun int) {
	if os.Getenv("RESILIENCE_STRESS") == "1" {
		return 50_000, 3_000
	}
	if raceEnabled {
		return 1_000, 300
	}
	return 3_000, 300
}

// TestRateLimiterNeverMoreThanTheRate has goroutines hammer one limiter
// and one key of a keyed limiter, through every way in, and checks that
// in no stretch of time did they get more than rate·t + burst tokens.
func TestRateLimiterNeverMoreThanTheRate(t *testing.T) {
	calls, maxRun := stressSize()
	const goroutines, burst, interval = 8, 5, 3 * time.Nanosecond
	ways := []struct {
		name string
		new  func(c resilience.Clock) func(g, i int) int64 // a call's tokens if admitted, else 0
	}{
		{"Allow, AllowN and Guarded", func(c resilience.Clock) func(g, i int) int64 {
			l := resilience.NewRateLimiter(1e9/float64(interval), burst, resilience.WithClock(c))
			p := resilience.Guarded[int](l)
			return func(g, i int) int64 {
				switch (g + i) % 3 {
				case 0:
					return admitted(l.Allow(), 1)
				case 1:
					n := int64(i % 4)
					return admitted(l.AllowN(int(n)), n)
				}
				_, err := p.Execute(context.Background(), okCall)
				return admitted(err == nil, 1)
			}
		}},
		{"keyed", func(c resilience.Clock) func(g, i int) int64 {
			l := resilience.NewKeyedRateLimiter[string](1e9/float64(interval), burst, resilience.WithClock(c))
			p := resilience.Guarded[int](l.Guard(userOf))
			alice := context.WithValue(context.Background(), userKey{}, "alice")
			return func(g, i int) int64 {
				l.Allow("bob") // bob shares the table, not alice's tokens
				if g%2 == 0 {
					return admitted(l.AllowN("alice", i%3), int64(i%3))
				}
				_, err := p.Execute(alice, okCall)
				return admitted(err == nil, 1)
			}
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			clk := &tickClock{}
			call := w.new(clk)
			var mu sync.Mutex
			var got []admission
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					var mine []admission
					for i := range calls {
						from := clk.ticks.Load()
						n := call(g, i)
						if n > 0 {
							mine = append(mine, admission{from, clk.ticks.Load(), n})
						}
					}
					mu.Lock()
					got = append(got, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			require.NotEmpty(t, got)
			checkRate(t, got, interval, burst, maxRun)
		})
	}
}

func admitted(ok bool, n int64) int64 {
	if !ok {
		return 0
	}
	return n
}

// TestRateLimiterWaitersNeverExceedTheRate has goroutines wait for tokens
// on fake time, where each wakes up at exactly the time its tokens come,
// and checks the times they got them, and that each waited no longer than
// its share.
func TestRateLimiterWaitersNeverExceedTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, burst = 10 * time.Millisecond, 3
		l := resilience.NewRateLimiter(1e9/float64(interval), burst)
		start := time.Now()
		var mu sync.Mutex
		var got []admission
		var wg sync.WaitGroup
		for g := range 20 {
			wg.Go(func() {
				for i := range 10 {
					n := 1 + (g+i)%burst
					if err := l.WaitN(context.Background(), n); err != nil {
						t.Errorf("WaitN(%d) = %v", n, err)
						return
					}
					at := int64(time.Since(start))
					mu.Lock()
					got = append(got, admission{at, at, int64(n)})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		checkRate(t, got, interval, burst, 1<<30)
		var tokens int64
		for _, a := range got {
			tokens += a.n
		}
		assert.Equal(t, time.Duration(tokens-burst)*interval, time.Since(start), "waiters are served back to back, no slot lost")
	})
}

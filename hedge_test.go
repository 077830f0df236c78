package resilience_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attemptScript is how each attempt of a hedged call behaves: attempt n
// (from 1) takes delays[n-1] and returns errs[n-1] (a nil error: a result
// "attempt n"). ignore makes it ignore its context.
type attemptScript struct {
	delays []time.Duration
	errs   []error
	ignore bool
}

// hedgeRecorder runs a script and records what each attempt saw.
type hedgeRecorder struct {
	mu        sync.Mutex
	started   []time.Duration // since the call began, per attempt
	cancelled []bool          // whether the attempt's context ended before it finished
	n         atomic.Int32
	begin     time.Time
}

func (r *hedgeRecorder) fn(s attemptScript) resilience.Func[string] {
	r.begin = time.Now()
	return func(ctx context.Context) (string, error) {
		n := int(r.n.Add(1))
		r.mu.Lock()
		r.started = append(r.started, time.Since(r.begin))
		r.cancelled = append(r.cancelled, false)
		r.mu.Unlock()
		d := s.delays[min(n, len(s.delays))-1]
		if s.ignore {
			time.Sleep(d)
		} else {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				r.mu.Lock()
				r.cancelled[n-1] = true
				r.mu.Unlock()
				return "", ctx.Err()
			}
		}
		if err := s.errs[min(n, len(s.errs))-1]; err != nil {
			return "", err
		}
		return "attempt " + string(rune('0'+n)), nil
	}
}

func TestHedge(t *testing.T) {
	errPerm := resilience.Permanent(io.ErrUnexpectedEOF)
	tests := []struct {
		name        string
		opts        []resilience.HedgeOption
		script      attemptScript
		want        string
		wantErr     error
		took        time.Duration   // until Execute returned
		started     []time.Duration // when each attempt started
		cancelled   []bool          // which attempts were cancelled
		wantDiscard int
	}{
		{
			name:    "answers before the delay: no hedge",
			opts:    []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond)},
			script:  attemptScript{delays: []time.Duration{50 * time.Millisecond}, errs: []error{nil}},
			want:    "attempt 1",
			took:    50 * time.Millisecond,
			started: []time.Duration{0}, cancelled: []bool{false},
		},
		{
			name:    "slow first attempt: the hedge wins, the first is cancelled",
			opts:    []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond)},
			script:  attemptScript{delays: []time.Duration{time.Second, 20 * time.Millisecond}, errs: []error{nil}},
			want:    "attempt 2",
			took:    120 * time.Millisecond,
			started: []time.Duration{0, 100 * time.Millisecond}, cancelled: []bool{true, false},
		},
		{
			name: "two hedges, the second wins",
			opts: []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond), resilience.WithHedgeMax(2)},
			script: attemptScript{delays: []time.Duration{time.Second, time.Second, 10 * time.Millisecond},
				errs: []error{nil}},
			want:    "attempt 3",
			took:    210 * time.Millisecond,
			started: []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, cancelled: []bool{true, true, false},
		},
		{
			name:    "delay 0: every attempt at once",
			opts:    []resilience.HedgeOption{resilience.WithHedgeDelay(0), resilience.WithHedgeMax(2)},
			script:  attemptScript{delays: []time.Duration{300 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond}, errs: []error{nil}},
			want:    "attempt 3",
			took:    100 * time.Millisecond,
			started: []time.Duration{0, 0, 0}, cancelled: []bool{true, true, false},
		},
		{
			name: "a retryable error lets the first go on",
			opts: []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond)},
			script: attemptScript{delays: []time.Duration{300 * time.Millisecond, 10 * time.Millisecond},
				errs: []error{nil, io.ErrUnexpectedEOF}},
			want:    "attempt 1",
			took:    300 * time.Millisecond,
			started: []time.Duration{0, 100 * time.Millisecond}, cancelled: []bool{false, false},
		},
		{
			name: "every attempt fails: the last error",
			opts: []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond)},
			script: attemptScript{delays: []time.Duration{300 * time.Millisecond, 10 * time.Millisecond},
				errs: []error{io.EOF, io.ErrUnexpectedEOF}},
			wantErr: io.EOF,
			took:    300 * time.Millisecond,
			started: []time.Duration{0, 100 * time.Millisecond}, cancelled: []bool{false, false},
		},
		{
			name: "an error not to retry is the answer",
			opts: []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond)},
			script: attemptScript{delays: []time.Duration{300 * time.Millisecond, 10 * time.Millisecond},
				errs: []error{nil, errPerm}},
			wantErr: io.ErrUnexpectedEOF,
			took:    110 * time.Millisecond,
			started: []time.Duration{0, 100 * time.Millisecond}, cancelled: []bool{true, false},
		},
		{
			name: "WithHedgeRetryIf decides",
			opts: []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond),
				resilience.WithHedgeRetryIf(func(err error) bool { return !errors.Is(err, io.ErrUnexpectedEOF) })},
			script: attemptScript{delays: []time.Duration{300 * time.Millisecond, 10 * time.Millisecond},
				errs: []error{nil, io.ErrUnexpectedEOF}},
			wantErr: io.ErrUnexpectedEOF,
			took:    110 * time.Millisecond,
			started: []time.Duration{0, 100 * time.Millisecond}, cancelled: []bool{true, false},
		},
		{
			name: "a loser that ignores its context: the caller does not wait for it, its result is discarded",
			opts: []resilience.HedgeOption{resilience.WithHedgeDelay(100 * time.Millisecond), resilience.WithHedgeMax(2)},
			script: attemptScript{delays: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
				errs: []error{nil}, ignore: true},
			want:        "attempt 1",
			took:        250 * time.Millisecond,
			started:     []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond},
			cancelled:   []bool{false, false, false},
			wantDiscard: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var discarded atomic.Int32
				opts := append([]resilience.HedgeOption{resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 100))}, tc.opts...)
				opts = append(opts, resilience.WithDiscard(func(string) { discarded.Add(1) }))
				p := resilience.Hedge[string](opts...)
				var rec hedgeRecorder
				start := time.Now()
				v, err := p.Execute(context.Background(), rec.fn(tc.script))
				assert.Equal(t, tc.took, time.Since(start), "time until Execute returned")
				if tc.wantErr != nil {
					assert.ErrorIs(t, err, tc.wantErr)
				} else {
					require.NoError(t, err)
					assert.Equal(t, tc.want, v)
				}
				time.Sleep(time.Minute) // fake time: the losers finish
				synctest.Wait()
				rec.mu.Lock()
				defer rec.mu.Unlock()
				assert.Equal(t, tc.started, rec.started, "when attempts started")
				assert.Equal(t, tc.cancelled, rec.cancelled, "which attempts were cancelled")
				assert.Equal(t, int32(tc.wantDiscard), discarded.Load(), "discarded results")
			})
		})
	}
}

func TestHedgeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		empty := resilience.NewRetryBudget(0, 0)
		p := resilience.Hedge[string](resilience.WithHedgeDelay(10*time.Millisecond), resilience.WithHedgeBudget(empty),
			resilience.WithObserver(obs))
		var rec hedgeRecorder
		v, err := p.Execute(context.Background(), rec.fn(attemptScript{delays: []time.Duration{time.Second}, errs: []error{nil}}))
		require.NoError(t, err)
		assert.Equal(t, "attempt 1", v)
		assert.Equal(t, int32(1), rec.n.Load(), "the budget refused the hedge")
		synctest.Wait()
		refused := obs.of(resilience.EventRefused)
		require.Len(t, refused, 1)
		assert.ErrorIs(t, refused[0].Err, resilience.ErrRetryBudgetExhausted)
		assert.Equal(t, "hedge", refused[0].Component)
		assert.Equal(t, 2, refused[0].Attempt, "the hedge refused would have been the second attempt")
	})
}

// TestHedgeDefaultBudget: a Hedge's own budget lets hedges add about a tenth
// to the calls of a server that is slow for everyone.
func TestHedgeDefaultBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := resilience.Hedge[int](resilience.WithHedgeDelay(10 * time.Millisecond))
		var attempts atomic.Int32
		slow := func(ctx context.Context) (int, error) {
			attempts.Add(1)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			return 0, nil
		}
		var wg sync.WaitGroup
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = p.Execute(context.Background(), slow)
			}()
		}
		wg.Wait()
		// 200 calls deposit 20 hedges; the floor adds one a second, and the
		// whole run takes a little over a second of fake time.
		assert.LessOrEqual(t, attempts.Load(), int32(200+20+2))
		assert.GreaterOrEqual(t, attempts.Load(), int32(200+20))
	})
}

func TestHedgePanics(t *testing.T) {
	t.Run("a hedge's panic before any result reaches the caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := resilience.Hedge[int](resilience.WithHedgeDelay(10 * time.Millisecond))
			var n atomic.Int32
			assert.PanicsWithValue(t, "hedge broke", func() {
				_, _ = p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					if n.Add(1) == 2 {
						panic("hedge broke")
					}
					<-ctx.Done()
					return 0, ctx.Err()
				})
			})
		})
	})
	t.Run("a loser's panic is late", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := &recorder{}
			p := resilience.Hedge[int](resilience.WithHedgeDelay(10*time.Millisecond), resilience.WithObserver(obs))
			var n atomic.Int32
			v, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
				if n.Add(1) == 2 {
					time.Sleep(time.Second)
					panic("too late")
				}
				time.Sleep(50 * time.Millisecond)
				return 1, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			late := obs.of(resilience.EventLatePanic)
			require.Len(t, late, 1)
			assert.Equal(t, "too late", late[0].Panic.Value)
		})
	})
	t.Run("the first attempt's panic cancels the hedges", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := resilience.Hedge[int](resilience.WithHedgeDelay(10 * time.Millisecond))
			var n atomic.Int32
			var hedgeCancelled atomic.Bool
			assert.PanicsWithValue(t, "first broke", func() {
				_, _ = p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					if n.Add(1) == 1 {
						time.Sleep(50 * time.Millisecond)
						panic("first broke")
					}
					<-ctx.Done()
					hedgeCancelled.Store(true)
					return 0, ctx.Err()
				})
			})
			synctest.Wait()
			assert.True(t, hedgeCancelled.Load())
		})
	})
}

func TestHedgeCallerContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := resilience.Hedge[int](resilience.WithHedgeDelay(10 * time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var n atomic.Int32
		start := time.Now()
		_, err := p.Execute(ctx, func(ctx context.Context) (int, error) {
			if n.Add(1) > 1 {
				time.Sleep(time.Second) // hedges ignore their context
				return 1, nil
			}
			<-ctx.Done()
			return 0, ctx.Err()
		})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "the caller does not wait for the hedges")
		time.Sleep(time.Second)
		synctest.Wait()
	})
}

// TestHedgeQuantileAdapts: the delay follows the 95th percentile of a
// scripted latency distribution, within floor and ceiling.
func TestHedgeQuantileAdapts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		p := resilience.Hedge[int](resilience.WithHedgeQuantile(0.9, time.Millisecond, 500*time.Millisecond),
			resilience.WithObserver(obs), resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 0)))
		// 90% of calls take 10ms, 10% take 100ms: the 90th percentile is
		// 10ms, within the bucket's resolution.
		for i := range 1000 {
			d := 10 * time.Millisecond
			if i%10 == 9 {
				d = 100 * time.Millisecond
			}
			_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
				return 0, nil
			})
			require.NoError(t, err)
		}
		events := obs.of(resilience.EventHedge)
		require.NotEmpty(t, events)
		lastWait := events[len(events)-1].Wait
		assert.GreaterOrEqual(t, lastWait, 10*time.Millisecond, "the delay is at or above the 90th percentile")
		assert.LessOrEqual(t, lastWait, 12500*time.Microsecond, "within a bucket (a quarter of a power of two)")
	})
}

func TestHedgeBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"negative delay", "resilience: WithHedgeDelay: delay must not be negative, got -1ns", func() { resilience.WithHedgeDelay(-1) }},
		{"quantile 0", "resilience: WithHedgeQuantile: quantile must be in (0, 1), got 0", func() { resilience.WithHedgeQuantile(0, 0, time.Second) }},
		{"quantile 1", "resilience: WithHedgeQuantile: quantile must be in (0, 1), got 1", func() { resilience.WithHedgeQuantile(1, 0, time.Second) }},
		{"quantile NaN", "resilience: WithHedgeQuantile: quantile must be in (0, 1), got NaN", func() { resilience.WithHedgeQuantile(nan(), 0, time.Second) }},
		{"floor above ceiling", "resilience: WithHedgeQuantile: need 0 <= floor <= ceiling, got floor 2s, ceiling 1s", func() {
			resilience.WithHedgeQuantile(0.5, 2*time.Second, time.Second)
		}},
		{"negative floor", "resilience: WithHedgeQuantile: need 0 <= floor <= ceiling, got floor -1ns, ceiling 1s", func() {
			resilience.WithHedgeQuantile(0.5, -1, time.Second)
		}},
		{"max 0", "resilience: WithHedgeMax: hedges must be between 1 and 100, got 0", func() { resilience.WithHedgeMax(0) }},
		{"max huge", "resilience: WithHedgeMax: hedges must be between 1 and 100, got 1000", func() { resilience.WithHedgeMax(1000) }},
		{"nil budget", "resilience: WithHedgeBudget: budget is nil", func() { resilience.WithHedgeBudget(nil) }},
		{"nil predicate", "resilience: WithHedgeRetryIf: predicate is nil", func() { resilience.WithHedgeRetryIf(nil) }},
		{"nil option", "resilience: Hedge: option is nil", func() { resilience.Hedge[int](nil) }},
		{"discard of another type", "resilience: Hedge: WithDiscard hook is func(string), but the policy's result type is int", func() {
			resilience.Hedge[int](resilience.WithDiscard(func(string) {}))
		}},
		{"nil fn", "resilience: Hedge: fn is nil", func() { _, _ = resilience.Hedge[int]().Execute(context.Background(), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.PanicsWithValue(t, tc.want, tc.f) })
	}
}

// TestHedgeFastPathAllocs pins the allocations of a call whose first
// attempt answers before the delay: the call's run, the first attempt's
// context.WithCancel (two), and the timer of the hedges with its function
// (two); none with every attempt at once.
func TestHedgeFastPathAllocs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    resilience.Policy[int]
		want float64
	}{
		{"fixed", resilience.Hedge[int](resilience.WithHedgeDelay(time.Second)), 5},
		{"quantile", resilience.Hedge[int](), 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testing.AllocsPerRun(1000, func() { _, _ = tc.p.Execute(ctx, okFunc) })
			assert.Equal(t, tc.want, n, "allocs per call")
		})
	}
}

func BenchmarkHedgeFast(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"fixed", resilience.Hedge[int](resilience.WithHedgeDelay(time.Second))},
		{"fixed1ms", resilience.Hedge[int](resilience.WithHedgeDelay(time.Millisecond))},
		{"quantile", resilience.Hedge[int]()},
		{"cooperative-timeout", resilience.Timeout[int](time.Second, resilience.WithTimeoutCooperative())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = bc.p.Execute(ctx, okFunc)
			}
		})
	}
}

// TestHedgeDelayHolds: a Hedge starts no hedge before its delay, and
// starts one at the delay, not later.
func TestHedgeDelayHolds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     time.Duration // how long the first attempt takes
		wantCalls int32
	}{
		{"answer just before the delay", 99 * time.Millisecond, 1},
		{"answer after the delay", 101 * time.Millisecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				var hedgedAt atomic.Int64
				start := time.Now()
				p := resilience.Hedge[int](resilience.WithHedgeDelay(100 * time.Millisecond))
				_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					if calls.Add(1) == 1 {
						time.Sleep(tc.first)
						return 1, nil
					}
					hedgedAt.Store(int64(time.Since(start)))
					<-ctx.Done()
					return 0, ctx.Err()
				})
				require.NoError(t, err)
				synctest.Wait()
				assert.Equal(t, tc.wantCalls, calls.Load())
				if tc.wantCalls == 2 {
					assert.Equal(t, int64(100*time.Millisecond), hedgedAt.Load(), "the hedge starts at the delay")
				}
			})
		})
	}
}

// TestHedgeDelayLearns: a Hedge's default delay follows the attempts'
// latencies: after calls that take 10ms, a slow call is hedged about 10ms
// in, not at the 1s ceiling used before any latency is known.
func TestHedgeDelayLearns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		p := resilience.Hedge[int](resilience.WithObserver(obs))
		slow := func(ctx context.Context) (int, error) {
			select {
			case <-time.After(2 * time.Second):
				return 1, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		_, _ = p.Execute(context.Background(), slow)
		require.Equal(t, []time.Duration{time.Second}, hedgeWaits(obs), "the ceiling, before any latency is known")
		for range 200 {
			_, _ = p.Execute(context.Background(), func(context.Context) (int, error) {
				time.Sleep(10 * time.Millisecond)
				return 1, nil
			})
		}
		obs.take()
		_, _ = p.Execute(context.Background(), slow)
		waits := hedgeWaits(obs)
		require.Len(t, waits, 1)
		assert.GreaterOrEqual(t, waits[0], 10*time.Millisecond)
		assert.LessOrEqual(t, waits[0], 13*time.Millisecond, "the 95th percentile of 10ms latencies, to a bucket's width")
		synctest.Wait()
	})
}

// hedgeWaits returns the delay of each EventHedge rec kept, and makes rec
// forget its events.
func hedgeWaits(rec *recorder) []time.Duration {
	var waits []time.Duration
	for _, e := range rec.take() {
		if e.Kind == resilience.EventHedge {
			waits = append(waits, e.Wait)
		}
	}
	return waits
}

// answerAfter returns an attempt that answers 1 after d, or its context's
// error if that ends first.
func answerAfter(d time.Duration) resilience.Func[int] {
	return func(ctx context.Context) (int, error) {
		select {
		case <-time.After(d):
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// TestHedgeQuantileBounds: WithHedgeQuantile takes a floor of 0, and a
// floor equal to the ceiling, which fixes the delay there; before any
// latency is known the delay is the ceiling.
func TestHedgeQuantileBounds(t *testing.T) {
	for _, tc := range []struct {
		name           string
		floor, ceiling time.Duration
	}{
		{"a floor of 0", 0, 30 * time.Millisecond},
		{"the floor at the ceiling", 20 * time.Millisecond, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &recorder{}
				p := resilience.Hedge[int](resilience.WithHedgeQuantile(0.5, tc.floor, tc.ceiling), resilience.WithObserver(obs))
				_, err := p.Execute(context.Background(), answerAfter(time.Second))
				require.NoError(t, err)
				synctest.Wait()
				assert.Equal(t, []time.Duration{tc.ceiling}, hedgeWaits(obs), "the delay")
			})
		})
	}
}

// TestHedgeMaxBounds: WithHedgeMax takes 1 and 100, and a Hedge with no
// delay starts that many hedges at once, besides the first attempt.
func TestHedgeMaxBounds(t *testing.T) {
	for _, hedges := range []int{1, 100} {
		t.Run(strconv.Itoa(hedges), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				budget := resilience.NewRetryBudget(1000, 0, resilience.WithBudgetCapacity(1000))
				p := resilience.Hedge[int](resilience.WithHedgeDelay(0), resilience.WithHedgeMax(hedges), resilience.WithHedgeBudget(budget))
				var attempts atomic.Int32
				_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
					attempts.Add(1)
					return answerAfter(time.Second)(ctx)
				})
				require.NoError(t, err)
				synctest.Wait()
				assert.Equal(t, int32(hedges+1), attempts.Load())
			})
		})
	}
}

// TestHedgeOnAnInjectedClock: a Hedge waits for its delay on the clock of
// WithClock, and releases that wait once the call is answered, whether
// the first attempt answered before the delay or a hedge won after it.
func TestHedgeOnAnInjectedClock(t *testing.T) {
	clk := newManualClock()
	p := resilience.Hedge[int](resilience.WithHedgeDelay(100*time.Millisecond), resilience.WithClock(clk),
		resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 10)))

	v, err := p.Execute(context.Background(), okFunc)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	assert.Zero(t, clk.Pending(), "waits left on the clock after an answer before the delay")

	started := make(chan int, 2)
	var n atomic.Int32
	type result struct {
		v   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
			i := int(n.Add(1))
			started <- i
			if i == 1 {
				<-ctx.Done() // the first attempt answers only when cancelled
				return 0, ctx.Err()
			}
			return i, nil
		})
		done <- result{v, err}
	}()
	require.Equal(t, 1, <-started)
	clk.Add(99 * time.Millisecond)
	select {
	case i := <-started:
		t.Fatalf("attempt %d started before the delay", i)
	default:
	}
	clk.Add(time.Millisecond)
	require.Equal(t, 2, <-started, "the hedge starts at the delay on the clock")
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, 2, r.v, "the hedge's answer")
	assert.Zero(t, clk.Pending(), "waits left on the clock after a hedge's answer")
}

// TestHedgeNoDelayHedgesFromTheCaller: with no delay the caller's
// goroutine starts every hedge, one after the other, so that an observer's
// panic on the EventHedge of any goes up through the call, even when the
// observer took its time over the one before.
func TestHedgeNoDelayHedgesFromTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
			switch {
			case e.Kind != resilience.EventHedge:
			case e.Attempt == 2:
				time.Sleep(time.Second)
			case e.Attempt == 3:
				panic("observer failed")
			}
		})
		p := resilience.Hedge[int](resilience.WithHedgeDelay(0), resilience.WithHedgeMax(2), resilience.WithObserver(obs),
			resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 10)))
		assert.PanicsWithValue(t, "observer failed", func() {
			_, _ = p.Execute(context.Background(), answerAfter(time.Hour))
		})
		synctest.Wait()
	})
}

// TestHedgeDelayLearnsFromHedges: the delay learns from the latencies of
// the hedges that succeed too, each from its own start: when first
// attempts hang and hedges answer in 10ms, the delay comes down from the
// ceiling to about 10ms.
func TestHedgeDelayLearnsFromHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		p := resilience.Hedge[int](resilience.WithObserver(obs), resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 10)))
		call := func() {
			var n atomic.Int32
			_, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
				if n.Add(1) == 1 {
					<-ctx.Done() // the first attempt hangs
					return 0, ctx.Err()
				}
				time.Sleep(10 * time.Millisecond)
				return 1, nil
			})
			require.NoError(t, err)
			synctest.Wait()
		}
		for range 40 {
			call()
		}
		waits := hedgeWaits(obs)
		require.Len(t, waits, 40)
		assert.Equal(t, time.Second, waits[0], "the ceiling, before any latency is known")
		call()
		waits = hedgeWaits(obs)
		require.Len(t, waits, 1)
		assert.GreaterOrEqual(t, waits[0], 10*time.Millisecond)
		assert.LessOrEqual(t, waits[0], 13*time.Millisecond, "the 95th percentile of the hedges' 10ms, to a bucket's width")
	})
}

// TestHedgeFirstAttemptLateInTheCallersGoroutine: a first attempt that
// answers after a hedge won does so in the caller's goroutine, still in
// the call: an observer's panic on its EventDiscarded goes up through the
// call, as every event the caller waits on does.
func TestHedgeFirstAttemptLateInTheCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := resilience.ObserverFunc(func(_ context.Context, e resilience.Event) {
			if e.Kind == resilience.EventDiscarded {
				panic("observer failed")
			}
		})
		p := resilience.Hedge[int](resilience.WithHedgeDelay(10*time.Millisecond), resilience.WithObserver(obs),
			resilience.WithDiscard(func(int) {}), resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 10)))
		var n atomic.Int32
		assert.PanicsWithValue(t, "observer failed", func() {
			_, _ = p.Execute(context.Background(), func(context.Context) (int, error) {
				if n.Add(1) == 1 {
					time.Sleep(100 * time.Millisecond) // ignores its context
					return 1, nil
				}
				return 2, nil
			})
		})
		synctest.Wait()
	})
}

// TestHedgeWinnersContextLivesUntilTheCallReturns: once a hedge wins, every
// other attempt's context is cancelled at once, and the winner's lives
// until the caller returns (what it returned may still need it), even
// when the caller waits for a first attempt that ignores its context.
func TestHedgeWinnersContextLivesUntilTheCallReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := resilience.Hedge[int](resilience.WithHedgeDelay(10*time.Millisecond), resilience.WithHedgeMax(2),
			resilience.WithHedgeBudget(resilience.NewRetryBudget(1, 10)))
		start := time.Now()
		var n atomic.Int32
		var ended [3]atomic.Int64 // when each attempt's context ended, since start
		v, err := p.Execute(context.Background(), func(ctx context.Context) (int, error) {
			i := n.Add(1)
			context.AfterFunc(ctx, func() { ended[i-1].Store(int64(time.Since(start))) })
			switch i {
			case 1:
				time.Sleep(100 * time.Millisecond) // ignores its context
			case 2:
				time.Sleep(15 * time.Millisecond) // the winner, at 25ms
			default:
				<-ctx.Done()
			}
			return int(i), nil
		})
		require.NoError(t, err)
		assert.Equal(t, 2, v)
		returned := time.Since(start)
		synctest.Wait()
		assert.Equal(t, 100*time.Millisecond, returned)
		assert.Equal(t, []time.Duration{25 * time.Millisecond, 100 * time.Millisecond, 25 * time.Millisecond},
			[]time.Duration{time.Duration(ended[0].Load()), time.Duration(ended[1].Load()), time.Duration(ended[2].Load())},
			"when each attempt's context ended")
	})
}

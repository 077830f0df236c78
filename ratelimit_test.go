package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/big"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rateStep is one call in a scripted run of a limiter: after the clock has
// moved by advance, AllowN(n) (Allow when n < 0) should answer want.
type rateStep struct {
	advance time.Duration
	n       int
	want    bool
}

func TestRateLimiterAllow(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		burst int
		steps []rateStep
	}{
		{"the bucket starts full: a burst of 3 goes through at once", 1, 3,
			[]rateStep{{0, -1, true}, {0, -1, true}, {0, -1, true}, {0, -1, false}}},
		{"a token comes back after 1/rate", 2, 1,
			[]rateStep{{0, -1, true}, {0, -1, false}, {499 * time.Millisecond, -1, false}, {time.Millisecond, -1, true}, {0, -1, false}}},
		{"AllowN takes n tokens at once or none", 10, 5,
			[]rateStep{{0, 5, true}, {0, 1, false}, {100 * time.Millisecond, 2, false}, {0, 1, true}, {0, 1, false}}},
		{"refilling stops at the burst", 1, 2,
			[]rateStep{{0, 2, true}, {time.Hour, 2, true}, {0, -1, false}}},
		{"more tokens than the burst: never", 10, 2,
			[]rateStep{{0, 3, false}, {time.Hour, 3, false}, {0, 2, true}}},
		{"AllowN(0) is always allowed", 1, 0,
			[]rateStep{{0, 0, true}, {0, 0, true}}},
		{"rate 0: the first burst tokens and never again", 0, 2,
			[]rateStep{{0, -1, true}, {time.Hour, -1, true}, {0, -1, false}, {1000 * time.Hour, -1, false}}},
		{"burst 0 admits nothing", 1000, 0,
			[]rateStep{{0, -1, false}, {time.Hour, -1, false}, {0, 1, false}}},
		{"RateUnlimited admits everything, burst 0 and all", resilience.RateUnlimited, 0,
			[]rateStep{{0, -1, true}, {0, 1_000_000, true}, {0, math.MaxInt, true}}},
		{"a rate above 2e9 a second is unlimited", 3e9, 0,
			[]rateStep{{0, -1, true}, {0, 5, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewRateLimiter(tc.rate, tc.burst, resilience.WithClock(clk))
			for i, s := range tc.steps {
				clk.Add(s.advance)
				var got bool
				if s.n < 0 {
					got = l.Allow()
				} else {
					got = l.AllowN(s.n)
				}
				assert.Equal(t, s.want, got, "step %d: AllowN(%d) after %v", i, s.n, s.advance)
			}
		})
	}
}

func TestRateLimiterTokens(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewRateLimiter(2, 4, resilience.WithClock(clk))
	assert.Equal(t, 4.0, l.Tokens(), "full at first")
	require.True(t, l.AllowN(3))
	assert.Equal(t, 1.0, l.Tokens())
	clk.Add(250 * time.Millisecond)
	assert.Equal(t, 1.5, l.Tokens(), "half a token a quarter second")
	l.ReserveN(3)
	assert.Equal(t, -1.5, l.Tokens(), "a reservation can take the bucket below 0")
	clk.Add(time.Hour)
	assert.Equal(t, 4.0, l.Tokens(), "never more than the burst")

	assert.Equal(t, math.Inf(1), resilience.NewRateLimiter(resilience.RateUnlimited, 1).Tokens())
	zero := resilience.NewRateLimiter(0, 3)
	zero.AllowN(2)
	assert.Equal(t, 1.0, zero.Tokens())
}

// TestRateLimiterRounding pins the one rounding the limiter does: the
// interval between tokens is a whole number of nanoseconds.
func TestRateLimiterRounding(t *testing.T) {
	tests := []struct {
		rate, want float64
	}{
		{3, 1e9 / 333_333_333},
		{2, 2},
		{0.5, 0.5},
		{1e9, 1e9},
		{1.5e9, 1e9},                      // 0.67 ns rounds to 1 ns
		{2.1e9, resilience.RateUnlimited}, // 0.48 ns rounds to 0: no limit
		{0, 0},
		{resilience.RateUnlimited, resilience.RateUnlimited},
	}
	for _, tc := range tests {
		l := resilience.NewRateLimiter(tc.rate, 1)
		assert.Equal(t, tc.want, l.Rate(), "NewRateLimiter(%v, 1).Rate()", tc.rate)
		assert.Equal(t, 1, l.Burst())
	}

	// No error builds up: 3 a second for a day is exactly 259,200 tokens
	// and the burst, to the nanosecond of the rounded interval.
	clk := newManualClock()
	l := resilience.NewRateLimiter(3, 1, resilience.WithClock(clk))
	got := 0
	for range 259_201 {
		if l.Allow() {
			got++
		}
		clk.Add(333_333_333)
	}
	assert.Equal(t, 259_201, got)
}

func TestRateLimiterClockGoingBackNeverAddsTokens(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewRateLimiter(1, 2, resilience.WithClock(clk))
	clk.Add(10 * time.Second)
	require.True(t, l.AllowN(2))
	assert.Equal(t, 0.0, l.Tokens())

	clk.Add(-5 * time.Second)
	assert.LessOrEqual(t, l.Tokens(), 0.0, "back in time: no tokens appear")
	assert.False(t, l.Allow())
	clk.Add(4500 * time.Millisecond)
	assert.False(t, l.Allow(), "still before the time the bucket was emptied")

	clk.Add(time.Second) // half a second past the emptying
	assert.Equal(t, 0.5, l.Tokens(), "the time run twice is not paid twice")
	clk.Add(500 * time.Millisecond)
	assert.True(t, l.Allow())
	assert.False(t, l.Allow())
}

func TestRateLimiterGuardRefusesWithAHint(t *testing.T) {
	clk := newManualClock()
	events := &recorder{}
	l := resilience.NewRateLimiter(2, 1, resilience.WithClock(clk), resilience.WithObserver(events), resilience.WithName("payments"))
	p := resilience.Guarded[int](l)
	calls := 0
	fn := func(context.Context) (int, error) { calls++; return 1, nil }

	_, err := p.Execute(context.Background(), fn)
	require.NoError(t, err)
	assert.Empty(t, events.sequence(), "an admitted call reports nothing")

	clk.Add(200 * time.Millisecond)
	_, err = p.Execute(context.Background(), fn)
	require.ErrorIs(t, err, resilience.ErrRateLimited)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "resilience: rate limited", err.Error())
	var rle *resilience.RateLimitError
	require.ErrorAs(t, err, &rle)
	assert.Equal(t, 300*time.Millisecond, rle.RetryAfter(), "the time until the next token")
	hint, ok := resilience.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, 300*time.Millisecond, hint)
	assert.Equal(t, 1, calls, "a refused call is not made")

	require.Len(t, events.events, 1)
	e := events.events[0]
	assert.Equal(t, resilience.EventRefused, e.Kind)
	assert.Equal(t, resilience.KindRateLimiter, e.Component)
	assert.Equal(t, "payments", e.Name)
	assert.Equal(t, err, e.Err)
	assert.Equal(t, 300*time.Millisecond, e.Wait)

	assert.False(t, l.Allow())
	require.Len(t, events.events, 2)
	assert.Equal(t, resilience.Event{Kind: resilience.EventRefused, Component: resilience.KindRateLimiter, Name: "payments", Err: resilience.ErrRateLimited, Wait: 300 * time.Millisecond}, events.events[1])
}

// TestRateLimiterClockGoesBackwards: a clock set back reads the bucket as
// it was at that earlier time (the tokens taken since stay taken), as the
// doc says, and the trip back and forth adds no token.
func TestRateLimiterClockGoesBackwards(t *testing.T) {
	tests := []struct {
		name  string
		steps []time.Duration // moves of the clock, each followed by a reading of Tokens
		take  int             // tokens taken at the start, before the moves
		want  []float64
	}{
		{"set back before the limiter was made", []time.Duration{-100 * time.Millisecond, 100 * time.Millisecond}, 0, []float64{1, 2}},
		{"set back after a take", []time.Duration{100 * time.Millisecond, -100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, 2, []float64{1, 0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newManualClock()
			l := resilience.NewRateLimiter(10, 2, resilience.WithClock(c))
			require.True(t, l.AllowN(tc.take))
			for i, d := range tc.steps {
				c.Add(d)
				assert.InDelta(t, tc.want[i], l.Tokens(), 1e-9, "Tokens() after step %d (%v)", i, d)
			}
		})
	}
}

// TestRateLimiterRetryWaitsExactlyTheHint: a Retry outside the limiter
// waits what the refusal says, to the nanosecond, and then gets through.
func TestRateLimiterRetryWaitsExactlyTheHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		l := resilience.NewRateLimiter(4, 1, resilience.WithClock(mock))
		p := resilience.Compose(
			resilience.Retry[int](resilience.WithClock(mock), resilience.WithBackoff(resilience.Constant(time.Hour))),
			resilience.Guarded[int](l),
		)
		require.True(t, l.Allow()) // the token is gone for 250ms
		mock.Add(100 * time.Millisecond)
		var calls int
		done := make(chan error, 1)
		go func() {
			_, err := p.Execute(context.Background(), func(context.Context) (int, error) { calls++; return 1, nil })
			done <- err
		}()
		synctest.Wait()
		mock.Add(150*time.Millisecond - 1)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the call ended before the hint passed: %v", err)
		default:
		}
		assert.Zero(t, calls)
		mock.Add(1)
		require.NoError(t, <-done)
		assert.Equal(t, 1, calls)
	})
}

func TestRateLimiterGuardWait(t *testing.T) {
	tests := []struct {
		name     string
		rate     float64
		wait     time.Duration
		deadline time.Duration // 0: none
		cancelAt time.Duration // 0: never
		wantErr  []error
		wantHint time.Duration
		wantTook time.Duration
		tokens   float64 // after the call
	}{
		{name: "waits for a token within the wait", rate: 10, wait: time.Second,
			wantTook: 100 * time.Millisecond, tokens: 0},
		{name: "refused at once when the token comes after the wait", rate: 1, wait: 100 * time.Millisecond,
			wantErr: []error{resilience.ErrRateLimited}, wantHint: time.Second},
		{name: "a wait of 0 is not to wait, the default", rate: 10, wait: 0,
			wantErr: []error{resilience.ErrRateLimited}, wantHint: 100 * time.Millisecond},
		{name: "refused at once when the token comes after the deadline", rate: 1, wait: 10 * time.Second, deadline: 500 * time.Millisecond,
			wantErr: []error{resilience.ErrRateLimited, context.DeadlineExceeded}, wantHint: time.Second},
		{name: "refused for the deadline when the token comes at the end of the wait, after the deadline", rate: 10, wait: 100 * time.Millisecond,
			deadline: 50 * time.Millisecond, wantErr: []error{resilience.ErrRateLimited, context.DeadlineExceeded}, wantHint: 100 * time.Millisecond},
		{name: "a deadline after the token does not matter", rate: 4, wait: 10 * time.Second, deadline: 250 * time.Millisecond,
			wantTook: 250 * time.Millisecond},
		{name: "a caller who gives up gives the token back", rate: 1, wait: 10 * time.Second, cancelAt: 300 * time.Millisecond,
			wantErr: []error{context.Canceled}, wantTook: 300 * time.Millisecond, tokens: 0.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := resilience.NewRateLimiter(tc.rate, 1, resilience.WithRateLimitWait(tc.wait))
				require.True(t, l.Allow())
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				if tc.cancelAt > 0 {
					stop := context.AfterFunc(ctx, func() {})
					defer stop()
					go func() {
						time.Sleep(tc.cancelAt)
						cancel()
					}()
				}
				start := time.Now()
				_, err := resilience.Guarded[int](l).Execute(ctx, okFunc)
				assert.Equal(t, tc.wantTook, time.Since(start))
				if tc.wantErr == nil {
					require.NoError(t, err)
				}
				for _, want := range tc.wantErr {
					assert.ErrorIs(t, err, want)
				}
				if tc.wantHint > 0 {
					hint, _ := resilience.RetryAfter(err)
					assert.Equal(t, tc.wantHint, hint)
				}
				if tc.tokens != 0 || tc.wantErr == nil {
					assert.InDelta(t, tc.tokens, l.Tokens(), 1e-9)
				}
			})
		})
	}
}

func TestRateLimiterWaitN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := resilience.NewRateLimiter(10, 2) // WithRateLimitWait does not bind WaitN
		start := time.Now()
		require.NoError(t, l.WaitN(ctx, 2))
		assert.Zero(t, time.Since(start), "the burst is there at once")
		require.NoError(t, l.Wait(ctx))
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		require.NoError(t, l.WaitN(ctx, 2))
		assert.Equal(t, 300*time.Millisecond, time.Since(start))

		err := l.WaitN(ctx, 3)
		require.ErrorIs(t, err, resilience.ErrRateLimited)
		assert.Equal(t, "resilience: rate limited: 3 tokens asked for, more than the burst of 2", err.Error())
		_, hinted := resilience.RetryAfter(err)
		assert.False(t, hinted, "no hint when waiting cannot help")

		time.Sleep(200 * time.Millisecond) // the bucket is full again
		require.True(t, l.AllowN(2))
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start = time.Now()
		err = l.Wait(short)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, resilience.ErrRateLimited)
		assert.Equal(t, "resilience: rate limited: the tokens would come after the context's deadline", err.Error())
		assert.Zero(t, time.Since(start), "fails at once rather than wait in vain")

		done, cancelDone := context.WithCancel(ctx)
		cancelDone()
		assert.Equal(t, context.Canceled, l.Wait(done))

		zero := resilience.NewRateLimiter(0, 1)
		require.NoError(t, zero.Wait(ctx))
		err = zero.Wait(ctx)
		require.ErrorIs(t, err, resilience.ErrRateLimited)
		assert.Equal(t, "resilience: rate limited: a rate of 0 has no tokens left", err.Error())
		assert.Zero(t, time.Since(start))
	})
}

func TestReservation(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewRateLimiter(1, 1, resilience.WithClock(clk))

	first := l.Reserve()
	require.True(t, first.OK())
	assert.Zero(t, first.Delay(), "the bucket's token")
	second := l.Reserve()
	assert.Equal(t, time.Second, second.Delay())
	second.Cancel()
	assert.Equal(t, 0.0, l.Tokens(), "a cancelled reservation gives its token back")
	second.Cancel()
	assert.Equal(t, 0.0, l.Tokens(), "the second Cancel does nothing")

	third := l.Reserve()
	fourth := l.Reserve()
	assert.Equal(t, time.Second, third.Delay())
	assert.Equal(t, 2*time.Second, fourth.Delay())
	third.Cancel()
	assert.Equal(t, -2.0, l.Tokens(), "fourth was timed on third's token being gone: it stays gone")
	fourth.Cancel()
	assert.Equal(t, -1.0, l.Tokens())
	third.Cancel()
	assert.Equal(t, -1.0, l.Tokens(), "third was cancelled already")

	fifth := l.Reserve()
	clk.Add(3 * time.Second)
	assert.Zero(t, fifth.Delay())
	fifth.Cancel()
	assert.Equal(t, 1.0, l.Tokens(), "past its time the token counts as used: only the refill is there")

	never := l.ReserveN(2)
	assert.False(t, never.OK(), "more than the burst")
	assert.Equal(t, time.Duration(math.MaxInt64), never.Delay())
	never.Cancel()
	none := l.ReserveN(0)
	assert.True(t, none.OK())
	assert.Zero(t, none.Delay())
	assert.False(t, resilience.NewRateLimiter(0, 0).Reserve().OK(), "rate 0 with nothing left")
}

func TestRateLimiterWaitEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		events := &recorder{outcomes: true}
		l := resilience.NewRateLimiter(10, 1, resilience.WithObserver(events), resilience.WithRateLimitWait(time.Second))
		p := resilience.Guarded[int](l)
		_, err := p.Execute(context.Background(), okFunc)
		require.NoError(t, err)
		_, err = p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(time.Millisecond)
			return 0, errFlaky
		})
		require.ErrorIs(t, err, errFlaky)
		assert.Equal(t, []resilience.EventKind{resilience.EventCallEnded, resilience.EventWaitStarted, resilience.EventWaitEnded, resilience.EventCallEnded}, events.sequence())
		ended := events.events[2]
		assert.Equal(t, 100*time.Millisecond, ended.Wait)
		assert.NoError(t, ended.Err)
		call := events.events[3]
		assert.Equal(t, errFlaky, call.Err)
		assert.Equal(t, time.Millisecond, call.Duration)
		assert.Equal(t, resilience.KindRateLimiter, call.Component)
	})
}

func TestRateLimiterBadInput(t *testing.T) {
	l := resilience.NewRateLimiter(1, 1)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"NaN rate", func() { resilience.NewRateLimiter(nan(), 1) },
			"resilience: NewRateLimiter: rate must be a finite number of tokens a second, at least 0, got NaN (RateUnlimited means no limit)"},
		{"negative rate", func() { resilience.NewRateLimiter(-1, 1) },
			"resilience: NewRateLimiter: rate must be a finite number of tokens a second, at least 0, got -1 (RateUnlimited means no limit)"},
		{"infinite rate", func() { resilience.NewRateLimiter(math.Inf(1), 1) },
			"resilience: NewRateLimiter: rate must be a finite number of tokens a second, at least 0, got +Inf (RateUnlimited means no limit)"},
		{"negative infinite rate", func() { resilience.NewKeyedRateLimiter[int](math.Inf(-1), 1) },
			"resilience: NewKeyedRateLimiter: rate must be a finite number of tokens a second, at least 0, got -Inf (RateUnlimited means no limit)"},
		{"negative burst", func() { resilience.NewRateLimiter(1, -1) },
			"resilience: NewRateLimiter: burst must not be negative, got -1"},
		{"too slow to refill", func() { resilience.NewRateLimiter(1e-9, 2) },
			"resilience: NewRateLimiter: rate 1e-09 with burst 2 takes more than 36 years to refill"},
		{"negative wait", func() { resilience.WithRateLimitWait(-time.Second) },
			"resilience: WithRateLimitWait: wait must not be negative, got -1s"},
		{"no keys", func() { resilience.WithRateLimitMaxKeys(0) },
			"resilience: WithRateLimitMaxKeys: n must be at least 1, got 0"},
		{"nil option", func() { resilience.NewRateLimiter(1, 1, nil) },
			"resilience: NewRateLimiter: option is nil"},
		{"nil keyed option", func() { resilience.NewKeyedRateLimiter[int](1, 1, nil) },
			"resilience: NewKeyedRateLimiter: option is nil"},
		{"nil key function", func() { resilience.NewKeyedRateLimiter[int](1, 1).Guard(nil) },
			"resilience: KeyedRateLimiter.Guard: key function is nil"},
		{"negative AllowN", func() { l.AllowN(-1) }, "resilience: RateLimiter.AllowN: n must not be negative, got -1"},
		{"negative WaitN", func() { _ = l.WaitN(context.Background(), -2) }, "resilience: RateLimiter.WaitN: n must not be negative, got -2"},
		{"negative ReserveN", func() { l.ReserveN(-3) }, "resilience: RateLimiter.ReserveN: n must not be negative, got -3"},
		{"negative keyed AllowN", func() { resilience.NewKeyedRateLimiter[int](1, 1).AllowN(7, -1) },
			"resilience: KeyedRateLimiter.AllowN: n must not be negative, got -1"},
		{"negative keyed WaitN", func() { _ = resilience.NewKeyedRateLimiter[int](1, 1).WaitN(context.Background(), 7, -1) },
			"resilience: KeyedRateLimiter.WaitN: n must not be negative, got -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

func TestRateLimiterErrors(t *testing.T) {
	var err error = &resilience.RateLimitError{}
	assert.ErrorIs(t, err, resilience.ErrRateLimited)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, errors.Is(resilience.ErrRateLimited, context.DeadlineExceeded))
	_, ok := resilience.RetryAfter(err)
	assert.False(t, ok, "the zero error has no hint")
}

// BenchmarkRateLimiter measures admissions that find their token there:
// the limiter's cost beside the clock reading it cannot do without.
func BenchmarkRateLimiter(b *testing.B) {
	ctx := context.Background()
	const fast = 1e9 // a token every nanosecond: every call finds one
	b.Run("Allow", func(b *testing.B) {
		l := resilience.NewRateLimiter(fast, 1000)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("Allow-parallel", func(b *testing.B) {
		l := resilience.NewRateLimiter(fast, 1000)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow()
			}
		})
	})
	b.Run("Allow-refused", func(b *testing.B) {
		l := resilience.NewRateLimiter(1, 1)
		l.Allow()
		b.ReportAllocs()
		for b.Loop() {
			l.Allow()
		}
	})
	b.Run("Guarded", func(b *testing.B) {
		p := resilience.Guarded[int](resilience.NewRateLimiter(fast, 1000))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = p.Execute(ctx, okFunc)
		}
	})
	b.Run("Keyed-10000-keys", func(b *testing.B) {
		// A key comes back every 10,000 calls, sooner than its bucket
		// refills and before its burst is spent: all 10,000 stay live.
		l := resilience.NewKeyedRateLimiter[string](1000, 1_000_000)
		keys := make([]string, 10000)
		for i := range keys {
			keys[i] = "user-" + strconv.Itoa(i)
			l.Allow(keys[i])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Allow(keys[i])
			i++
			if i == len(keys) {
				i = 0
			}
		}
	})
}

// farMessage is the error of a booking whose tokens would come too far
// ahead.
const farMessage = "resilience: rate limited: the tokens would come more than 36 years from now"

// TestRateLimiterFarBookingsNeverWrap books 1e9 tokens ten times over on a
// limiter of one token a second and a burst of 1e9, so that the tokens
// booked last would come three centuries ahead, in every way a booking can
// be made. The time a bucket is full again must never wrap round to the
// past: the second booking is the last one made (its tokens come in 31
// years), the others are refused with an error matching ErrRateLimited, and
// the bucket stays empty.
func TestRateLimiterFarBookingsNeverWrap(t *testing.T) {
	const n = 1e9
	single := func() limiter {
		l := resilience.NewRateLimiter(1, n)
		return limiter{func(ctx context.Context) error { return l.WaitN(ctx, n) }, l.Allow, l.Tokens}
	}
	keyed := func() limiter {
		l := resilience.NewKeyedRateLimiter[string](1, n)
		return limiter{func(ctx context.Context) error { return l.WaitN(ctx, "k", n) },
			func() bool { return l.Allow("k") }, func() float64 { return l.Tokens("k") }}
	}
	tests := []struct {
		name string
		make func() limiter
	}{
		{"RateLimiter.ReserveN", func() limiter {
			l := resilience.NewRateLimiter(1, n)
			return limiter{func(context.Context) error {
				if r := l.ReserveN(n); !r.OK() {
					return errNotBooked
				}
				return nil
			}, l.Allow, l.Tokens}
		}},
		{"RateLimiter.WaitN", single},
		{"RateLimiter.WaitN, a deadline in 300 years", func() limiter { return withFarDeadline(single()) }},
		{"KeyedRateLimiter.WaitN", keyed},
		{"KeyedRateLimiter.WaitN, a deadline in 300 years", func() limiter { return withFarDeadline(keyed()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := tc.make()
				ctx, cancel := context.WithCancel(context.Background())
				errs := make([]error, 10)
				var wg sync.WaitGroup
				for i := range errs {
					// Each booking that waits waits in its own goroutine,
					// in turn.
					wg.Go(func() { errs[i] = l.book(ctx) })
					synctest.Wait()
				}
				assert.False(t, l.allow(), "Allow after the far bookings")
				assert.Equal(t, -1e9, l.tokens(), "two bookings of 1e9 tokens, no more")
				cancel()
				wg.Wait()
				require.NoError(t, errs[0])
				if errs[1] != nil {
					assert.ErrorIs(t, errs[1], context.Canceled, "the second booking waits 31 years")
				}
				for i, err := range errs[2:] {
					if errors.Is(err, errNotBooked) {
						continue
					}
					require.ErrorIs(t, err, resilience.ErrRateLimited, "booking %d", i+2)
					assert.Equal(t, farMessage, err.Error(), "booking %d", i+2)
				}
			})
		})
	}
}

// TestRateLimiterWaitAtTheFarthest: tokens that come exactly 2^60 ns from
// now may be waited for; refused because of the context's deadline, the
// error says so, not that they come too far ahead.
func TestRateLimiterWaitAtTheFarthest(t *testing.T) {
	const burst = 1 << 30
	const rate = 1e9 / (1 << 30) // a token every 2^30 ns: 2^30 of them take 2^60 ns
	for _, tc := range []struct {
		name  string
		waitN func() func(ctx context.Context, n int) error // made in the test's bubble
	}{
		{"RateLimiter", func() func(ctx context.Context, n int) error { return resilience.NewRateLimiter(rate, burst).WaitN }},
		{"KeyedRateLimiter", func() func(ctx context.Context, n int) error {
			l := resilience.NewKeyedRateLimiter[string](rate, burst)
			return func(ctx context.Context, n int) error { return l.WaitN(ctx, "k", n) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				waitN := tc.waitN()
				require.NoError(t, waitN(context.Background(), burst), "the burst")
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				err := waitN(ctx, burst)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, "resilience: rate limited: the tokens would come after the context's deadline", err.Error())
				hint, _ := resilience.RetryAfter(err)
				assert.Equal(t, time.Duration(1<<60), hint)
			})
		})
	}
}

var errNotBooked = errors.New("reservation not OK")

// limiter is a RateLimiter, or a KeyedRateLimiter's key, as the tests of
// far bookings see it.
type limiter struct {
	book   func(ctx context.Context) error // books n tokens, waiting for them
	allow  func() bool
	tokens func() float64
}

// withFarDeadline makes l book under a deadline 300 years ahead, past the
// largest time.Duration.
func withFarDeadline(l limiter) limiter {
	book := l.book
	l.book = func(ctx context.Context) error {
		ctx, cancel := context.WithDeadline(ctx, time.Now().AddDate(300, 0, 0))
		defer cancel()
		return book(ctx)
	}
	return l
}

// TestRateLimiterLargestBurst: a burst of the largest int is counted
// without overflow, by a RateLimiter and by a KeyedRateLimiter's key:
// AllowN(1) is Allow(), and the whole burst taken at once leaves nothing.
func TestRateLimiterLargestBurst(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		steps []rateStep
	}{
		{"rate 0: AllowN(1) as Allow", 0, []rateStep{{0, 1, true}, {0, -1, true}, {0, 1, true}}},
		{"rate 0: the whole burst, then nothing", 0, []rateStep{{0, math.MaxInt, true}, {0, -1, false}, {0, 1, false}, {time.Hour, -1, false}}},
		{"rate 0: one, all but one, then nothing", 0, []rateStep{{0, -1, true}, {0, math.MaxInt - 1, true}, {0, -1, false}, {0, 1, false}}},
		{"rate 0: the burst twice", 0, []rateStep{{0, math.MaxInt, true}, {0, math.MaxInt, false}, {0, -1, false}}},
		{"unlimited", resilience.RateUnlimited, []rateStep{{0, 1, true}, {0, math.MaxInt, true}, {0, -1, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newManualClock()
			l := resilience.NewRateLimiter(tc.rate, math.MaxInt, resilience.WithClock(clk))
			keyed := resilience.NewKeyedRateLimiter[int](tc.rate, math.MaxInt, resilience.WithClock(clk))
			for i, s := range tc.steps {
				clk.Add(s.advance)
				var got, gotKeyed bool
				if s.n < 0 {
					got, gotKeyed = l.Allow(), keyed.Allow(7)
				} else {
					got, gotKeyed = l.AllowN(s.n), keyed.AllowN(7, s.n)
				}
				assert.Equal(t, s.want, got, "step %d: AllowN(%d) after %v", i, s.n, s.advance)
				assert.Equal(t, s.want, gotKeyed, "step %d: keyed AllowN(%d) after %v", i, s.n, s.advance)
			}
		})
	}
}

// gcraModel is the reference the limiter is held to over its whole range:
// the generic cell rate algorithm written from its definition in integers
// that cannot overflow. Its state is the theoretical arrival time tat;
// taking n tokens at t moves it to tat' = max(tat, t) + n·T, which is
// allowed at once iff t ≥ tat' − τ (τ = burst·T), and booked ahead, by a
// reservation, iff tat' − τ − t ≤ 2^60 ns, the limiter's documented
// horizon. A rate of 0 is T = 1 and τ = burst at a time that never moves:
// nothing is ever booked ahead.
type gcraModel struct {
	tat, interval, tau *big.Int
	burst              uint64
	frozen             bool
}

func newGCRAModel(interval int64, burst int, frozen bool) *gcraModel {
	iv := big.NewInt(interval)
	return &gcraModel{tat: new(big.Int), interval: iv, tau: new(big.Int).Mul(iv, new(big.Int).SetUint64(uint64(burst))),
		burst: uint64(burst), frozen: frozen}
}

var horizon = big.NewInt(1 << 60)

// take takes n tokens at t if they are there within maxWait (nil: no
// bound but the horizon), and returns whether it did, the wait until they
// are there, and tat after.
func (m *gcraModel) take(t int64, n int, maxWait *big.Int) (ok bool, wait, after *big.Int) {
	if m.frozen {
		t, maxWait = 0, new(big.Int)
	}
	if uint64(n) > m.burst {
		return false, nil, nil
	}
	bt := big.NewInt(t)
	next := new(big.Int).Mul(big.NewInt(int64(n)), m.interval)
	next.Add(next, bigMax(m.tat, bt))
	wait = new(big.Int).Sub(next, m.tau)
	wait.Sub(wait, bt)
	if wait.Cmp(horizon) > 0 || (maxWait != nil && wait.Cmp(maxWait) > 0) {
		return false, wait, nil
	}
	m.tat = next
	return true, wait, next
}

func (m *gcraModel) tokens(t int64) float64 {
	if m.frozen {
		t = 0
	}
	bt := big.NewInt(t)
	num := new(big.Int).Sub(bigMax(m.tat, bt), bt)
	num.Sub(m.tau, num)
	f, _ := new(big.Float).SetInt(num).Float64()
	return f / float64(m.interval.Int64())
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// modelReservation is a reservation as the model sees it.
type modelReservation struct {
	r                 *resilience.Reservation
	ok                bool
	act               int64    // when its tokens are there
	after             *big.Int // the model's tat after the booking
	cost              int64
	cancelled, frozen bool
}

// FuzzRateLimiterMatchesGCRA drives a RateLimiter, a KeyedRateLimiter's
// key (checked while the clock only goes forward, as a forgotten key comes
// back no fuller than at the last sweep) and the reference model with the
// same calls at the same times, over the whole range of rates, bursts,
// token counts and times, the clock going back as well as forward, and
// requires the same answers: every decision, every count of tokens, every
// delay. A booking whose time would wrap round shows as a decision the
// model does not make.
//
// An interval of 0 is a rate of 0. Each op is four bytes: the call (Allow,
// AllowN, ReserveN, ReserveN and Cancel, Cancel the last reservation,
// Tokens, Delay of the last reservation; bit 3 moves the clock back), which
// n (see gcraN), and the clock's step: a byte shifted left by another
// (modulo 61).
func FuzzRateLimiterMatchesGCRA(f *testing.F) {
	// Ten bookings of 1e9 tokens at one token a second, then an Allow.
	far := bytes.Repeat([]byte{2, 2, 0, 0}, 10)
	f.Add(uint64(1e9), uint64(1e9), append(far, 0, 0, 0, 0, 5, 0, 0, 0))
	// Rate 0 with the largest burst: one token, the rest, one more.
	f.Add(uint64(0), uint64(math.MaxInt64), []byte{1, 1, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0})
	f.Add(uint64(1), uint64(1<<60), []byte{2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 11, 1, 255, 60, 0, 0, 0, 0, 6, 0, 0, 0})
	f.Add(uint64(333_333_333), uint64(3), []byte{0, 0, 0, 0, 3, 1, 1, 28, 4, 0, 0, 0, 7, 0, 200, 20, 12, 0, 9, 9})
	f.Fuzz(func(t *testing.T, interval, burst uint64, ops []byte) {
		frozen := interval == 0
		iv, rate, maxBurst := int64(1), 0.0, uint64(math.MaxInt64)
		if !frozen {
			iv = int64(interval%(1<<40)) + 1
			rate, maxBurst = 1e9/float64(iv), uint64(1<<60/iv)
		}
		if got := resilience.NewRateLimiter(rate, 0).Rate(); got != rate {
			t.Skipf("rate %v is enforced as %v", rate, got) // 1/rate is not iv to the nanosecond
		}
		b := int(burst % (maxBurst + 1))
		clk := newManualClock()
		l := resilience.NewRateLimiter(rate, b, resilience.WithClock(clk))
		keyed := resilience.NewKeyedRateLimiter[int](rate, b, resilience.WithClock(clk))
		m, mk := newGCRAModel(iv, b, frozen), newGCRAModel(iv, b, frozen) // mk: the keyed limiter's key
		var now int64
		forward := true // the clock has never gone back: the keyed limiter's key is the model too
		var last *modelReservation
		for i := 0; len(ops) >= 4; i, ops = i+1, ops[4:] {
			kind, nsel, step := ops[0], ops[1], int64(ops[2])<<(ops[3]%61)
			if kind&8 != 0 {
				step = -step
			}
			if next := now + step; next >= -(1<<60) && next <= 1<<60 {
				clk.Add(time.Duration(step))
				now = next
				forward = forward && step >= 0
			}
			n := gcraN(nsel, b)
			switch kind % 8 {
			case 0, 1:
				var got, gotKeyed bool
				if kind%8 == 0 {
					n = 1
					got, gotKeyed = l.Allow(), keyed.Allow(0)
				} else {
					got, gotKeyed = l.AllowN(n), keyed.AllowN(0, n)
				}
				want, _, _ := m.take(now, n, new(big.Int))
				if got != want {
					t.Fatalf("op %d at %dns: AllowN(%d) = %v, want %v", i, now, n, got, want)
				}
				if want, _, _ := mk.take(now, n, new(big.Int)); forward && gotKeyed != want {
					t.Fatalf("op %d at %dns: keyed AllowN(%d) = %v, want %v", i, now, n, gotKeyed, want)
				}
			case 2, 3:
				ok, wait, after := m.take(now, n, nil)
				r := l.ReserveN(n)
				last = &modelReservation{r: r, ok: ok, after: after, cost: int64(n) * iv, frozen: frozen}
				if ok {
					last.act = now + max(wait.Int64(), 0)
					if frozen {
						last.act = 0
					}
				}
				if r.OK() != ok {
					t.Fatalf("op %d at %dns: ReserveN(%d).OK() = %v, want %v (wait %v)", i, now, n, r.OK(), ok, wait)
				}
				if kind%8 == 3 {
					last.cancel(m, now)
					r.Cancel()
				}
			case 4:
				if last != nil {
					last.cancel(m, now)
					last.r.Cancel()
				}
			case 5, 6:
				if got, want := l.Tokens(), m.tokens(now); got != want {
					t.Fatalf("op %d at %dns: Tokens() = %v, want %v", i, now, got, want)
				}
				if got, want := keyed.Tokens(0), mk.tokens(now); forward && got != want {
					t.Fatalf("op %d at %dns: keyed Tokens() = %v, want %v", i, now, got, want)
				}
			case 7:
				if last != nil {
					if got, want := last.r.Delay(), last.delay(now); got != want {
						t.Fatalf("op %d at %dns: Delay() = %v, want %v", i, now, got, want)
					}
				}
			}
		}
	})
}

// gcraN returns the n of a call: none, one, the burst, one more, half,
// one less, or a share of it.
func gcraN(sel byte, burst int) int {
	switch sel % 8 {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return burst
	case 3:
		return min(burst, math.MaxInt-1) + 1
	case 4:
		return burst / 2
	case 5:
		return max(burst-1, 0)
	}
	return burst / max(int(sel/8), 1)
}

// cancel gives the reservation's tokens back at now, as the limiter's
// Cancel promises: not twice, not once they are due, not when tokens were
// booked after them.
func (r *modelReservation) cancel(m *gcraModel, now int64) {
	if r.frozen {
		now = 0
	}
	if !r.ok || r.cost == 0 || r.cancelled {
		return
	}
	r.cancelled = true
	if r.act < now || m.tat.Cmp(r.after) != 0 {
		return
	}
	m.tat = new(big.Int).Sub(r.after, big.NewInt(r.cost))
}

func (r *modelReservation) delay(now int64) time.Duration {
	if !r.ok {
		return time.Duration(math.MaxInt64)
	}
	if r.frozen {
		now = 0
	}
	return time.Duration(max(r.act-now, 0))
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
				_, err := p.Execute(context.Background(), okFunc)
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
				_, err := p.Execute(alice, okFunc)
				return admitted(err == nil, 1)
			}
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			// The time moves a nanosecond at each reading, from 0: it is the
			// number of readings so far, and a call admitted between readings
			// from and to read its clock in that span.
			clk := newManualClock()
			clk.Tick = time.Nanosecond
			call := w.new(clk)
			var mu sync.Mutex
			var got []admission
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					var mine []admission
					for i := range calls {
						from := clk.Reads()
						n := call(g, i)
						if n > 0 {
							mine = append(mine, admission{from, clk.Reads(), n})
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

// TestReservationCancelLate: a reservation cancelled after its tokens'
// time has passed gives nothing back: the caller is taken to have used
// them.
func TestReservationCancelLate(t *testing.T) {
	clk := newManualClock()
	l := resilience.NewRateLimiter(1, 1, resilience.WithClock(clk))
	require.True(t, l.Reserve().OK(), "the burst")
	r := l.Reserve() // its token comes in 1s
	require.True(t, r.OK())
	clk.Add(1500 * time.Millisecond)
	r.Cancel()
	assert.Equal(t, 0.5, l.Tokens(), "nothing given back")
	assert.False(t, l.Allow())

	early := l.Reserve() // its token comes in 0.5s
	early.Cancel()
	assert.Equal(t, 0.5, l.Tokens(), "an early cancel gives its token back")
}

// TestRateLimiterConcurrentAllowN: callers that race for a bucket that
// never refills get exactly its burst between them: a compare-and-swap
// lost to another caller is tried again, not taken for a refusal.
func TestRateLimiterConcurrentAllowN(t *testing.T) {
	const burst = 200_000
	for _, tc := range []struct {
		name  string
		allow func() bool
	}{
		{"RateLimiter", func() func() bool {
			l := resilience.NewRateLimiter(0, burst)
			return func() bool { return l.AllowN(1) }
		}()},
		{"KeyedRateLimiter", func() func() bool {
			l := resilience.NewKeyedRateLimiter[int](0, burst)
			return func() bool { return l.AllowN(7, 1) }
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var admitted atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 8 {
				wg.Go(func() {
					<-start
					for range burst / 6 {
						if tc.allow() {
							admitted.Add(1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			assert.Equal(t, int64(burst), admitted.Load())
		})
	}
}

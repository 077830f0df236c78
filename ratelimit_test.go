package resilience_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
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

// rateEvents records what an observer is told.
type rateEvents struct {
	mu       sync.Mutex
	events   []resilience.Event
	outcomes bool
}

func (r *rateEvents) Observe(_ context.Context, e resilience.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *rateEvents) ObserveOutcomes() bool { return r.outcomes }

func (r *rateEvents) kinds() []resilience.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []resilience.EventKind
	for _, e := range r.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

func okCall(context.Context) (int, error) { return 1, nil }

func TestRateLimiterGuardRefusesWithAHint(t *testing.T) {
	clk := newManualClock()
	events := &rateEvents{}
	l := resilience.NewRateLimiter(2, 1, resilience.WithClock(clk), resilience.WithObserver(events), resilience.WithName("payments"))
	p := resilience.Guarded[int](l)
	calls := 0
	fn := func(context.Context) (int, error) { calls++; return 1, nil }

	_, err := p.Execute(context.Background(), fn)
	require.NoError(t, err)
	assert.Empty(t, events.kinds(), "an admitted call reports nothing")

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
	assert.Equal(t, "ratelimiter", e.Component)
	assert.Equal(t, "payments", e.Name)
	assert.Equal(t, err, e.Err)
	assert.Equal(t, 300*time.Millisecond, e.Wait)

	assert.False(t, l.Allow())
	require.Len(t, events.events, 2)
	assert.Equal(t, resilience.Event{Kind: resilience.EventRefused, Component: "ratelimiter", Name: "payments", Err: resilience.ErrRateLimited, Wait: 300 * time.Millisecond}, events.events[1])
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
		{name: "refused at once when the token comes after the deadline", rate: 1, wait: 10 * time.Second, deadline: 500 * time.Millisecond,
			wantErr: []error{resilience.ErrRateLimited, context.DeadlineExceeded}, wantHint: time.Second},
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
				_, err := resilience.Guarded[int](l).Execute(ctx, okCall)
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
		events := &rateEvents{outcomes: true}
		l := resilience.NewRateLimiter(10, 1, resilience.WithObserver(events), resilience.WithRateLimitWait(time.Second))
		p := resilience.Guarded[int](l)
		_, err := p.Execute(context.Background(), okCall)
		require.NoError(t, err)
		_, err = p.Execute(context.Background(), func(context.Context) (int, error) {
			time.Sleep(time.Millisecond)
			return 0, errFlaky
		})
		require.ErrorIs(t, err, errFlaky)
		assert.Equal(t, []resilience.EventKind{resilience.EventCallEnded, resilience.EventWaitStarted, resilience.EventWaitEnded, resilience.EventCallEnded}, events.kinds())
		ended := events.events[2]
		assert.Equal(t, 100*time.Millisecond, ended.Wait)
		assert.NoError(t, ended.Err)
		call := events.events[3]
		assert.Equal(t, errFlaky, call.Err)
		assert.Equal(t, time.Millisecond, call.Duration)
		assert.Equal(t, "ratelimiter", call.Component)
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

package resilience_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

func TestRegistryRegister(t *testing.T) {
	reg := resilience.NewRegistry()
	br, bh := resilience.NewBreaker(), resilience.NewBulkhead(2)
	require.NoError(t, reg.Register("payments", br))
	require.NoError(t, reg.Register("payments-pool", bh))
	err := reg.Register("payments-again", br)
	require.ErrorIs(t, err, resilience.ErrNameMismatch, "one guard under two names")
	assert.Contains(t, err.Error(), `"payments-again" is named "payments"`)

	err = reg.Register("payments", resilience.NewBulkhead(2))
	require.ErrorIs(t, err, resilience.ErrAlreadyRegistered)
	assert.Contains(t, err.Error(), `"payments"`)

	got, ok := reg.Lookup("payments")
	assert.True(t, ok)
	assert.Same(t, br, got)
	_, ok = reg.Lookup("nobody")
	assert.False(t, ok)

	assert.True(t, reg.Unregister("payments"))
	assert.False(t, reg.Unregister("payments"), "twice")
	_, ok = reg.Snapshot("payments")
	assert.False(t, ok)
	require.NoError(t, reg.Register("payments", resilience.NewBulkhead(1)), "the name is free again")
	require.NoError(t, reg.Register("payments-again", br), "the breaker's name is free again")

	var names []string
	for _, s := range reg.Snapshots() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"payments", "payments-again", "payments-pool"}, names)
}

func TestRegistryPanics(t *testing.T) {
	reg := resilience.NewRegistry()
	var nilBreaker *resilience.Breaker
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"empty name", func() { _ = reg.Register("", resilience.NewBreaker()) }, "Registry.Register: name is empty"},
		{"nil guard", func() { _ = reg.Register("x", nil) }, `Registry.Register: guard "x" is nil`},
		{"nil breaker", func() { _ = reg.Register("x", nilBreaker) }, `guard "x" is a nil *resilience.Breaker`},
		{"negative events", func() { resilience.WithRegistryEvents(-1) }, "WithRegistryEvents: n must be in [0, 10000], got -1"},
		{"too many events", func() { resilience.WithRegistryEvents(10001) }, "WithRegistryEvents: n must be in [0, 10000], got 10001"},
		{"negative shedding", func() { resilience.WithRegistryShedding(-time.Second) }, "WithRegistryShedding: d must not be negative, got -1s"},
		{"observer", func() { resilience.NewRegistry(resilience.WithObserver(&recorder{})) }, "NewRegistry: WithObserver and WithName do not apply"},
		{"nil option", func() { resilience.NewRegistry(nil) }, "NewRegistry: option is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, fmt.Sprint(r), tc.want)
			}()
			tc.f()
		})
	}
	assert.NotPanics(t, func() { resilience.NewRegistry(resilience.WithRegistryEvents(10000)) }, "the largest ring")
}

func TestRegistrySnapshots(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	onMock := resilience.WithClock(mock)
	fail := errors.New("down")
	tests := []struct {
		name  string
		guard func() resilience.Inspector // built and driven into the state to see
		want  resilience.Snapshot
	}{
		{"breaker closed", func() resilience.Inspector { return resilience.NewBreaker(onMock) }, resilience.Snapshot{
			Kind: "breaker", State: "closed", Health: resilience.HealthOK,
			Breaker: &resilience.BreakerSnapshot{State: resilience.BreakerClosed},
		}},
		{"breaker open", func() resilience.Inspector {
			b := resilience.NewBreaker(onMock, resilience.WithBreakerFailureRate(0.5, 4, 10))
			for _, err := range []error{nil, fail, nil, fail} {
				done, _ := b.Enter(ctx)
				done(err)
			}
			mock.Add(10 * time.Second)
			return b
		}, resilience.Snapshot{
			Kind: "breaker", State: "open", Health: resilience.HealthCritical,
			Breaker: &resilience.BreakerSnapshot{State: resilience.BreakerOpen, ConsecutiveFailures: 1, WindowCalls: 4, WindowFailures: 2, FailureRate: 0.5, Trips: 1, HalfOpenIn: 20 * time.Second},
		}},
		{"breaker half-open", func() resilience.Inspector {
			b := resilience.NewBreaker(onMock)
			b.Trip()
			mock.Add(30 * time.Second)
			return b
		}, resilience.Snapshot{
			Kind: "breaker", State: "half-open", Health: resilience.HealthWarning,
			Breaker: &resilience.BreakerSnapshot{State: resilience.BreakerHalfOpen, Trips: 1},
		}},
		{"breaker isolated", func() resilience.Inspector {
			b := resilience.NewBreaker(onMock)
			b.Isolate()
			return b
		}, resilience.Snapshot{
			Kind: "breaker", State: "isolated", Health: resilience.HealthCritical,
			Breaker: &resilience.BreakerSnapshot{State: resilience.BreakerOpen, Isolated: true, Trips: 1},
		}},
		{"bulkhead full", func() resilience.Inspector {
			b := resilience.NewBulkhead(2)
			b.TryAcquire()
			b.TryAcquire()
			return b
		}, resilience.Snapshot{
			Kind: "bulkhead", State: "full", Health: resilience.HealthWarning,
			Bulkhead: &resilience.BulkheadSnapshot{InFlight: 2, Limit: 2},
		}},
		{"bulkhead idle", func() resilience.Inspector { return resilience.NewBulkhead(3) }, resilience.Snapshot{
			Kind: "bulkhead", State: "ok", Health: resilience.HealthOK,
			Bulkhead: &resilience.BulkheadSnapshot{Limit: 3},
		}},
		{"rate limiter spent", func() resilience.Inspector {
			l := resilience.NewRateLimiter(10, 2, onMock)
			l.AllowN(2)
			mock.Add(50 * time.Millisecond)
			return l
		}, resilience.Snapshot{
			Kind: "rate-limiter", State: "limiting", Health: resilience.HealthWarning,
			RateLimiter: &resilience.RateLimiterSnapshot{Tokens: 0.5, Rate: 10, Burst: 2},
		}},
		{"rate limiter with one token", func() resilience.Inspector {
			l := resilience.NewRateLimiter(4, 2, onMock)
			l.AllowN(2)
			mock.Add(250 * time.Millisecond)
			return l
		}, resilience.Snapshot{
			Kind: "rate-limiter", State: "ok", Health: resilience.HealthOK,
			RateLimiter: &resilience.RateLimiterSnapshot{Tokens: 1, Rate: 4, Burst: 2},
		}},
		{"rate limiter unlimited", func() resilience.Inspector { return resilience.NewRateLimiter(resilience.RateUnlimited, 5) }, resilience.Snapshot{
			Kind: "rate-limiter", State: "ok", Health: resilience.HealthOK,
			RateLimiter: &resilience.RateLimiterSnapshot{Tokens: 5, Rate: resilience.RateUnlimited, Burst: 5},
		}},
		{"keyed rate limiter", func() resilience.Inspector {
			l := resilience.NewKeyedRateLimiter[string](1, 1, onMock, resilience.WithRateLimitMaxKeys(100))
			for _, k := range []string{"ann", "bob", "bob", "cy", "cy", "cy"} {
				l.Allow(k)
			}
			return l
		}, resilience.Snapshot{
			Kind: "keyed-rate-limiter", State: "limiting", Health: resilience.HealthWarning,
			KeyedRateLimiter: &resilience.KeyedRateLimiterSnapshot{
				Keys: 3, MaxKeys: 100, Rate: 1, Burst: 1,
				TopRefused: []resilience.KeyRefusal{{Key: "cy", Refusals: 2}, {Key: "bob", Refusals: 1}},
			},
		}},
		{"keyed rate limiter full", func() resilience.Inspector {
			l := resilience.NewKeyedRateLimiter[string](1, 1, onMock, resilience.WithRateLimitMaxKeys(2))
			for _, k := range []string{"ann", "bob", "bob"} {
				l.Allow(k)
			}
			return l
		}, resilience.Snapshot{
			Kind: "keyed-rate-limiter", State: "full", Health: resilience.HealthCritical,
			KeyedRateLimiter: &resilience.KeyedRateLimiterSnapshot{
				Keys: 2, MaxKeys: 2, Rate: 1, Burst: 1,
				TopRefused: []resilience.KeyRefusal{{Key: "bob", Refusals: 1}},
			},
		}},
		{"retry quota full", func() resilience.Inspector { return resilience.NewRetryQuota(10, onMock) }, resilience.Snapshot{
			Kind: "retry-budget", State: "ok", Health: resilience.HealthOK,
			RetryBudget: &resilience.RetryBudgetSnapshot{Form: "quota", Tokens: 10, Capacity: 10, Available: 2},
		}},
		{"retry quota", func() resilience.Inspector {
			q := resilience.NewRetryQuota(5, onMock, resilience.WithQuotaTimeoutCost(5))
			p := resilience.Retry[int](resilience.WithBudget(q), resilience.WithAttempts(2), resilience.WithBackoff(resilience.Constant(0)))
			_, _ = p.Execute(ctx, func(context.Context) (int, error) { return 0, fail })
			return q
		}, resilience.Snapshot{
			Kind: "retry-budget", State: "exhausted", Health: resilience.HealthWarning,
			RetryBudget: &resilience.RetryBudgetSnapshot{Form: "quota", Capacity: 5},
		}},
		{"adaptive limiter", func() resilience.Inspector {
			l := resilience.NewAdaptiveLimiter(onMock, resilience.WithAdaptiveInitial(8))
			_, _ = l.Enter(ctx)
			return l
		}, resilience.Snapshot{
			Kind: "adaptive-limiter", State: "ok", Health: resilience.HealthOK,
			AdaptiveLimiter: &resilience.AdaptiveLimiterSnapshot{Limit: 8, InFlight: 1},
		}},
		{"adaptive throttler", func() resilience.Inspector { return resilience.NewAdaptiveThrottler(onMock) }, resilience.Snapshot{
			Kind: "adaptive-throttler", State: "ok", Health: resilience.HealthOK,
			AdaptiveThrottler: &resilience.AdaptiveThrottlerSnapshot{},
		}},
		{"hedge", func() resilience.Inspector {
			return resilience.Hedge[int](onMock, resilience.WithHedgeDelay(40*time.Millisecond)).(resilience.Inspector)
		}, resilience.Snapshot{
			Kind: "hedge", State: "ok", Health: resilience.HealthOK,
			Hedge: &resilience.HedgeSnapshot{Delay: 40 * time.Millisecond, Fixed: true, BudgetAvailable: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := resilience.NewRegistry(onMock)
			require.NoError(t, reg.Register(tc.name, tc.guard()))
			got, ok := reg.Snapshot(tc.name)
			require.True(t, ok)
			tc.want.Name = tc.name
			if !got.LastRefused.IsZero() { // it refused a call: the registry noticed its count move
				assert.True(t, got.Shedding)
				assert.Equal(t, mock.Now(), got.LastRefused)
				tc.want.Shedding, tc.want.LastRefused = true, got.LastRefused
			}
			assert.Equal(t, tc.want, got)

			// The JSON holds the same values.
			b, err := json.Marshal(got)
			require.NoError(t, err)
			var back resilience.Snapshot
			require.NoError(t, json.Unmarshal(b, &back))
			assert.True(t, got.LastRefused.Equal(back.LastRefused), "LastRefused %v, back %v", got.LastRefused, back.LastRefused)
			back.LastRefused = got.LastRefused // the same instant, in UTC
			assert.Equal(t, got, back)
		})
	}
}

func TestRegistryEvents(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	reg := resilience.NewRegistry(resilience.WithClock(mock), resilience.WithRegistryEvents(3))
	br := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithName("db"), resilience.WithObserver(reg))
	other := resilience.NewBreaker(resilience.WithName("unregistered"), resilience.WithObserver(reg))
	require.NoError(t, reg.Register("db", br))
	other.Trip() // dropped: no such name

	br.Trip()     // closed → open
	for range 3 { // three refusals, one record
		mock.Add(time.Second)
		_, _ = br.Enter(ctx)
	}
	s, _ := reg.Snapshot("db")
	require.Len(t, s.Events, 2)
	t0 := mock.Now().Add(-3 * time.Second)
	assert.Equal(t, resilience.EventRecord{
		Time: t0.Add(3 * time.Second), First: t0.Add(time.Second), Count: 3,
		Kind: "refused", Component: "breaker", Err: "resilience: circuit breaker open",
		Text: "refused: resilience: circuit breaker open (wait 27.001s)",
	}, s.Events[0])
	assert.Equal(t, resilience.EventRecord{
		Time: t0, First: t0, Count: 1, Kind: "state-change", Component: "breaker", Text: "closed → open",
	}, s.Events[1])

	// A record put in words is kept, and put in words again once it moves.
	mock.Add(time.Second)
	_, _ = br.Enter(ctx)
	s, _ = reg.Snapshot("db")
	assert.Equal(t, 4, s.Events[0].Count)
	assert.Equal(t, t0.Add(4*time.Second), s.Events[0].Time)
	assert.Equal(t, "refused: resilience: circuit breaker open (wait 26.001s)", s.Events[0].Text)

	// The ring keeps the newest 3; state changes are each kept.
	br.Reset()
	br.Trip()
	br.Reset()
	s, _ = reg.Snapshot("db")
	var texts []string
	for _, e := range s.Events {
		texts = append(texts, e.Text)
	}
	assert.Equal(t, []string{"open → closed", "closed → open", "open → closed"}, texts)

	// Unregistered, its events go nowhere.
	reg.Unregister("db")
	br.Trip()
	require.NoError(t, reg.Register("db", br))
	s, _ = reg.Snapshot("db")
	assert.Empty(t, s.Events)

	// No ring at all.
	none := resilience.NewRegistry(resilience.WithRegistryEvents(0))
	b2 := resilience.NewBreaker(resilience.WithName("x"), resilience.WithObserver(none))
	require.NoError(t, none.Register("x", b2))
	b2.Trip()
	s, _ = none.Snapshot("x")
	assert.Empty(t, s.Events)
}

// TestRegistryEventText: a record says in a line what its event reports:
// the kind, then what of the attempt, error, wait and duration the event
// holds; a limit's change from the old limit to the new, and why.
func TestRegistryEventText(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		e    resilience.Event
		want string
	}{
		{resilience.Event{Kind: resilience.EventRetry, Attempt: 2, Err: down, Wait: time.Second}, "retry #2: down (wait 1s)"},
		{resilience.Event{Kind: resilience.EventCallEnded, Attempt: 1, Duration: 3 * time.Millisecond}, "call-ended #1 (took 3ms)"},
		{resilience.Event{Kind: resilience.EventHedge}, "hedge"},
		{resilience.Event{Kind: resilience.EventLimitChanged, OldLimit: 10, NewLimit: 12}, "limit-changed: 10 → 12"},
		{resilience.Event{Kind: resilience.EventLimitChanged, OldLimit: 10, NewLimit: 5, Reason: down}, "limit-changed: 10 → 5 (down)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			reg := resilience.NewRegistry()
			require.NoError(t, reg.Register("x", resilience.NewBreaker()))
			tc.e.Name = "x"
			reg.Observe(context.Background(), tc.e)
			s, _ := reg.Snapshot("x")
			require.Len(t, s.Events, 1)
			assert.Equal(t, tc.want, s.Events[0].Text)
		})
	}
}

// countedError counts the calls of its Error method.
type countedError struct{ n *int }

func (e countedError) Error() string { *e.n++; return "counted" }

// TestRegistryEventInWordsOnce: each record's error is put in words once,
// for every snapshot until a like event changes the record, and again
// then; in a ring that has come round, the newest first.
func TestRegistryEventInWordsOnce(t *testing.T) {
	reg := resilience.NewRegistry(resilience.WithRegistryEvents(3))
	require.NoError(t, reg.Register("x", resilience.NewBreaker()))
	calls := 0
	err := countedError{&calls}
	observe := func(k resilience.EventKind) {
		reg.Observe(context.Background(), resilience.Event{Kind: k, Name: "x", Err: err})
	}
	for _, k := range []resilience.EventKind{resilience.EventRetry, resilience.EventRefused, resilience.EventHedge, resilience.EventFallback} {
		observe(k) // the fourth takes the first's place
	}
	seen := func(wantCount int) {
		t.Helper()
		s, _ := reg.Snapshot("x")
		var got []string
		for _, e := range s.Events {
			got = append(got, fmt.Sprint(e.Text, " ×", e.Count))
		}
		assert.Equal(t, []string{fmt.Sprint("fallback: counted ×", wantCount), "hedge: counted ×1", "refused: counted ×1"}, got)
	}
	for range 3 {
		seen(1)
	}
	assert.Equal(t, 3, calls, "Error calls: one for each record, for Err and Text")
	observe(resilience.EventFallback)
	for range 3 {
		seen(2)
	}
	assert.Equal(t, 4, calls, "Error calls once the newest record changed")
}

func TestRegistryKeyedTopRefusedIsBounded(t *testing.T) {
	mock := clock.NewMock()
	l := resilience.NewKeyedRateLimiter[int](1, 1, resilience.WithClock(mock))
	reg := resilience.NewRegistry(resilience.WithClock(mock))
	require.NoError(t, reg.Register("per-user", l))
	for k := range 40 { // key k is refused k times
		for range k + 1 {
			l.Allow(k)
		}
	}
	s, _ := reg.Snapshot("per-user")
	top := s.KeyedRateLimiter.TopRefused
	require.Len(t, top, 10)
	for i, kr := range top {
		assert.Equal(t, resilience.KeyRefusal{Key: fmt.Sprint(39 - i), Refusals: int64(39 - i)}, kr)
	}

	// Once their buckets are full again the keys are dropped, and their
	// refusals with them.
	mock.Add(time.Hour)
	s, _ = reg.Snapshot("per-user")
	assert.Empty(t, s.KeyedRateLimiter.TopRefused)
	assert.Equal(t, "ok", s.State, "no key refused for an hour")
	assert.Equal(t, resilience.HealthOK, s.Health)
	l.Allow(2000)
	l.Allow(2000)
	s, _ = reg.Snapshot("per-user")
	assert.Equal(t, []resilience.KeyRefusal{{Key: "2000", Refusals: 1}}, s.KeyedRateLimiter.TopRefused)
}

// TestRegistryDoesNotTouchTheHotPath: a registered guard's calls, a keyed
// limiter's refusals that count their key, and the registry's observer
// allocate nothing.
func TestRegistryDoesNotTouchTheHotPath(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker(resilience.WithName("b"), resilience.WithObserver(reg))
	keyed := resilience.NewKeyedRateLimiter[string](1e9, 1000)
	require.NoError(t, reg.Register("b", br))
	require.NoError(t, reg.Register("k", keyed))
	spent := resilience.NewKeyedRateLimiter[string](1, 1)
	require.NoError(t, reg.Register("spent", spent))
	spent.Allow("ann")
	spent.Allow("ann") // the first refusal of its part of the table makes the part's top
	p := resilience.Guarded[int](br)
	ev := resilience.Event{Kind: resilience.EventRefused, Component: "breaker", Name: "b", Err: resilience.ErrBreakerOpen}
	tests := []struct {
		name string
		f    func()
	}{
		{"registered breaker, success", func() { _, _ = p.Execute(ctx, okFunc) }},
		{"registered keyed limiter, admitted", func() { keyed.Allow("ann") }},
		{"registered keyed limiter, refused", func() { spent.Allow("ann") }},
		{"registry observes an event", func() { reg.Observe(ctx, ev) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, tc.f); n != 0 {
				t.Errorf("allocates %v times per call, want 0", n)
			}
		})
	}
}

// TestRegistryConcurrentUse: snapshots, registrations and events while
// calls go through, under the race detector.
func TestRegistryConcurrentUse(t *testing.T) {
	ctx := context.Background()
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker(resilience.WithName("b"), resilience.WithObserver(reg), resilience.WithBreakerThreshold(2))
	keyed := resilience.NewKeyedRateLimiter[int](1, 1, resilience.WithName("k"), resilience.WithObserver(reg))
	require.NoError(t, reg.Register("b", br))
	require.NoError(t, reg.Register("k", keyed))
	fail := errors.New("down")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if done, err := br.Enter(ctx); err == nil {
					done(fail)
				}
				keyed.Allow(i % 7)
				if i%50 == 0 {
					br.Reset()
				}
				name := fmt.Sprint("tenant-", w, "-", i%3)
				if reg.Register(name, br) == nil {
					reg.Unregister(name)
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			for _, s := range reg.Snapshots() {
				if _, err := json.Marshal(s); err != nil {
					t.Error(err)
				}
			}
		}
	})
	wg.Wait()
	s, _ := reg.Snapshot("b")
	assert.NotEmpty(t, s.Events)
	assert.True(t, strings.Contains(s.State, "open") || s.State == "closed", s.State)
}

// BenchmarkRegistrySnapshots reads a registry of 100 breakers, each with a
// full ring of events, as a status page or a metrics exporter does.
func BenchmarkRegistrySnapshots(b *testing.B) {
	reg := resilience.NewRegistry()
	for i := range 100 {
		name := fmt.Sprint("dependency-", i)
		br := resilience.NewBreaker(resilience.WithName(name), resilience.WithObserver(reg))
		if err := reg.Register(name, br); err != nil {
			b.Fatal(err)
		}
		for range 16 {
			br.Trip()
			br.Reset()
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = reg.Snapshots()
	}
}

// nilPointerError is an error type whose Error method reads its receiver:
// a typed nil of it, handed over as an error, panics when put in words.
type nilPointerError struct{ msg string }

func (e *nilPointerError) Error() string { return e.msg }

// panicError is an error whose Error method panics with its value.
type panicError string

func (e panicError) Error() string { panic(string(e)) }

// TestRegistryBrokenErrorText: an event whose error panics when put in
// words is shown as fmt shows such an error, and every snapshot after it,
// of that name and of the others, is read as usual.
func TestRegistryBrokenErrorText(t *testing.T) {
	var typedNil *nilPointerError
	const nilText = "%!v(PANIC=Error method: runtime error: invalid memory address or nil pointer dereference)"
	tests := []struct {
		name          string
		e             resilience.Event
		wantErr, text string
	}{
		{"typed nil", resilience.Event{Kind: resilience.EventRefused, Component: "breaker", Err: typedNil},
			nilText, "refused: " + nilText},
		{"panic with a value", resilience.Event{Kind: resilience.EventRetry, Attempt: 1, Err: panicError("boom")},
			"%!v(PANIC=Error method: boom)", "retry #1: %!v(PANIC=Error method: boom)"},
		{"typed nil reason", resilience.Event{Kind: resilience.EventLimitChanged, OldLimit: 10, NewLimit: 5, Reason: typedNil},
			"", "limit-changed: 10 → 5 (" + nilText + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := resilience.NewRegistry()
			require.NoError(t, reg.Register("a", resilience.NewBulkhead(1)))
			require.NoError(t, reg.Register("x", resilience.NewBreaker()))
			tc.e.Name = "x"
			reg.Observe(context.Background(), tc.e)
			for range 2 { // put in words, then kept
				var all []resilience.Snapshot
				require.NotPanics(t, func() { all = reg.Snapshots() })
				require.Len(t, all, 2)
				require.Len(t, all[1].Events, 1)
				assert.Equal(t, tc.wantErr, all[1].Events[0].Err)
				assert.Equal(t, tc.text, all[1].Events[0].Text)
				s, ok := reg.Snapshot("x")
				require.True(t, ok)
				assert.Equal(t, all[1].Events, s.Events)
			}
		})
	}
}

// TestRegistryRefusesZeroGuards: a guard of any kind that no constructor
// made is refused with an error naming it and its kind, and the
// registry's snapshots are read as before.
func TestRegistryRefusesZeroGuards(t *testing.T) {
	tests := []struct {
		guard resilience.Inspector
		kind  string
	}{
		{&resilience.Breaker{}, "breaker (*resilience.Breaker)"},
		{&resilience.Bulkhead{}, "bulkhead (*resilience.Bulkhead)"},
		{&resilience.RateLimiter{}, "rate-limiter (*resilience.RateLimiter)"},
		{&resilience.KeyedRateLimiter[string]{}, "keyed-rate-limiter (*resilience.KeyedRateLimiter[string])"},
		{&resilience.RetryBudget{}, "retry-budget (*resilience.RetryBudget)"},
		{&resilience.AdaptiveLimiter{}, "adaptive-limiter (*resilience.AdaptiveLimiter)"},
		{&resilience.AdaptiveThrottler{}, "adaptive-throttler (*resilience.AdaptiveThrottler)"},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			reg := resilience.NewRegistry()
			require.NoError(t, reg.Register("ok", resilience.NewBulkhead(1)))
			err := reg.Register("zero", tc.guard)
			require.ErrorIs(t, err, resilience.ErrZeroGuard)
			assert.Equal(t, `resilience: Registry.Register: guard "zero" is a zero `+tc.kind+`, not made by its constructor: `+resilience.ErrZeroGuard.Error(), err.Error())
			_, ok := reg.Lookup("zero")
			assert.False(t, ok, "registered")
			var all []resilience.Snapshot
			require.NotPanics(t, func() { all = reg.Snapshots() })
			require.Len(t, all, 1)
		})
	}
}

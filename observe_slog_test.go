package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// textLogger logs to w at level and above, without the time.
func textLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func TestSlogObserver(t *testing.T) {
	errDown := errors.New("down")
	tests := []struct {
		name string
		e    resilience.Event
		want string
	}{
		{"attempt failed",
			resilience.Event{Kind: resilience.EventAttemptFailed, Component: "retry", Name: "users", Attempt: 1, Err: errDown},
			`level=DEBUG msg=attempt-failed component=retry name=users attempt=1 error=down`},
		{"retry",
			resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users", Attempt: 2, Err: errDown, Wait: 40 * time.Millisecond},
			`level=INFO msg=retry component=retry name=users attempt=2 error=down wait=40ms`},
		{"retry at once",
			resilience.Event{Kind: resilience.EventRetry, Component: "retry", Attempt: 1, Err: errDown},
			`level=INFO msg=retry component=retry attempt=1 error=down wait=0s`},
		{"give up",
			resilience.Event{Kind: resilience.EventGiveUp, Component: "retry", Name: "users", Attempt: 3, Err: errDown, Reason: resilience.ErrRetriesExhausted},
			`level=WARN msg=give-up component=retry name=users attempt=3 error=down reason="resilience: retries exhausted"`},
		{"give up: the budget refused, logged once when it ran out",
			resilience.Event{Kind: resilience.EventGiveUp, Component: "retry", Name: "users", Attempt: 1, Err: errDown, Reason: resilience.ErrRetryBudgetExhausted},
			`level=DEBUG msg=give-up component=retry name=users attempt=1 error=down reason="resilience: retry budget exhausted"`},
		{"exhausted",
			resilience.Event{Kind: resilience.EventExhausted, Component: "quota", Name: "users", Attempt: 1, Err: resilience.ErrRetryBudgetExhausted},
			`level=WARN msg=exhausted component=quota name=users attempt=1 error="resilience: retry budget exhausted"`},
		{"replenished",
			resilience.Event{Kind: resilience.EventReplenished, Component: "quota", Name: "users", Attempt: 1, Duration: 3 * time.Second},
			`level=INFO msg=replenished component=quota name=users attempt=1 duration=3s`},
		{"timeout",
			resilience.Event{Kind: resilience.EventTimeout, Component: "timeout", Name: "users", Wait: 2 * time.Second},
			`level=INFO msg=timeout component=timeout name=users timeout=2s`},
		{"state change",
			resilience.Event{Kind: resilience.EventStateChange, Component: "breaker", Name: "users", From: resilience.BreakerClosed, To: resilience.BreakerOpen},
			`level=WARN msg=state-change component=breaker name=users from=closed to=open`},
		{"refused with a hint",
			resilience.Event{Kind: resilience.EventRefused, Component: "breaker", Err: resilience.ErrBreakerOpen, Wait: 30 * time.Second},
			`level=DEBUG msg=refused component=breaker error="resilience: circuit breaker open" retry_after=30s`},
		{"refused without a hint",
			resilience.Event{Kind: resilience.EventRefused, Component: "bulkhead", Err: resilience.ErrBulkheadFull},
			`level=DEBUG msg=refused component=bulkhead error="resilience: bulkhead full"`},
		{"wait started",
			resilience.Event{Kind: resilience.EventWaitStarted, Component: "bulkhead", Name: "db"},
			`level=DEBUG msg=wait-started component=bulkhead name=db`},
		{"wait ended",
			resilience.Event{Kind: resilience.EventWaitEnded, Component: "bulkhead", Name: "db", Wait: 5 * time.Millisecond},
			`level=DEBUG msg=wait-ended component=bulkhead name=db wait=5ms`},
		{"batch sent",
			resilience.Event{Kind: resilience.EventBatchSent, Component: "batcher", Name: "users", Size: 42, Duration: 3 * time.Millisecond},
			`level=DEBUG msg=batch-sent component=batcher name=users size=42 duration=3ms`},
		{"discarded",
			resilience.Event{Kind: resilience.EventDiscarded, Component: "timeout"},
			`level=DEBUG msg=discarded component=timeout`},
		{"late panic",
			resilience.Event{Kind: resilience.EventLatePanic, Component: "timeout", Panic: &resilience.PanicError{Value: "boom", Stack: []byte("main.f()")}},
			`level=ERROR msg=late-panic component=timeout panic=boom stack=main.f()`},
		{"call ended",
			resilience.Event{Kind: resilience.EventCallEnded, Component: "retry", Attempt: 1, Duration: time.Millisecond},
			`level=DEBUG msg=call-ended component=retry attempt=1 duration=1ms`},
		{"fallback",
			resilience.Event{Kind: resilience.EventFallback, Component: "fallback", Name: "users", Err: errDown},
			`level=INFO msg=fallback component=fallback name=users error=down`},
		{"hedge",
			resilience.Event{Kind: resilience.EventHedge, Component: "hedge", Attempt: 2, Wait: 10 * time.Millisecond},
			`level=DEBUG msg=hedge component=hedge attempt=2 wait=10ms`},
		{"a kind from a later version",
			resilience.Event{Kind: resilience.EventKind(200), Component: "hedge", Attempt: 2},
			`level=INFO msg=EventKind(200) component=hedge attempt=2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := resilience.NewSlogObserver(textLogger(&buf, slog.LevelDebug))
			o.Observe(context.Background(), tc.e)
			assert.Equal(t, tc.want+"\n", buf.String())
		})
	}
}

func TestSlogObserverLevels(t *testing.T) {
	var buf bytes.Buffer
	o := resilience.NewSlogObserver(textLogger(&buf, slog.LevelInfo),
		resilience.WithSlogLevel(resilience.EventRetry, slog.LevelDebug),
		resilience.WithSlogLevel(resilience.EventRefused, slog.LevelWarn),
	)
	ctx := context.Background()
	o.Observe(ctx, resilience.Event{Kind: resilience.EventRetry, Component: "retry", Attempt: 1})
	o.Observe(ctx, resilience.Event{Kind: resilience.EventAttemptFailed, Component: "retry", Attempt: 1})
	o.Observe(ctx, resilience.Event{Kind: resilience.EventRefused, Component: "bulkhead"})
	assert.Equal(t, "level=WARN msg=refused component=bulkhead\n", buf.String())
	assert.Equal(t, slog.LevelDebug, o.Level(resilience.EventRetry))
	assert.Equal(t, slog.LevelWarn, o.Level(resilience.EventGiveUp))
	assert.Equal(t, slog.LevelInfo, o.Level(resilience.EventKind(0)), "an unknown kind")
	assert.False(t, o.ObserveOutcomes(), "outcomes asked without a level for call-ended")

	var zero resilience.SlogObserver
	assert.Equal(t, slog.LevelInfo, zero.Level(resilience.EventGiveUp), "the zero observer's level")

	withOutcomes := resilience.NewSlogObserver(nil, resilience.WithSlogLevel(resilience.EventCallEnded, slog.LevelInfo))
	assert.True(t, withOutcomes.ObserveOutcomes(), "outcomes not asked with a level for call-ended")
}

// TestSlogObserverDefaultLogger: a nil logger is slog.Default at each event.
func TestSlogObserverDefaultLogger(t *testing.T) {
	o := resilience.NewSlogObserver(nil)
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(textLogger(&buf, slog.LevelInfo))
	defer slog.SetDefault(prev)
	o.Observe(context.Background(), resilience.Event{Kind: resilience.EventGiveUp, Component: "retry", Attempt: 3})
	assert.Equal(t, "level=WARN msg=give-up component=retry attempt=3\n", buf.String())
}

func TestSlogObserverBadOptions(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil option", func() { resilience.NewSlogObserver(nil, nil) }, "resilience: NewSlogObserver: option is nil"},
		{"kind zero", func() { resilience.WithSlogLevel(0, slog.LevelInfo) }, "resilience: WithSlogLevel: unknown event kind EventKind(0)"},
		{"unknown kind", func() { resilience.WithSlogLevel(99, slog.LevelInfo) }, "resilience: WithSlogLevel: unknown event kind EventKind(99)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// discardHandler is enabled at every level and drops every record without
// looking at it, so that only the observer's own allocations count.
type discardHandler struct{ enabled bool }

func (h discardHandler) Enabled(context.Context, slog.Level) bool { return h.enabled }
func (discardHandler) Handle(context.Context, slog.Record) error  { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h discardHandler) WithGroup(string) slog.Handler            { return h }

// TestSlogObserverAllocatesNothing pins that an event allocates nothing in
// the observer, whether its level is disabled or enabled.
func TestSlogObserverAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	errDown := errors.New("down")
	retry := resilience.Event{Kind: resilience.EventRetry, Component: "retry", Name: "users", Attempt: 2, Err: errDown, Wait: time.Second}
	change := resilience.Event{Kind: resilience.EventStateChange, Component: "breaker", Name: "users", From: resilience.BreakerClosed, To: resilience.BreakerOpen}
	tests := []struct {
		name    string
		enabled bool
		e       resilience.Event
	}{
		{"disabled", false, retry},
		{"enabled", true, retry},
		{"enabled, state change", true, change},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := resilience.NewSlogObserver(slog.New(discardHandler{enabled: tc.enabled}))
			if allocs := testing.AllocsPerRun(1000, func() { o.Observe(ctx, tc.e) }); allocs != 0 {
				t.Errorf("Observe allocates %v times per event, want 0", allocs)
			}
		})
	}
}

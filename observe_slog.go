package resilience

import (
	"context"
	"log/slog"
)

// SlogObserver is an [Observer] that logs each event through a
// [*slog.Logger]: the message is the kind's name, the attributes the fields
// it sets. [NewSlogObserver] makes one that logs at a level by kind:
//
//	Error  late-panic
//	Warn   give-up, state-change, exhausted
//	Info   retry, timeout, fallback, replenished, and kinds it does not know
//	Debug  attempt-failed, refused, wait-started, wait-ended, batch-sent, discarded, hedge
//
// ([WithSlogLevel] changes them; a give-up for [ErrRetryBudgetExhausted]
// logs at refused's.) It is safe for concurrent use; its zero value logs
// every event at Info to slog.Default().
type SlogObserver struct {
	logger   *slog.Logger // nil: slog.Default() at each event
	levels   [len(eventKindNames)]slog.Level
	outcomes bool
}

// defaultSlogLevels are the levels of the kinds a SlogObserver knows. A
// retry or a fallback's answer is news (Info); a give-up, a breaker that
// changes state or a budget that runs out needs someone's attention (Warn);
// a late panic, which no caller sees, is an Error. Hedges are Debug, for a
// Hedge starts them for the slowest calls by design, and so are refusals,
// for they come in floods: an open breaker refuses every call, and the
// change that opened it was logged at Warn. A give-up for want of budget
// logs at refused's level for the same reason (see Observe).
var defaultSlogLevels = [len(eventKindNames)]slog.Level{
	EventAttemptFailed: slog.LevelDebug,
	EventRetry:         slog.LevelInfo,
	EventGiveUp:        slog.LevelWarn,
	EventTimeout:       slog.LevelInfo,
	EventStateChange:   slog.LevelWarn,
	EventRefused:       slog.LevelDebug,
	EventWaitStarted:   slog.LevelDebug,
	EventWaitEnded:     slog.LevelDebug,
	EventBatchSent:     slog.LevelDebug,
	EventLatePanic:     slog.LevelError,
	EventDiscarded:     slog.LevelDebug,
	EventCallEnded:     slog.LevelDebug,
	EventFallback:      slog.LevelInfo,
	EventHedge:         slog.LevelDebug,
	EventExhausted:     slog.LevelWarn,
	EventReplenished:   slog.LevelInfo,
}

// NewSlogObserver returns an observer that logs events through logger. A
// nil logger means [slog.Default], looked up at each event, so that a later
// slog.SetDefault takes effect. It panics if an option is nil.
func NewSlogObserver(logger *slog.Logger, opts ...SlogOption) *SlogObserver {
	o := &SlogObserver{logger: logger, levels: defaultSlogLevels}
	for _, opt := range opts {
		checkOption("NewSlogObserver", opt)
		opt.applySlog(o)
	}
	return o
}

// SlogOption configures [NewSlogObserver].
type SlogOption interface {
	applySlog(*SlogObserver)
}

type slogOptionFunc func(*SlogObserver)

func (f slogOptionFunc) applySlog(o *SlogObserver) { f(o) }

// WithSlogLevel makes a [SlogObserver] log events of kind k at level l; a
// level for [EventCallEnded] makes it ask for one per call. It panics if k
// is not a kind this version of the package knows.
func WithSlogLevel(k EventKind, l slog.Level) SlogOption {
	if !k.known() {
		panic("resilience: WithSlogLevel: unknown event kind " + k.String())
	}
	return slogOptionFunc(func(o *SlogObserver) {
		o.levels[k] = l
		if k == EventCallEnded {
			o.outcomes = true
		}
	})
}

// ObserveOutcomes reports whether the observer was given a level for
// [EventCallEnded] with [WithSlogLevel].
func (o *SlogObserver) ObserveOutcomes() bool { return o.outcomes }

// Level returns the level at which the observer logs events of kind k:
// Info for a kind it does not know.
func (o *SlogObserver) Level(k EventKind) slog.Level {
	if k.known() {
		return o.levels[k]
	}
	return slog.LevelInfo
}

// Observe logs e, if the logger is enabled at e's level.
func (o *SlogObserver) Observe(ctx context.Context, e Event) {
	logger := o.logger
	if logger == nil {
		logger = slog.Default()
	}
	level := o.Level(e.Kind)
	if e.Kind == EventGiveUp && e.Reason == ErrRetryBudgetExhausted {
		level = o.levels[EventRefused]
	}
	if !logger.Enabled(ctx, level) {
		return
	}
	// Room for the most attributes a kind sets, so that the slice stays
	// on the stack.
	var buf [8]slog.Attr
	attrs := commonAttrs(buf[:0], e)
	attrs = kindAttrs(attrs, e)
	if e.Panic != nil {
		attrs = append(attrs, slog.Any("panic", e.Panic.Value), slog.String("stack", string(e.Panic.Stack)))
	}
	logger.LogAttrs(ctx, level, e.Kind.String(), attrs...)
}

// commonAttrs appends the attributes any event may have: who, which
// attempt, what error and why.
func commonAttrs(attrs []slog.Attr, e Event) []slog.Attr {
	attrs = append(attrs, slog.String("component", e.Component))
	if e.Name != "" {
		attrs = append(attrs, slog.String("name", e.Name))
	}
	if e.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("error", e.Err))
	}
	if e.Reason != nil {
		attrs = append(attrs, slog.Any("reason", e.Reason))
	}
	return attrs
}

// kindAttrs appends the attributes of e's kind: its wait, its states, its
// size, its duration.
func kindAttrs(attrs []slog.Attr, e Event) []slog.Attr {
	switch e.Kind {
	case EventRetry, EventWaitEnded, EventHedge:
		attrs = append(attrs, slog.Duration("wait", e.Wait))
	case EventTimeout:
		attrs = append(attrs, slog.Duration("timeout", e.Wait))
	case EventRefused:
		if se, ok := e.Err.(*ShedError); ok { // as the adaptive guards report it
			attrs = append(attrs, slog.String("priority", se.Priority().String()))
		}
		if e.Wait > 0 {
			attrs = append(attrs, slog.Duration("retry_after", e.Wait))
		}
	case EventStateChange:
		attrs = append(attrs, slog.String("from", e.From.String()), slog.String("to", e.To.String()))
	case EventLimitChanged:
		attrs = append(attrs, slog.Int("from", e.OldLimit), slog.Int("to", e.NewLimit))
	case EventBatchSent:
		attrs = append(attrs, slog.Int("size", e.Size))
	}
	if e.Duration > 0 || e.Kind == EventBatchSent || e.Kind == EventCallEnded {
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	return attrs
}

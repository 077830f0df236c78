package resilience

import (
	"context"
	"iter"
	"sync"
	"time"
)

// Cursor walks a [Backoff] one retry at a time, for loops that keep their
// own state, as jpillora/backoff does. A Cursor is safe for concurrent use.
type Cursor struct {
	b       Backoff
	idle    time.Duration
	idleSet bool // WithCursorIdleReset was given
	common

	mu   sync.Mutex
	n    int
	prev time.Duration
	last time.Time // when Next last returned
}

// NewCursor returns a cursor at the start of b. It panics if b or an option
// is nil.
func NewCursor(b Backoff, opts ...CursorOption) *Cursor {
	checkBackoff("NewCursor", b)
	c := &Cursor{b: b}
	for _, o := range opts {
		checkOption("NewCursor", o)
		o.applyCursor(c)
	}
	if c.rand != nil {
		c.b = withRandOf(c.b, c.rand)
	}
	return c
}

// CursorOption configures [NewCursor]; [WithClock] is one.
type CursorOption interface {
	applyCursor(*Cursor)
}

type cursorOptionFunc func(*Cursor)

func (f cursorOptionFunc) applyCursor(c *Cursor) { f(c) }

func (o Option) applyCursor(c *Cursor) { o.set(&c.common) }

// WithCursorIdleReset makes a cursor start over when more than d has passed
// since Next was last called, as Kubernetes' ExponentialBackoffManager
// does; with d = 0, after any pause (wait.Backoff's DelayWithReset with a
// reset of 0 differs: it never grows). By default a cursor never resets by
// itself. It panics if d is negative.
func WithCursorIdleReset(d time.Duration) CursorOption {
	checkDuration("WithCursorIdleReset", "d", d)
	return cursorOptionFunc(func(c *Cursor) { c.idle, c.idleSet = d, true })
}

// Next returns the wait before the next retry and advances the cursor. ok
// is false when the backoff makes no further retry; the cursor then stays
// where it is.
func (c *Cursor) Next() (d time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idleSet {
		now := c.now()
		if c.n > 0 && now.Sub(c.last) > c.idle {
			c.n, c.prev = 0, 0
		}
		c.last = now
	}
	d, ok = c.b.Delay(c.n+1, c.prev)
	if !ok {
		return 0, false
	}
	c.n++
	c.prev = d
	return d, true
}

// Reset puts the cursor back at the start.
func (c *Cursor) Reset() {
	c.mu.Lock()
	c.n, c.prev = 0, 0
	c.mu.Unlock()
}

// Attempt returns how many waits Next has returned since the start or the
// last reset.
func (c *Cursor) Attempt() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Delays returns the waits of b in order, ending when b makes no further
// retry (for one that never ends, the loop must break). It panics if b is
// nil.
func Delays(b Backoff) iter.Seq[time.Duration] {
	checkBackoff("Delays", b)
	return func(yield func(time.Duration) bool) {
		var prev time.Duration
		for n := 1; n > 0; n++ { // n > 0 stops at overflow
			d, ok := b.Delay(n, prev)
			if !ok || !yield(d) {
				return
			}
			prev = d
		}
	}
}

// Repeat calls f, waits as b says, and calls f again, until ctx ends or b
// stops, as Kubernetes' JitterUntil and BackoffUntil do; f is not called
// once ctx has ended. The wait starts when f returns, unless
// [WithRepeatFixedRate]. A panic in f ends Repeat, unless
// [WithRepeatPanicHandler] is given. It panics if ctx, b, f or an option is
// nil.
func Repeat(ctx context.Context, b Backoff, f func(ctx context.Context), opts ...RepeatOption) {
	if ctx == nil {
		panic("resilience: Repeat: ctx is nil")
	}
	checkBackoff("Repeat", b)
	if f == nil {
		panic("resilience: Repeat: f is nil")
	}
	var cfg repeatConfig
	for _, o := range opts {
		checkOption("Repeat", o)
		o.applyRepeat(&cfg)
	}
	var prev time.Duration
	for n := 1; ctx.Err() == nil; n++ {
		d, ok := b.Delay(n, prev)
		var period context.Context
		var stop context.CancelFunc
		if cfg.fixedRate && ok {
			period, stop = cfg.waitCtx(ctx, d)
		}
		cfg.call(ctx, f)
		if !ok {
			return
		}
		if period == nil {
			period, stop = cfg.waitCtx(ctx, d)
		}
		<-period.Done()
		stop()
		prev = d
	}
}

// RepeatOption configures [Repeat]; [WithClock] is one.
type RepeatOption interface {
	applyRepeat(*repeatConfig)
}

type repeatConfig struct {
	fixedRate bool
	onPanic   func(*PanicError)
	common
}

type repeatOptionFunc func(*repeatConfig)

func (f repeatOptionFunc) applyRepeat(c *repeatConfig) { f(c) }

func (o Option) applyRepeat(c *repeatConfig) { o.set(&c.common) }

// WithRepeatFixedRate makes [Repeat] start each wait when f is called
// rather than when it returns: a period that f outlasts is followed at once
// by the next call.
func WithRepeatFixedRate() RepeatOption {
	return repeatOptionFunc(func(c *repeatConfig) { c.fixedRate = true })
}

// WithRepeatPanicHandler makes [Repeat] survive panics in f: each is
// recovered and handed to h. It panics if h is nil.
func WithRepeatPanicHandler(h func(*PanicError)) RepeatOption {
	if h == nil {
		panic("resilience: WithRepeatPanicHandler: handler is nil")
	}
	return repeatOptionFunc(func(c *repeatConfig) { c.onPanic = h })
}

// call runs f, recovering a panic when there is a handler for it.
func (cfg *repeatConfig) call(ctx context.Context, f func(context.Context)) {
	if cfg.onPanic != nil {
		defer func() {
			if r := recover(); r != nil {
				cfg.onPanic(newPanicError(r))
			}
		}()
	}
	f(ctx)
}

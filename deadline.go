package resilience

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineCtx is the context a Timeout hands fn on the real clock: a
// deadline context that costs one allocation, against the four of
// context.WithTimeout and a runtime timer each.
//
// It is lazy. Nothing is armed when it is made: Err compares the clock with
// the deadline itself, so a fn that only checks Err, or ignores its context,
// costs no timer and no channel. The Done channel is made when asked for,
// and only then, or when a waiting caller or an AfterFunc needs to hear of
// the end, is the context put on the shared timing wheel (see wheel.go) and
// the parent watched. Its AfterFunc method lets a child derived with
// context.WithCancel or WithTimeout attach without a goroutine, as the
// context package's own contexts do: the context package looks for that
// method. A child derived through a wrapper that hides the method (a
// context.WithValue of this context) gets the context package's fallback
// instead, a goroutine that waits for either end; it still ends on time.
//
// Its Err is context.DeadlineExceeded once the deadline passed, the
// parent's error once the parent ended first, and context.Canceled once the
// Timeout returned. Its cause (context.Cause) is ErrTimeout after the
// deadline: Value answers the context package's lookup of a cause with a
// context canceled with that cause (see causeProbe), which relies on how
// Cause works today; ownDeadlineWorks checks it, and the rest, before the
// first use, so a release of Go that works otherwise makes every Timeout
// use the standard context instead.
type deadlineCtx struct {
	parent context.Context
	at     time.Duration // the deadline, on the monotonic clock since epoch
	state  atomic.Int32

	// Flags, packed beside state.
	armed   bool // on the wheel, and the parent watched; under mu
	watched bool // the waiting caller watches the parent itself
	inWheel bool // under the shard's lock
	trigger bool // a trigger context (see hook); set before it is shared

	mu         sync.Mutex
	done       atomic.Value // chan struct{}, made when asked for
	funcs      *afterFunc   // to call when the context ends
	stopParent func() bool  // stops watching the parent
	shard      *wheelShard  // set under mu when armed

	// hook, when set, hears of the context's end at its deadline or with
	// its parent (a waiting caller's wake-up). A trigger context is one
	// with no deadline of its own, ended only by its parent or its owner:
	// at is then the time of its trigger, when the wheel calls hook, in a
	// goroutine of its own, instead of ending the context (a Hedge's first
	// attempt, whose trigger starts the hedges).
	hook func(c *deadlineCtx)

	// On the wheel, under its shard's lock.
	next, prev *deadlineCtx
	tick       int64
}

// States of a deadlineCtx. A live context is dlLive until something is
// registered with it under mu (a Done channel, a function, the watch of
// its parent), and dlWatched from then on: a dlLive context ends with one
// compare-and-swap, and no lock.
const (
	dlLive     int32 = iota
	dlExpired        // the deadline passed
	dlParent         // the parent ended first
	dlReleased       // the Timeout returned
	dlWatched        // live, with something registered
)

// live reports whether the context has not ended.
func (c *deadlineCtx) live() bool {
	s := c.state.Load()
	return s == dlLive || s == dlWatched
}

// watch marks a live context as one with something registered, and
// reports whether it is live. c.mu is held.
func (c *deadlineCtx) watch() bool {
	return c.state.CompareAndSwap(dlLive, dlWatched) || c.state.Load() == dlWatched
}

const (
	// wheelMin and wheelMax bound the timeouts that get a deadlineCtx:
	// shorter ones would be late by too large a share (the wheel's ticks
	// are wheelTick apart), longer ones are rare.
	wheelMin = 10 * time.Millisecond
	wheelMax = 24 * time.Hour
	// bubbleGap: a reading of the clock this far from epoch is no real
	// one (see inBubble).
	bubbleGap = 20 * 365 * 24 * time.Hour
)

// epoch is the origin of every deadlineCtx's deadline, read once.
var epoch = time.Now()

// useOwnDeadline turns deadlineCtx off when false: every Timeout then uses
// the standard context.
var useOwnDeadline = true

// newDeadline returns fn's context for a timeout of d under parent, or nil
// when the standard context must serve: a timeout outside wheelMin and
// wheelMax, a caller inside a testing/synctest bubble, or a Go release on
// which deadlineCtx would be wrong.
func newDeadline(parent context.Context, d time.Duration) *deadlineCtx {
	now, ok := wheelNow(d, wheelMin)
	if !ok {
		return nil
	}
	return &deadlineCtx{parent: parent, at: now + d}
}

// wheelNow returns the time since epoch, for a deadlineCtx due d from now,
// or false when d is under least or over wheelMax, the caller is inside a
// testing/synctest bubble (a fake clock: see inBubble), or deadlineCtx
// would be wrong on this Go release.
func wheelNow(d, least time.Duration) (time.Duration, bool) {
	if d < least || d > wheelMax || !useOwnDeadline || !ownDeadlineWorks() {
		return 0, false
	}
	now := time.Since(epoch)
	if now < 0 || now > bubbleGap {
		return 0, false
	}
	return now, true
}

// Deadline returns the deadline, or the parent's when it comes first.
func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if c.trigger {
		return c.parent.Deadline()
	}
	d := epoch.Add(c.at)
	if pd, ok := c.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

// Err reports why the context ended, or nil. A live context finds out
// here whether its deadline passed or its parent ended.
func (c *deadlineCtx) Err() error {
	switch c.state.Load() {
	case dlLive, dlWatched:
		return c.poll()
	case dlExpired:
		return context.DeadlineExceeded
	case dlParent:
		return c.parent.Err() // an ended context's error never changes
	}
	return context.Canceled
}

// poll ends a live context whose parent ended or whose deadline passed,
// and returns its error.
func (c *deadlineCtx) poll() error {
	if c.parent.Err() != nil {
		c.end(dlParent)
		return c.Err()
	}
	if !c.trigger && time.Since(epoch) >= c.at {
		c.end(dlExpired)
		return c.Err()
	}
	return nil
}

// closed holds the Done channel of a context asked for it after it ended,
// made on first use so that importing the package allocates nothing.
var closed atomic.Pointer[chan struct{}]

func closedChan() chan struct{} {
	if p := closed.Load(); p != nil {
		return *p
	}
	ch := make(chan struct{})
	close(ch)
	closed.CompareAndSwap(nil, &ch)
	return *closed.Load()
}

// Done returns a channel closed when the context ends, made on the first
// call.
func (c *deadlineCtx) Done() <-chan struct{} {
	if d, ok := c.done.Load().(chan struct{}); ok {
		return d
	}
	c.mu.Lock()
	d, ok := c.done.Load().(chan struct{})
	if !ok {
		d = closedChan()
		if c.watch() {
			d = make(chan struct{})
		}
		c.done.Store(d)
	}
	c.mu.Unlock()
	c.arm()
	return d
}

// Value returns the parent's value for key, except that after the deadline
// the context package's lookup of a cause finds ErrTimeout.
func (c *deadlineCtx) Value(key any) any {
	if c.state.Load() == dlExpired {
		if v := causeProbe.Value(key); v != nil {
			return v
		}
	}
	return c.parent.Value(key)
}

func (c *deadlineCtx) String() string {
	if c.trigger {
		return "resilience.Hedge context"
	}
	return "resilience.Timeout context"
}

// afterFunc is a function registered with AfterFunc.
type afterFunc struct {
	f    func()
	next *afterFunc
}

// AfterFunc arranges for f to be called once the context ends, and returns
// a function that unregisters f, reporting whether it did so before f was
// called. The context package uses it to attach a derived child. f is
// called in the goroutine that ends the context, or in a goroutine of its
// own if the context ended already (the context package calls AfterFunc
// with a lock held).
func (c *deadlineCtx) AfterFunc(f func()) func() bool {
	n := &afterFunc{f: f}
	c.mu.Lock()
	if !c.watch() {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	n.next, c.funcs = c.funcs, n
	c.mu.Unlock()
	c.arm()
	return func() bool { return c.unregister(n) }
}

func (c *deadlineCtx) unregister(n *afterFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := &c.funcs; *p != nil; p = &(*p).next {
		if *p == n {
			*p = n.next
			return true
		}
	}
	return false
}

// armNew puts a context that is not shared yet on the wheel: the default
// mode's caller, who waits for it to end.
func (c *deadlineCtx) armNew() {
	c.armed, c.shard = true, pickShard(c)
	c.shard.add(c)
}

// setTrigger makes c, which is not shared yet, a trigger context with no
// deadline of its own, and files it on the wheel to call fire at c.at.
func (c *deadlineCtx) setTrigger(fire func(c *deadlineCtx)) {
	c.trigger, c.hook, c.shard = true, fire, pickShard(c)
	c.shard.add(c)
}

// triggerMin is the shortest delay a trigger on the wheel serves: a
// shorter one would be late by more than its own length.
const triggerMin = wheelTick

// arm puts a live context on the wheel and watches its parent, once:
// someone now waits for it to end.
func (c *deadlineCtx) arm() {
	c.mu.Lock()
	if c.armed || !c.watch() {
		c.mu.Unlock()
		return
	}
	c.armed = true
	if !c.trigger {
		c.shard = pickShard(c)
	}
	c.mu.Unlock()
	if !c.watched && c.parent.Done() != nil {
		stop := context.AfterFunc(c.parent, c.parentEnded)
		c.mu.Lock()
		if c.live() {
			c.stopParent, stop = stop, nil
		}
		c.mu.Unlock()
		if stop != nil {
			stop()
		}
	}
	if !c.trigger {
		c.shard.add(c)
	}
	c.poll()
}

func (c *deadlineCtx) parentEnded() { c.end(dlParent) }

// release ends the context when the Timeout returns: fn's context, and
// every context derived from it, is canceled.
func (c *deadlineCtx) release() { c.end(dlReleased) }

// releaseTrigger ends a trigger context, and reports whether it took the
// trigger off the wheel unfired: then it never fires.
func (c *deadlineCtx) releaseTrigger() bool { return c.end(dlReleased) }

// end moves a live context to state st, closes Done, calls the registered
// functions and tells a waiting caller. It does nothing to a context that
// ended already. It reports whether it took the context off the wheel:
// for a trigger, that it was never fired and never will.
func (c *deadlineCtx) end(st int32) (removed bool) {
	if c.state.CompareAndSwap(dlLive, st) {
		// Nothing was registered: no channel to close, no function to
		// call, no watch of the parent to stop. The shard, if any, was set
		// before the context was shared.
		if c.shard != nil {
			removed = c.shard.remove(c)
		}
		c.tell(st)
		return removed
	}
	c.mu.Lock()
	if !c.state.CompareAndSwap(dlWatched, st) {
		c.mu.Unlock()
		return false
	}
	if d, ok := c.done.Load().(chan struct{}); ok {
		close(d)
	}
	funcs, stop, shard := c.funcs, c.stopParent, c.shard
	c.funcs, c.stopParent = nil, nil
	c.mu.Unlock()
	if shard != nil {
		removed = shard.remove(c)
	}
	if stop != nil {
		stop()
	}
	for f := funcs; f != nil; f = f.next {
		f.f()
	}
	c.tell(st)
	return removed
}

// tell wakes the waiting caller, if any, of a context that ended at its
// deadline or with its parent.
func (c *deadlineCtx) tell(st int32) {
	if st != dlReleased && c.hook != nil && !c.trigger {
		c.hook(c)
	}
}

// wakeHook returns the hook of a deadline context whose waiting caller
// waits on wake, a channel with room for one token: the hook leaves a
// token unless one waits already.
func wakeHook(wake chan struct{}) func(*deadlineCtx) {
	return func(*deadlineCtx) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

var (
	ownDeadlineOnce sync.Once
	ownDeadlineOK   bool
	// causeProbe is a context canceled with cause ErrTimeout. The context
	// package finds a context's cause by asking Value for its own canceled
	// context under a private key, which causeProbe answers and nothing
	// else does; an expired deadlineCtx passes the question to it.
	causeProbe context.Context
)

// ownDeadlineWorks reports whether deadlineCtx behaves as it must with the
// context package of this Go release: an expired one has ErrTimeout as its
// cause, a child derived with context.WithCancel attaches through
// AfterFunc (no goroutine) and ends with it, with the same cause. It checks
// once, at the first timeout.
func ownDeadlineWorks() bool {
	ownDeadlineOnce.Do(func() {
		probe, cancel := context.WithCancelCause(context.Background())
		cancel(ErrTimeout)
		causeProbe = probe
		ownDeadlineOK = checkOwnDeadline()
	})
	return ownDeadlineOK
}

func checkOwnDeadline() bool {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	c := &deadlineCtx{parent: parent, at: time.Since(epoch) + time.Hour, armed: true, watched: true}
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	c.mu.Lock()
	attached := c.funcs != nil
	c.mu.Unlock()
	c.end(dlExpired)
	return attached &&
		c.Err() == context.DeadlineExceeded && context.Cause(c) == ErrTimeout &&
		child.Err() == context.DeadlineExceeded && context.Cause(child) == ErrTimeout
}

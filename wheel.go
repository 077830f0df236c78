package resilience

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The timing wheel ends the deadlineCtxs that someone waits on. A runtime
// timer per context costs an allocation and a heap operation under a lock
// on every call; the wheel instead files each context in a slot for its
// tick (its deadline rounded up to a whole wheelTick) and keeps one runtime
// timer, set for the earliest slot in use in any shard. Almost every
// context leaves the wheel before its tick, when its call returns, so the
// timer fires about once per timeout, and at most once a tick, not once
// per call or per shard.
//
// A deadline is late by up to one tick plus the runtime timer's own
// lateness. Shards, four per processor, spread the lock.

const (
	wheelTick  = time.Millisecond
	wheelSlots = 1024 // a power of two; a round is wheelSlots ticks
)

type wheelShard struct {
	mu    sync.Mutex
	slots [wheelSlots]*deadlineCtx // each a list of the contexts due at ticks of that slot
	n     int                      // contexts on the wheel
	done  int64                    // every tick before done has been processed
	w     *wheelTimer              // the timer of this shard's wheel
	_     [64]byte                 // keep shards apart in the cache
}

// wheelTimer is the runtime timer of a wheel's shards.
type wheelTimer struct {
	at     atomic.Int64 // the tick the timer is set for; 0: none
	mu     sync.Mutex   // over setting the timer
	timer  *time.Timer
	shards []wheelShard
}

var wheel struct {
	once sync.Once
	wheelTimer
}

// init gives w n shards.
func (w *wheelTimer) init(n int) {
	w.shards = make([]wheelShard, n)
	for i := range w.shards {
		w.shards[i].w = w
	}
}

// pickShard returns the shard of c, chosen by its address: contexts made
// one after the other lie a size class apart, so they go round the shards,
// which spreads the lock as well as a random choice, for less than a
// random draw costs, and without knowing the processor.
func pickShard(c *deadlineCtx) *wheelShard {
	wheel.once.Do(func() {
		n := 1
		for n < 4*runtime.GOMAXPROCS(0) && n < 64 {
			n *= 2
		}
		wheel.init(n)
	})
	i := uintptr(unsafe.Pointer(c)) / unsafe.Sizeof(*c)
	return &wheel.shards[i&uintptr(len(wheel.shards)-1)]
}

// nowTick returns the current tick: every tick up to it is due.
func nowTick() int64 { return int64(time.Since(epoch) / wheelTick) }

// add files a live context for its deadline's tick.
func (s *wheelShard) add(c *deadlineCtx) {
	tick := int64((c.at + wheelTick - 1) / wheelTick)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.live() {
		return
	}
	if s.done == 0 {
		s.done = nowTick()
	}
	tick = max(tick, s.done)
	c.tick, c.inWheel = tick, true
	head := &s.slots[tick&(wheelSlots-1)]
	c.prev, c.next = nil, *head
	if *head != nil {
		(*head).prev = c
	}
	*head = c
	s.n++
	s.w.arm(tick)
}

// remove takes c off the wheel if it is on it, and reports whether it was.
func (s *wheelShard) remove(c *deadlineCtx) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.inWheel {
		return false
	}
	s.unlink(c)
	return true
}

// unlink takes c, which is on the wheel, off it. s.mu is held.
func (s *wheelShard) unlink(c *deadlineCtx) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		s.slots[c.tick&(wheelSlots-1)] = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.next, c.prev, c.inWheel = nil, nil, false
	s.n--
}

// arm makes sure the timer fires by tick. A shard's lock is held: the
// order is a shard's lock, then the timer's.
func (w *wheelTimer) arm(tick int64) {
	if at := w.at.Load(); at != 0 && at <= tick {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if at := w.at.Load(); at != 0 && at <= tick {
		return
	}
	w.at.Store(tick)
	d := time.Until(epoch.Add(time.Duration(tick) * wheelTick))
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

func (w *wheelTimer) fire() { w.process(nowTick()) }

// process processes every shard up to tick now, which the timer has
// reached. The timer is marked unset first: a context filed from then on
// sets it again, and every shard with contexts left sets it for its
// earliest.
func (w *wheelTimer) process(now int64) {
	w.mu.Lock()
	w.at.Store(0)
	w.mu.Unlock()
	for i := range w.shards {
		w.shards[i].expire(now)
	}
}

// expire ends every context due at or before tick now, and sets the timer
// for the next slot in use.
func (s *wheelShard) expire(now int64) {
	var due *deadlineCtx
	s.mu.Lock()
	if s.n == 0 {
		s.done = max(s.done, now+1)
		s.mu.Unlock()
		return
	}
	from := max(s.done, now-wheelSlots+1)
	for t := from; t <= now; t++ {
		for c := s.slots[t&(wheelSlots-1)]; c != nil; {
			next := c.next
			if c.tick <= now {
				s.unlink(c)
				c.next, due = due, c
			}
			c = next
		}
	}
	s.done = max(s.done, now+1)
	if s.n > 0 {
		for t := s.done; t < s.done+wheelSlots; t++ {
			if s.slots[t&(wheelSlots-1)] != nil {
				s.w.arm(t)
				break
			}
		}
	}
	s.mu.Unlock()
	// Off the wheel, the contexts are ours: end no longer touches their
	// links, for they are not inWheel.
	for c := due; c != nil; {
		next := c.next
		c.next = nil
		c.due()
		c = next
	}
}

// due acts on c, taken off the wheel at its tick: a deadline ends the
// context, a trigger fires, in a goroutine of its own, for its work may
// take time and the wheel's may not.
func (c *deadlineCtx) due() {
	if c.trigger {
		go c.hook(c)
		return
	}
	c.end(dlExpired)
}

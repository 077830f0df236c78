package resilience

import (
	"context"
	"sync"
	"time"
)

// hedgeState is a call that hedges: its attempts and who won.
type hedgeState[T any] struct {
	h     *hedge[T]
	ctx   context.Context // the caller's
	next  chain[T]
	fn    Func[T]
	delay time.Duration

	mu       sync.Mutex
	started  int // attempts started, the first included
	running  int
	decided  bool // the answer is chosen; later results are losers'
	v        T
	err      error
	panic    *PanicError
	cancels  []context.CancelFunc // of each attempt's context
	stopNext func() bool          // the timer of the next hedge
	done     chan struct{}        // closed when decided
}

// launch starts one hedge, if the call is still undecided, the hedges are
// not all spent and the budget allows, and arms the timer of the next.
// detached says that it runs in a timer's goroutine, not the caller's.
func (s *hedgeState[T]) launch(detached bool) {
	h := s.h
	s.mu.Lock()
	if s.decided || s.started > h.max {
		s.mu.Unlock()
		return
	}
	if !h.budget.take() && !h.budget.takeFloor() {
		s.mu.Unlock()
		if h.reports() {
			h.emit(s.ctx, Event{Kind: EventRefused, Component: KindHedge, Attempt: s.started + 1, Err: ErrRetryBudgetExhausted}, detached)
		}
		return
	}
	s.started++
	n := s.started
	s.running++
	actx, cancel := context.WithCancel(s.ctx)
	s.cancels = append(s.cancels, cancel)
	if s.delay > 0 && s.started <= h.max {
		s.stopNext = h.afterFunc(s.delay, s.launchLater)
	}
	s.mu.Unlock()
	// Started once reported, so that the report comes before the attempt
	// can answer, and started also when the observer panics or exits its
	// goroutine, so that no attempt is counted and never run.
	defer func() { go s.attempt(actx, n) }()
	if h.reports() {
		h.emit(s.ctx, Event{Kind: EventHedge, Component: KindHedge, Attempt: n, Wait: s.delay}, detached)
	}
}

// launchLater is launch for the timer of the next hedge.
func (s *hedgeState[T]) launchLater() { s.launch(true) }

// emit reports e to the observer: a panic in Observe goes up through the
// caller's call, or, detached, in a goroutine of the hedge's own, is
// dropped.
func (h *hedge[T]) emit(ctx context.Context, e Event, detached bool) {
	if detached {
		h.observeDetached(ctx, e)
		return
	}
	h.observe(ctx, e)
}

// attempt runs hedge n in its own goroutine.
func (s *hedgeState[T]) attempt(ctx context.Context, n int) {
	var start time.Time
	if s.h.lat != nil {
		start = s.h.now()
	}
	finished := false
	defer func() {
		if !finished {
			var zero T
			s.finish(zero, nil, newPanicError(recover()), n)
		}
	}()
	v, err := s.next(ctx, s.fn)
	finished = true
	if err == nil && s.h.lat != nil {
		s.h.lat.Record(s.h.since(start))
	}
	s.finish(v, err, nil, n)
}

// finish takes the outcome of attempt n: the answer if it is acceptable,
// or the last of all; a loser's if the answer is chosen already.
func (s *hedgeState[T]) finish(v T, err error, pe *PanicError, n int) {
	h := s.h
	s.mu.Lock()
	s.running--
	if s.decided {
		s.mu.Unlock()
		// Attempts after the first run in goroutines of their own.
		detached := n > 1
		switch {
		case pe != nil:
			if h.reports() {
				h.emit(s.ctx, Event{Kind: EventLatePanic, Component: KindHedge, Panic: pe}, detached)
			}
		case err == nil && h.discard != nil:
			callDiscard(s.ctx, &h.common, KindHedge, h.discard, v, detached)
			if h.reports() {
				h.emit(s.ctx, Event{Kind: EventDiscarded, Component: KindHedge}, detached)
			}
		}
		return
	}
	if pe == nil && err != nil && h.retryable(s.ctx, err) && s.running > 0 {
		s.mu.Unlock() // the others go on
		return
	}
	s.v, s.err, s.panic = v, err, pe
	s.decide()
	losers := s.cancels
	s.mu.Unlock()
	// The winner's context lives until the caller returns.
	for i, cancel := range losers {
		if i != n-1 {
			cancel()
		}
	}
}

// decide closes the call: no further hedge. s.mu is held.
func (s *hedgeState[T]) decide() {
	s.decided = true
	if s.stopNext != nil {
		s.stopNext()
	}
	close(s.done)
}

// abandon closes a call whose first attempt panicked in the caller's
// goroutine: the hedges become losers.
func (s *hedgeState[T]) abandon() {
	s.mu.Lock()
	if !s.decided {
		s.decide()
	}
	cancels := s.cancels
	s.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// join hands over the first attempt's outcome and waits for the answer.
func (s *hedgeState[T]) join(v T, err error) (T, error) {
	s.finish(v, err, nil, 1)
	select {
	case <-s.done:
	case <-s.ctx.Done():
		s.mu.Lock()
		if !s.decided {
			var zero T
			s.v, s.err, s.panic = zero, s.ctx.Err(), nil
			s.decide()
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	v, err, pe, cancels := s.v, s.err, s.panic, s.cancels
	s.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	if pe != nil {
		repanic(pe)
	}
	return v, err
}

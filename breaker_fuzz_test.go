package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

// breakerModel is the state machine of a Breaker with 3 consecutive
// failures to open, a 1s cool-down, 2 probes and 2 successes to close,
// written as plainly as possible.
type breakerModel struct {
	state  resilience.BreakerState
	gen    int
	fails  int
	until  time.Duration
	probes int
	succ   int
}

type modelTicket struct {
	gen   int
	probe bool
}

func (m *breakerModel) advance(now time.Duration) {
	if m.state == resilience.BreakerOpen && now >= m.until {
		m.state, m.gen, m.probes, m.succ = resilience.BreakerHalfOpen, m.gen+1, 0, 0
	}
}

func (m *breakerModel) enter(now time.Duration) (modelTicket, bool) {
	m.advance(now)
	switch m.state {
	case resilience.BreakerClosed:
		return modelTicket{m.gen, false}, true
	case resilience.BreakerHalfOpen:
		if m.probes < 2 {
			m.probes++
			return modelTicket{m.gen, true}, true
		}
	}
	return modelTicket{}, false
}

func (m *breakerModel) exit(now time.Duration, t modelTicket, failed bool) {
	if t.gen != m.gen {
		return
	}
	open := func() {
		m.state, m.gen, m.until, m.probes, m.succ = resilience.BreakerOpen, m.gen+1, now+time.Second, 0, 0
	}
	if t.probe {
		m.probes--
		switch {
		case failed:
			open()
		case m.succ+1 >= 2:
			m.state, m.gen, m.fails, m.probes, m.succ = resilience.BreakerClosed, m.gen+1, 0, 0, 0
		default:
			m.succ++
		}
		return
	}
	if !failed {
		m.fails = 0
		return
	}
	m.fails++
	if m.fails >= 3 {
		open()
	}
}

// FuzzBreaker drives a Breaker and the model with the same random events
// (clock moves, successes, failures, panics, probes held across events)
// and checks that they agree at every step, and the invariants: probes in
// flight never exceed the bound, no count goes negative.
func FuzzBreaker(f *testing.F) {
	f.Add([]byte{2, 2, 2, 1, 0, 10, 3, 3, 3, 4, 4, 1})
	f.Add([]byte{6, 6, 6, 0, 20, 3, 5, 0, 20, 3, 3, 4, 4})
	f.Add([]byte{2, 3, 2, 2, 0, 10, 3, 3, 3, 5, 4, 1, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		mock := newManualClock()
		start := mock.Now()
		b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerThreshold(3),
			resilience.WithBreakerCoolDown(time.Second), resilience.WithBreakerProbes(2), resilience.WithBreakerSuccessThreshold(2))
		p := resilience.Guarded[int](b)
		var m breakerModel
		type held struct {
			done func(error)
			t    modelTicket
		}
		var holding []held
		now := func() time.Duration { return mock.Now().Sub(start) }
		for i := 0; i < len(ops); i++ {
			op := ops[i] % 7
			switch op {
			case 0: // move the clock
				if i+1 < len(ops) {
					i++
					mock.Add(time.Duration(ops[i]) * 100 * time.Millisecond)
				}
			case 1, 2, 6: // a call that succeeds, fails or panics
				mt, admitted := m.enter(now())
				ran := false
				func() {
					defer func() { _ = recover() }()
					_, _ = p.Execute(context.Background(), func(context.Context) (int, error) {
						ran = true
						switch op {
						case 2:
							return 0, errDown
						case 6:
							panic("boom")
						}
						return 1, nil
					})
				}()
				if ran != admitted {
					t.Fatalf("op %d: breaker admitted=%v, model admitted=%v", i, ran, admitted)
				}
				if admitted {
					m.exit(now(), mt, op != 1)
				}
			case 3: // enter and hold the call open
				mt, admitted := m.enter(now())
				done, err := b.Enter(context.Background())
				if (err == nil) != admitted {
					t.Fatalf("op %d: Enter err=%v, model admitted=%v", i, err, admitted)
				}
				if admitted {
					holding = append(holding, held{done, mt})
				}
			case 4, 5: // finish the oldest held call
				if len(holding) == 0 {
					continue
				}
				h := holding[0]
				holding = holding[1:]
				var err error
				if op == 5 {
					err = errDown
				}
				h.done(err)
				m.exit(now(), h.t, op == 5)
			}
			m.advance(now())
			metrics := b.Metrics()
			if metrics.State != m.state {
				t.Fatalf("op %d (%d): state %v, model %v", i, op, metrics.State, m.state)
			}
			if metrics.Probes != m.probes || metrics.Probes > 2 || metrics.Probes < 0 {
				t.Fatalf("op %d: probes %d, model %d (bound 2)", i, metrics.Probes, m.probes)
			}
			if m.state == resilience.BreakerClosed && metrics.ConsecutiveFailures != m.fails {
				t.Fatalf("op %d: consecutive failures %d, model %d", i, metrics.ConsecutiveFailures, m.fails)
			}
			if metrics.Refused < 0 || metrics.Trips < 0 {
				t.Fatalf("op %d: negative count in %+v", i, metrics)
			}
		}
	})
}

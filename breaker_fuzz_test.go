package resilience_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faf87a20/resilience"
)

// breakerModel is the state machine of a Breaker with a 1s cool-down, 2
// probes and 2 successes to close, and the rules its configuration picks,
// written as plainly as possible: every rule checked after every outcome,
// windows as lists of outcomes. An ignored outcome frees its probe and
// changes nothing else.
type breakerModel struct {
	// configuration
	threshold int
	expiry    time.Duration // 0: successes reset the consecutive count
	window    int           // 0: none, 1: the last n calls, 2: the last span
	n         int
	minCalls  int
	rate      float64
	span      time.Duration

	state    resilience.BreakerState
	gen      int
	fails    int
	lastFail time.Duration
	hasLast  bool
	until    time.Duration
	probes   int
	succ     int
	outcomes []modelOutcome // closed state, oldest first
}

type modelOutcome struct {
	at     time.Duration
	failed bool
}

type modelTicket struct {
	gen   int
	probe bool
}

// newBreakerModel decodes a configuration: a threshold of 0, 1, 2, 3 or
// 5, no window, a window of 1 to 8 calls or one of 2s, a minimum of calls,
// a rate of 1/4, 1/2 or 1, and a failure expiry or none.
func newBreakerModel(config uint16) *breakerModel {
	c := int(config)
	m := &breakerModel{
		threshold: []int{0, 1, 2, 3, 5}[c%5],
		window:    c / 5 % 3,
		n:         1 + c/15%8,
		rate:      []float64{0.25, 0.5, 1}[c/960%3],
		span:      2 * time.Second,
	}
	m.minCalls = 1 + c/120%m.n
	if m.window == 0 && m.threshold == 0 {
		m.threshold = 3
	}
	if m.threshold > 0 && c/2880%2 == 1 {
		m.expiry = 500 * time.Millisecond
	}
	return m
}

func (m *breakerModel) options() []resilience.BreakerOption {
	opts := []resilience.BreakerOption{resilience.WithBreakerThreshold(m.threshold), resilience.WithBreakerCoolDown(time.Second),
		resilience.WithBreakerProbes(2), resilience.WithBreakerSuccessThreshold(2), resilience.WithBreakerClassifier(fuzzClassifier)}
	switch m.window {
	case 1:
		opts = append(opts, resilience.WithBreakerFailureRate(m.rate, m.minCalls, m.n))
	case 2:
		opts = append(opts, resilience.WithBreakerFailureRateWindow(m.rate, m.minCalls, m.span))
	}
	if m.expiry > 0 {
		opts = append(opts, resilience.WithBreakerFailureExpiry(m.expiry))
	}
	return opts
}

// counts returns the outcomes and failures in the window at now.
func (m *breakerModel) counts(now time.Duration) (calls, failures int) {
	var in []modelOutcome
	switch m.window {
	case 1:
		in = m.outcomes[max(len(m.outcomes)-m.n, 0):]
	case 2:
		width := m.span / 10
		for _, o := range m.outcomes {
			if now/width-o.at/width < 10 {
				in = append(in, o)
			}
		}
	}
	for _, o := range in {
		if o.failed {
			failures++
		}
	}
	return len(in), failures
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

// fuzzClassifier ignores errIgnored and counts every other error as a
// failure.
func fuzzClassifier(err error) resilience.Outcome {
	if errors.Is(err, errIgnored) {
		return resilience.OutcomeIgnored
	}
	return resilience.OutcomeFailure
}

var errIgnored = errors.New("ignored")

// opOutcomes are the outcomes of the fuzz test's ops that end a call.
var opOutcomes = [...]resilience.Outcome{
	1: resilience.OutcomeSuccess, 2: resilience.OutcomeFailure, 6: resilience.OutcomeFailure, 7: resilience.OutcomeIgnored,
	4: resilience.OutcomeSuccess, 5: resilience.OutcomeFailure, 8: resilience.OutcomeIgnored,
}

// exit ends the call of ticket t at now as a success, a failure or an
// ignored call.
func (m *breakerModel) exit(now time.Duration, t modelTicket, o resilience.Outcome) {
	if t.gen != m.gen {
		return
	}
	failed := o == resilience.OutcomeFailure
	if o == resilience.OutcomeIgnored {
		if t.probe {
			m.probes--
		}
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
			m.state, m.gen, m.probes, m.succ = resilience.BreakerClosed, m.gen+1, 0, 0
			m.fails, m.hasLast, m.outcomes = 0, false, nil
		default:
			m.succ++
		}
		return
	}
	m.outcomes = append(m.outcomes, modelOutcome{now, failed})
	calls, failures := m.counts(now)
	trip := m.window != 0 && calls >= m.minCalls && float64(failures) >= m.rate*float64(calls)
	switch {
	case !failed && m.expiry == 0:
		m.fails = 0
	case failed && m.threshold > 0:
		if m.expiry > 0 && m.hasLast && now-m.lastFail > m.expiry {
			m.fails = 0
		}
		m.lastFail, m.hasLast = now, true
		m.fails++
		trip = trip || m.fails >= m.threshold
	}
	if trip {
		open()
	}
}

// FuzzBreaker drives a Breaker and the model with the same configuration
// and the same random events (clock moves, successes, failures, ignored
// calls, panics, probes held across events) and checks that they agree at every step on
// the state, the probes in flight, the consecutive failures and the
// window's counts.
func FuzzBreaker(f *testing.F) {
	f.Add(uint16(3), []byte{2, 2, 2, 1, 0, 10, 3, 3, 3, 4, 4, 1})
	f.Add(uint16(3), []byte{6, 6, 6, 0, 20, 3, 5, 0, 20, 3, 3, 4, 4})
	f.Add(uint16(3), []byte{2, 3, 2, 2, 0, 10, 3, 3, 3, 5, 4, 1, 2})
	// The default threshold beside a window: five failures that are not
	// consecutive do not open it.
	f.Add(uint16(2874), []byte{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}) // the last 8 calls
	f.Add(uint16(2009), []byte{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}) // the last 2s
	f.Add(uint16(0+2*5+120*2+960*1), []byte{2, 0, 3, 2, 0, 3, 1, 0, 3, 2, 2, 2, 0, 30, 1, 1})
	f.Add(uint16(2+1*5+15*3+2880), []byte{2, 0, 4, 2, 0, 6, 2, 1, 2, 2})
	// Ignored calls: in the closed state they count in no window and end
	// no run of failures; an ignored probe frees its slot.
	f.Add(uint16(2), []byte{2, 7, 2, 7, 7, 2, 0, 10, 3, 3, 8, 3, 4, 7, 1, 1})
	f.Add(uint16(1+1*5+15*3), []byte{2, 7, 7, 7, 2, 3, 8, 2, 0, 10, 7, 3, 8, 3, 4, 4})
	f.Fuzz(func(t *testing.T, config uint16, ops []byte) {
		m := newBreakerModel(config)
		mock := newManualClock()
		start := mock.Now()
		b := resilience.NewBreaker(append(m.options(), resilience.WithClock(mock))...)
		p := resilience.Guarded[int](b)
		type held struct {
			done func(error)
			t    modelTicket
		}
		var holding []held
		now := func() time.Duration { return mock.Now().Sub(start) }
		for i := 0; i < len(ops); i++ {
			op := ops[i] % 9
			switch op {
			case 0: // move the clock
				if i+1 < len(ops) {
					i++
					mock.Add(time.Duration(ops[i]) * 100 * time.Millisecond)
				}
			case 1, 2, 6, 7: // a call that succeeds, fails, panics or is ignored
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
						case 7:
							return 0, errIgnored
						}
						return 1, nil
					})
				}()
				if ran != admitted {
					t.Fatalf("op %d: breaker admitted=%v, model admitted=%v", i, ran, admitted)
				}
				if admitted {
					m.exit(now(), mt, opOutcomes[op])
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
			case 4, 5, 8: // finish the oldest held call
				if len(holding) == 0 {
					continue
				}
				h := holding[0]
				holding = holding[1:]
				var err error
				switch op {
				case 5:
					err = errDown
				case 8:
					err = errIgnored
				}
				h.done(err)
				m.exit(now(), h.t, opOutcomes[op])
			}
			m.advance(now())
			metrics := b.Snapshot()
			if metrics.State != m.state {
				t.Fatalf("op %d (%d): state %v, model %v", i, op, metrics.State, m.state)
			}
			if metrics.Probes != m.probes || metrics.Probes > 2 || metrics.Probes < 0 {
				t.Fatalf("op %d: probes %d, model %d (bound 2)", i, metrics.Probes, m.probes)
			}
			if m.state == resilience.BreakerClosed {
				if metrics.ConsecutiveFailures != m.fails {
					t.Fatalf("op %d: consecutive failures %d, model %d", i, metrics.ConsecutiveFailures, m.fails)
				}
				calls, failures := m.counts(now())
				if metrics.WindowCalls != calls || metrics.WindowFailures != failures {
					t.Fatalf("op %d: window %d calls %d failures, model %d %d", i, metrics.WindowCalls, metrics.WindowFailures, calls, failures)
				}
			}
			if metrics.Trips < 0 {
				t.Fatalf("op %d: negative count in %+v", i, metrics)
			}
		}
	})
}

package resilience

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// failEvery returns a fn whose every k-th call fails, starting with the
// first.
func failEvery(k int) Func[int] { return failEveryWith(k, errors.New("transient")) }

// timeoutEvery returns a fn whose every k-th call times out, starting with
// the first.
func timeoutEvery(k int) Func[int] { return failEveryWith(k, ErrTimeout) }

// failEveryWith returns a fn whose every k-th call fails with err, starting
// with the first.
func failEveryWith(k int, err error) Func[int] {
	n := 0
	return func(context.Context) (int, error) {
		n++
		if n%k == 1 {
			return 0, err
		}
		return n, nil
	}
}

// TestRetryAllocatesNothing pins the zero-allocation paths: a success, a
// failure retried until it succeeds, with and without an observer. (Each
// case also checks that its calls took the path named: AllocsPerRun rounds
// an average down, so a path that allocates on half the calls would pass.)
func TestRetryAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	events := &counter{}
	outcomes := &counter{Outcomes: true}
	tests := []struct {
		name    string
		p       Policy[int]
		fn      Func[int]
		retries bool // every call is retried once
	}{
		{"success", Retry[int](), okFunc, false},
		{"fail then okFunc, no throttle", Retry[int](WithBackoff(Constant(0)), WithoutBudget()), failEvery(2), true},
		{"fail then okFunc under the default quota", Retry[int](WithBackoff(Constant(0))), failEvery(2), true},
		{"fail then okFunc under a shared quota", Retry[int](WithBudget(NewRetryQuota(10)), WithBackoff(Constant(0))), failEvery(2), true},
		{"timed out then okFunc under the default quota", Retry[int](WithBackoff(Constant(0))), timeoutEvery(2), true},
		{"observed fail then okFunc under the default quota", Retry[int](WithObserver(events), WithBackoff(Constant(0))), failEvery(2), true},
		{"with a budget", Retry[int](WithBudget(NewRetryBudget(1, 0)), WithBackoff(Constant(0))), failEvery(2), true},
		{"with a shared throttle", Retry[int](WithBudget(NewRetryThrottle(10, 1)), WithBackoff(Constant(0))), failEvery(2), true},
		{"composed with guards", Compose(Retry[int](), Guarded[int](openGate{}), Guarded[int](NewBulkhead(8))), okFunc, false},
		{"observed success", Retry[int](WithObserver(events)), okFunc, false},
		{"observed fail then okFunc", Retry[int](WithObserver(events), WithBackoff(Constant(0)), WithoutBudget()), failEvery(2), true},
		{"outcomes of a success", Retry[int](WithObserver(outcomes)), okFunc, false},
		{"outcomes of fail then okFunc", Retry[int](WithObserver(outcomes), WithBackoff(Constant(0)), WithoutBudget()), failEvery(2), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			f := func() { _, err = tc.p.Execute(ctx, tc.fn) }
			if allocs := testing.AllocsPerRun(1000, f); allocs != 0 {
				t.Errorf("allocates %v times per call, want 0", allocs)
			}
			for range 10 {
				if f(); err != nil {
					t.Fatalf("Execute = %v, want success", err)
				}
			}
		})
	}
	if events.Of(EventRetry) == 0 || events.Of(EventAttemptFailed) == 0 || outcomes.Of(EventCallEnded) == 0 {
		t.Errorf("observers saw retries %d, failed attempts %d, call ends %d; want each", events.Of(EventRetry),
			events.Of(EventAttemptFailed), outcomes.Of(EventCallEnded))
	}
	if events.Of(EventCallEnded) != 0 {
		t.Errorf("an observer that did not ask got %d EventCallEnded", events.Of(EventCallEnded))
	}
}

// TestRetryDefaultBackoffIsLazy: importing the package builds no backoff;
// the first Retry that needs the default builds it. The check runs in a
// fresh process, where no test has built a Retry yet.
func TestRetryDefaultBackoffIsLazy(t *testing.T) {
	if os.Getenv("RESILIENCE_LAZY_PROBE") == "1" {
		if defaultBackoff.b != nil {
			t.Fatal("the default backoff was built at start-up")
		}
		_ = Retry[int]()
		if defaultBackoff.b == nil {
			t.Fatal("Retry did not build the default backoff")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRetryDefaultBackoffIsLazy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RESILIENCE_LAZY_PROBE=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe failed: %v\n%s", err, out)
	}
	// For the record: what the package's init costs, whatever its files.
	if m := regexp.MustCompile(`init github.com/faf87a20/resilience @.*`).Find(out); m != nil {
		t.Logf("%s", m)
	}
}

// TestRetryBudgetLostSwapIsTriedAgain: a deposit or a withdrawal whose
// compare-and-swap of the balance loses to another caller's reads the
// balance again and changes what the other left, so that both count. The
// other caller comes between the read and the swap through balanceRead,
// once.
func TestRetryBudgetLostSwapIsTriedAgain(t *testing.T) {
	tests := []struct {
		name string
		b    func() *RetryBudget
		op   func(b *RetryBudget)
		want int // Available after the two callers
	}{
		{"a call's deposit", func() *RetryBudget { return NewRetryBudget(1, 0) },
			func(b *RetryBudget) { b.called() }, 2},
		{"a success's deposit", func() *RetryBudget {
			b := NewRetryThrottle(10, 1)
			b.balance.Store(6 * budgetUnit) // Available: 0
			return b
		}, func(b *RetryBudget) { b.succeeded(0) }, 2},
		{"a failure's withdrawal", func() *RetryBudget { return NewRetryThrottle(10, 1) },
			func(b *RetryBudget) { b.failed() }, 2},
		{"a retry's withdrawal", func() *RetryBudget {
			b := NewRetryBudget(1, 0)
			b.balance.Store(3 * budgetUnit)
			return b
		}, func(b *RetryBudget) {
			if !b.take() {
				t.Error("take() = false with retries left")
			}
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b()
			armed, reads := true, 0
			balanceRead = func(b *RetryBudget) {
				reads++
				if armed {
					armed = false
					tc.op(b)
				}
			}
			defer func() { balanceRead = nil }()
			tc.op(b)
			if got := b.Available(); got != tc.want {
				t.Errorf("Available() = %d after two callers, want %d", got, tc.want)
			}
			if reads < 3 {
				t.Errorf("the balance was read %d times, want the loser's two and the other's", reads)
			}
		})
	}
}

// TestRetryQuietInCompositionReadsNoClock: a Retry inside a composition
// whose outer layer reports the call reads no clock for a success, unless
// WithMaxElapsed needs the start; the outer one reads it once.
func TestRetryQuietInCompositionReadsNoClock(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []RetryOption
		innerReads int64
	}{
		{"no time limit", nil, 0},
		{"with a time limit", []RetryOption{WithMaxElapsed(time.Minute)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &counter{Outcomes: true}
			outerClk := newManualClock()
			innerClk := newManualClock()
			outer := Retry[int](WithObserver(obs), WithClock(outerClk))
			inner := Retry[int](append([]RetryOption{WithObserver(obs), WithClock(innerClk)}, tc.opts...)...)
			if _, err := Compose(outer, inner).Execute(context.Background(), okFunc); err != nil {
				t.Fatal(err)
			}
			if got := obs.Of(EventCallEnded); got != 1 {
				t.Errorf("%d EventCallEnded, want 1", got)
			}
			if got := outerClk.Reads(); got == 0 {
				t.Error("the outer Retry, which reports the call, read no clock")
			}
			if got := innerClk.Reads(); got != tc.innerReads {
				t.Errorf("the inner Retry read its clock %d times, want %d", got, tc.innerReads)
			}
		})
	}
}

// TestRetryLean: which Retry policies take the lean path for a first
// attempt that succeeds (a quota's deposit and nothing else), and which
// need the full one: a budget's deposit per call, a result to judge, the
// time to read for WithMaxElapsed or for an observer of outcomes.
func TestRetryLean(t *testing.T) {
	tests := []struct {
		name string
		p    Policy[int]
		lean bool
	}{
		{"default", Retry[int](), true},
		{"no budget", Retry[int](WithoutBudget()), true},
		{"a throttle", Retry[int](WithBudget(NewRetryThrottle(10, 1))), true},
		{"an observer of events", Retry[int](WithObserver(&counter{})), true},
		{"a budget", Retry[int](WithBudget(NewRetryBudget(1, 0))), false},
		{"a result predicate", Retry[int](WithRetryIfResult(func(int) bool { return false })), false},
		{"a time limit", Retry[int](WithMaxElapsed(time.Second)), false},
		{"an observer of outcomes", Retry[int](WithObserver(&counter{Outcomes: true})), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.(*retry[int]).lean; got != tc.lean {
				t.Errorf("lean = %v, want %v", got, tc.lean)
			}
			v, err := tc.p.Execute(context.Background(), okFunc)
			if v != 1 || err != nil {
				t.Errorf("Execute = %v, %v; want 1, nil", v, err)
			}
		})
	}
}

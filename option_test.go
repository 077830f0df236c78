package resilience_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/faf87a20/resilience"
)

// TestConstructorsRefuseBadOptions: every constructor refuses a nil option
// and the zero Option (an Option{} written by hand, which sets nothing)
// with a panic naming itself, instead of crashing later on a nil func.
func TestConstructorsRefuseBadOptions(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // Repeat returns at once
	backoff := resilience.Constant(time.Millisecond)
	batchFn := func(_ context.Context, in []int) ([]int, error) { return in, nil }
	fetch := func(context.Context, []int) (map[int]int, error) { return nil, nil }
	// Each constructor, given one option of its own option type.
	ctors := []struct {
		name  string
		build func(o any)
	}{
		{"Timeout", func(o any) { resilience.Timeout[int](time.Second, asOption[resilience.TimeoutOption](o)) }},
		{"Fallback", func(o any) {
			resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil }, asOption[resilience.FallbackOption](o))
		}},
		{"Hedge", func(o any) { resilience.Hedge[int](asOption[resilience.HedgeOption](o)) }},
		{"NewCursor", func(o any) { resilience.NewCursor(backoff, asOption[resilience.CursorOption](o)) }},
		{"Repeat", func(o any) {
			resilience.Repeat(done, backoff, func(context.Context) {}, asOption[resilience.RepeatOption](o))
		}},
		{"NewBreaker", func(o any) { resilience.NewBreaker(asOption[resilience.BreakerOption](o)) }},
		{"NewBulkhead", func(o any) { resilience.NewBulkhead(1, asOption[resilience.BulkheadOption](o)) }},
		{"NewBatcher", func(o any) { resilience.NewBatcher(batchFn, asOption[resilience.BatchOption](o)) }},
		{"NewLoader", func(o any) { resilience.NewLoader(fetch, asOption[resilience.BatchOption](o)) }},
		{"Retry", func(o any) { resilience.Retry[int](asOption[resilience.RetryOption](o)) }},
		{"NewRateLimiter", func(o any) { resilience.NewRateLimiter(1, 1, asOption[resilience.RateLimitOption](o)) }},
		{"NewKeyedRateLimiter", func(o any) {
			resilience.NewKeyedRateLimiter[string](1, 1, asOption[resilience.KeyedRateLimitOption](o))
		}},
		{"NewRetryBudget", func(o any) { resilience.NewRetryBudget(0.1, 1, asOption[resilience.RetryBudgetOption](o)) }},
		{"NewRetryQuota", func(o any) { resilience.NewRetryQuota(10, asOption[resilience.RetryQuotaOption](o)) }},
		{"NewRetryThrottle", func(o any) { resilience.NewRetryThrottle(10, 0.1, o.(resilience.Option)) }},
	}
	// A constructor whose options are Options alone, a struct, cannot be
	// given a nil one: it does not compile.
	structs := map[string]bool{"NewRetryThrottle": true}
	for _, c := range ctors {
		t.Run(c.name+"/zero Option", func(t *testing.T) {
			assert.PanicsWithValue(t,
				"resilience: "+c.name+": option is a zero resilience.Option (make one with WithClock, WithObserver, WithName or WithRand)",
				func() { c.build(resilience.Option{}) })
		})
		t.Run(c.name+"/nil option", func(t *testing.T) {
			if structs[c.name] {
				return
			}
			assert.PanicsWithValue(t, "resilience: "+c.name+": option is nil", func() { c.build(nil) })
		})
		t.Run(c.name+"/a good Option", func(t *testing.T) {
			assert.NotPanics(t, func() { c.build(resilience.WithName("x")) })
		})
	}
	// NewSlogObserver takes options of its own only, so no Option.
	t.Run("NewSlogObserver/nil option", func(t *testing.T) {
		assert.PanicsWithValue(t, "resilience: NewSlogObserver: option is nil", func() { resilience.NewSlogObserver(nil, nil) })
	})
}

// asOption returns o as the option type O: a nil o gives a nil O.
func asOption[O any](o any) O {
	if o == nil {
		var zero O
		return zero
	}
	return o.(O)
}

// TestNilChecksRefuseOnlyWhatIsNil: every function that refuses a nil
// value refuses what is really nil, a nil interface or a nil pointer,
// function or channel in one, whose first use would crash or block for
// ever, and accepts the nil value of a slice or map type whose methods
// work on it: an empty Schedule, a user's list of observers or errors.
func TestNilChecksRefuseOnlyWhatIsNil(t *testing.T) {
	s := time.Millisecond
	tests := []struct {
		name string
		f    func()
		want string // the panic; "" when the value is accepted
	}{
		{"WithBackoff(Schedule())", func() { resilience.Retry[int](resilience.WithBackoff(resilience.Schedule())) }, ""},
		{"WithBackoff(nil slice)", func() { resilience.Retry[int](resilience.WithBackoff(userSchedule(nil))) }, ""},
		{"WithBackoff(nil)", func() { resilience.WithBackoff(nil) }, "resilience: WithBackoff: backoff is nil"},
		{"WithBackoff(nil func)", func() { resilience.WithBackoff(resilience.BackoffFunc(nil)) },
			"resilience: WithBackoff: backoff is a nil resilience.BackoffFunc"},
		{"WithBackoff(nil pointer)", func() { resilience.WithBackoff((*resilience.KubernetesBackoff)(nil)) },
			"resilience: WithBackoff: backoff is a nil *resilience.KubernetesBackoff"},
		{"WithBackoff(nil chan)", func() { resilience.WithBackoff(chanBackoff(nil)) },
			"resilience: WithBackoff: backoff is a nil resilience_test.chanBackoff"},
		{"WithBreakerCoolDownBackoff(Schedule())", func() {
			resilience.NewBreaker(resilience.WithBreakerCoolDownBackoff(resilience.Schedule()))
		}, ""},
		{"WithBreakerCoolDownBackoff(nil chan)", func() { resilience.WithBreakerCoolDownBackoff(chanBackoff(nil)) },
			"resilience: WithBreakerCoolDownBackoff: backoff is a nil resilience_test.chanBackoff"},
		// The same check of a backoff as every other function that takes one.
		{"WithBackoff(meaningless KubernetesBackoff)", func() { resilience.WithBackoff(&resilience.KubernetesBackoff{Factor: -2}) },
			"resilience: WithBackoff: backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got -2"},
		{"WithBreakerCoolDownBackoff(meaningless KubernetesBackoff)", func() {
			resilience.WithBreakerCoolDownBackoff(resilience.KubernetesBackoff{Factor: -2})
		}, "resilience: WithBreakerCoolDownBackoff: backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got -2"},
		{"NewCursor(Schedule())", func() { resilience.NewCursor(resilience.Schedule()) }, ""},
		{"Cap(nil slice)", func() { resilience.Cap(userSchedule(nil), s) }, ""},
		{"HoldLast(Schedule())", func() { resilience.HoldLast(resilience.Schedule()) }, ""},
		{"UseRand(Schedule(), nil slice)", func() { resilience.UseRand(resilience.Schedule(), randSeq(nil)) }, ""},
		{"UseRand(b, nil chan)", func() { resilience.UseRand(resilience.FullJitter(resilience.Constant(s)), randChan(nil)) },
			"resilience: UseRand: rand is a nil resilience_test.randChan"},
		{"WithRetryOn(nil slice)", func() { resilience.Retry[int](resilience.WithRetryOn(errList(nil))) }, ""},
		{"WithAbortOn(nil map)", func() { resilience.Retry[int](resilience.WithAbortOn(errSet(nil))) }, ""},
		{"WithAbortOn(nil chan)", func() { resilience.WithAbortOn(errChan(nil)) },
			"resilience: WithAbortOn: error 0 is a nil resilience_test.errChan"},
		{"WithClock(nil slice)", func() { resilience.NewBulkhead(1, resilience.WithClock(clockSeq(nil))) }, ""},
		{"WithObserver(nil slice)", func() { resilience.NewBulkhead(1, resilience.WithObserver(observerList(nil))) }, ""},
		{"WithObserver(nil chan)", func() { resilience.WithObserver(eventChan(nil)) },
			"resilience: WithObserver: observer is a nil resilience_test.eventChan"},
		{"MultiObserver(nil slice)", func() { resilience.MultiObserver(observerList(nil)) }, ""},
		{"MultiObserver(nil chan)", func() { resilience.MultiObserver(observerList(nil), eventChan(nil)) },
			"resilience: MultiObserver: observer 1 is a nil resilience_test.eventChan"},
		{"WithBatchPolicy(nil slice)", func() {
			resilience.NewBatcher(func(_ context.Context, in []int) ([]int, error) { return in, nil },
				resilience.WithBatchPolicy[[]int](policyList(nil)))
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				assert.NotPanics(t, tc.f)
				return
			}
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestEmptyScheduleMakesNoRetry: Retry with an empty Schedule, as its doc
// says, makes the first attempt and no retry; the nil values of a user's
// slice and map types work where they are accepted.
func TestEmptyScheduleMakesNoRetry(t *testing.T) {
	calls := 0
	fn := func(context.Context) (int, error) { calls++; return 0, errFlaky }
	p := resilience.Retry[int](resilience.WithBackoff(resilience.Schedule()), resilience.WithRetryOn(errList(nil), errFlaky),
		resilience.WithObserver(observerList(nil)))
	_, err := p.Execute(context.Background(), fn)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	assert.ErrorIs(t, err, errFlaky)
	assert.Equal(t, 1, calls, "the first attempt, no retry")
}

// Types whose nil value is a usable value, and types whose nil value is
// not (a nil channel blocks for ever).
type (
	observerList []resilience.Observer
	eventChan    chan resilience.Event
	errList      []error
	errSet       map[string]bool
	errChan      chan error
	chanBackoff  chan time.Duration
	randSeq      []uint64
	randChan     chan uint64
	clockSeq     []time.Time
	policyList   []resilience.Policy[[]int]
)

func (l observerList) Observe(ctx context.Context, e resilience.Event) {
	for _, o := range l {
		o.Observe(ctx, e)
	}
}

func (c eventChan) Observe(_ context.Context, e resilience.Event) { c <- e }

func (l errList) Error() string { return fmt.Sprintf("%d errors", len(l)) }
func (s errSet) Error() string  { return fmt.Sprintf("%d errors", len(s)) }
func (c errChan) Error() string { return (<-c).Error() }

func (c chanBackoff) Delay(int, time.Duration) (time.Duration, bool) {
	d, ok := <-c
	return d, ok
}

// Uint64 returns the first number of the sequence, 0 for an empty one.
func (s randSeq) Uint64() uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

func (c randChan) Uint64() uint64 { return <-c }

// Now returns the last time of the sequence, the epoch for an empty one.
func (s clockSeq) Now() time.Time {
	if len(s) == 0 {
		return time.Unix(0, 0)
	}
	return s[len(s)-1]
}

func (clockSeq) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, d)
}

// Execute runs fn through the policies in turn, directly for none.
func (l policyList) Execute(ctx context.Context, fn resilience.Func[[]int]) ([]int, error) {
	if len(l) == 0 {
		return fn(ctx)
	}
	return l[0].Execute(ctx, func(ctx context.Context) ([]int, error) { return l[1:].Execute(ctx, fn) })
}

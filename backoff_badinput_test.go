package resilience_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// userBackoff is a Backoff of the user's own, for typed nils.
type userBackoff struct{ d time.Duration }

func (u *userBackoff) Delay(int, time.Duration) (time.Duration, bool) { return u.d, true }

var (
	boNaN    = math.NaN()
	boInf    = math.Inf(1)
	boNegInf = math.Inf(-1)
	boMaxD   = time.Duration(math.MaxInt64)
)

// TestBackoffBadInputRefused sweeps every exported backoff constructor,
// preset, decorator and option with values that have no meaning: each
// panics at once with a message naming the function, the argument and the
// value.
func TestBackoffBadInputRefused(t *testing.T) {
	type refusal struct {
		name string
		f    func()
		want string
	}
	tests := []refusal{
		{"Constant negative", func() { resilience.Constant(-1) }, "resilience: Constant: d must not be negative, got -1ns"},
		{"Constant MinInt64", func() { resilience.Constant(math.MinInt64) }, "resilience: Constant: d must not be negative, got -2562047h47m16.854775808s"},
		{"Linear initial negative", func() { resilience.Linear(-ms, ms) }, "resilience: Linear: initial must not be negative, got -1ms"},
		{"Linear step negative", func() { resilience.Linear(ms, -ms) }, "resilience: Linear: step must not be negative, got -1ms"},
		{"Exponential initial negative", func() { resilience.Exponential(-ms, 2) }, "resilience: Exponential: initial must not be negative, got -1ms"},
		{"Exponential factor 0", func() { resilience.Exponential(ms, 0) }, "resilience: Exponential: factor must be a finite number >= 1, got 0"},
		{"Exponential factor below 1", func() { resilience.Exponential(ms, 0.5) }, "resilience: Exponential: factor must be a finite number >= 1, got 0.5"},
		{"Exponential factor negative", func() { resilience.Exponential(ms, -2) }, "resilience: Exponential: factor must be a finite number >= 1, got -2"},
		{"Exponential factor NaN", func() { resilience.Exponential(ms, boNaN) }, "resilience: Exponential: factor must be a finite number >= 1, got NaN"},
		{"Exponential factor +Inf", func() { resilience.Exponential(ms, boInf) }, "resilience: Exponential: factor must be a finite number >= 1, got +Inf"},
		{"Exponential factor -Inf", func() { resilience.Exponential(ms, boNegInf) }, "resilience: Exponential: factor must be a finite number >= 1, got -Inf"},
		{"Fibonacci negative", func() { resilience.Fibonacci(-ms) }, "resilience: Fibonacci: unit must not be negative, got -1ms"},
		{"Random min negative", func() { resilience.Random(-ms, ms) }, "resilience: Random: min must not be negative, got -1ms"},
		{"Random max below min", func() { resilience.Random(2*ms, ms) }, "resilience: Random: max must not be less than min, got min 2ms, max 1ms"},
		{"Random max negative", func() { resilience.Random(0, -ms) }, "resilience: Random: max must not be less than min, got min 0s, max -1ms"},
		{"Schedule negative wait", func() { resilience.Schedule(ms, -ms) }, "resilience: Schedule: waits[1] must not be negative, got -1ms"},
		{"Cap max negative", func() { resilience.Cap(resilience.Constant(ms), -1) }, "resilience: Cap: max must not be negative, got -1ns"},
		{"MaxRetries n negative", func() { resilience.MaxRetries(resilience.Constant(ms), -1) }, "resilience: MaxRetries: n must not be negative, got -1"},
		{"MaxRetries n MinInt", func() { resilience.MaxRetries(resilience.Constant(ms), math.MinInt) }, "resilience: MaxRetries: n must not be negative, got -9223372036854775808"},
		{"SymmetricJitter above 1", func() { resilience.SymmetricJitter(resilience.Constant(ms), 1.5) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got 1.5"},
		{"SymmetricJitter negative", func() { resilience.SymmetricJitter(resilience.Constant(ms), -0.1) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got -0.1"},
		{"SymmetricJitter NaN", func() { resilience.SymmetricJitter(resilience.Constant(ms), boNaN) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got NaN"},
		{"SymmetricJitter +Inf", func() { resilience.SymmetricJitter(resilience.Constant(ms), boInf) }, "resilience: SymmetricJitter: jitter fraction must be in [0, 1], got +Inf"},
		{"UpwardJitter negative", func() { resilience.UpwardJitter(resilience.Constant(ms), -0.1) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got -0.1"},
		{"UpwardJitter NaN", func() { resilience.UpwardJitter(resilience.Constant(ms), boNaN) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got NaN"},
		{"UpwardJitter +Inf", func() { resilience.UpwardJitter(resilience.Constant(ms), boInf) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got +Inf"},
		{"UpwardJitter -Inf", func() { resilience.UpwardJitter(resilience.Constant(ms), boNegInf) }, "resilience: UpwardJitter: jitter fraction must be a finite number >= 0, got -Inf"},
		{"DecorrelatedJitter base negative", func() { resilience.DecorrelatedJitter(-ms, ms) }, "resilience: DecorrelatedJitter: base must not be negative, got -1ms"},
		{"DecorrelatedJitter max below base", func() { resilience.DecorrelatedJitter(ms, 0) }, "resilience: DecorrelatedJitter: max must not be less than base, got base 1ms, max 0s"},
		{"SmoothJitter negative", func() { resilience.SmoothJitter(-ms) }, "resilience: SmoothJitter: median must not be negative, got -1ms"},
		{"Jpillora min negative", func() { resilience.Jpillora(-ms, 0, 0, false) }, "resilience: Jpillora: min must not be negative, got -1ms"},
		{"Jpillora max negative", func() { resilience.Jpillora(0, -ms, 0, false) }, "resilience: Jpillora: max must not be negative, got -1ms"},
		{"Jpillora factor below 1", func() { resilience.Jpillora(0, 0, 0.5, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got 0.5"},
		{"Jpillora factor negative", func() { resilience.Jpillora(0, 0, -1, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got -1"},
		{"Jpillora factor NaN", func() { resilience.Jpillora(0, 0, boNaN, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got NaN"},
		{"Jpillora factor +Inf", func() { resilience.Jpillora(0, 0, boInf, false) }, "resilience: Jpillora: factor must be 0 (default 2) or a finite number >= 1, got +Inf"},
		{"Celery factor negative", func() { resilience.Celery(-time.Second, time.Minute, false) }, "resilience: Celery: factor must not be negative, got -1s"},
		{"Celery maximum negative", func() { resilience.Celery(time.Second, -time.Minute, false) }, "resilience: Celery: maximum must not be negative, got -1m0s"},
		{"Ethernet negative", func() { resilience.Ethernet(-1) }, "resilience: Ethernet: slot must not be negative, got -1ns"},
		{"ConstantSchedule n negative", func() { resilience.ConstantSchedule(-1, ms) }, "resilience: ConstantSchedule: n must not be negative, got -1"},
		{"ConstantSchedule d negative", func() { resilience.ConstantSchedule(3, -ms) }, "resilience: ConstantSchedule: d must not be negative, got -1ms"},
		{"ExponentialSchedule n negative", func() { resilience.ExponentialSchedule(-1, ms) }, "resilience: ExponentialSchedule: n must not be negative, got -1"},
		{"ExponentialSchedule initial negative", func() { resilience.ExponentialSchedule(3, -ms) }, "resilience: ExponentialSchedule: initial must not be negative, got -1ms"},
		{"LimitedExponentialSchedule n negative", func() { resilience.LimitedExponentialSchedule(-1, ms, ms) }, "resilience: LimitedExponentialSchedule: n must not be negative, got -1"},
		{"LimitedExponentialSchedule initial negative", func() { resilience.LimitedExponentialSchedule(3, -ms, ms) }, "resilience: LimitedExponentialSchedule: initial must not be negative, got -1ms"},
		{"LimitedExponentialSchedule limit negative", func() { resilience.LimitedExponentialSchedule(3, ms, -ms) }, "resilience: LimitedExponentialSchedule: limit must not be negative, got -1ms"},
		{"UseRand rand nil", func() { resilience.UseRand(resilience.Constant(ms), nil) }, "resilience: UseRand: rand is nil"},
		{"UseRand rand typed nil", func() { resilience.UseRand(resilience.Constant(ms), (*rand.Rand)(nil)) }, "resilience: UseRand: rand is a nil *rand.Rand"},
		{"NewCursor nil option", func() { resilience.NewCursor(resilience.Constant(ms), nil) }, "resilience: NewCursor: option is nil"},
		{"WithCursorIdleReset negative", func() { resilience.WithCursorIdleReset(-1) }, "resilience: WithCursorIdleReset: d must not be negative, got -1ns"},
		{"Repeat ctx nil", func() {
			//lint:ignore SA1012 a nil ctx is what this test passes
			resilience.Repeat(nil, resilience.Constant(ms), func(context.Context) {})
		}, "resilience: Repeat: ctx is nil"},
		{"Repeat f nil", func() { resilience.Repeat(context.Background(), resilience.Constant(ms), nil) }, "resilience: Repeat: f is nil"},
		{"Repeat nil option", func() {
			resilience.Repeat(context.Background(), resilience.Constant(ms), func(context.Context) {}, nil)
		}, "resilience: Repeat: option is nil"},
		{"WithRepeatPanicHandler nil", func() { resilience.WithRepeatPanicHandler(nil) }, "resilience: WithRepeatPanicHandler: handler is nil"},
		{"BackoffFunc nil called", func() { resilience.BackoffFunc(nil).Delay(1, 0) }, "resilience: BackoffFunc.Delay: the function is nil"},
	}

	// Everything that takes a Backoff refuses one that cannot answer Delay.
	takers := []struct {
		fn   string
		take func(resilience.Backoff)
	}{
		{"Cap", func(b resilience.Backoff) { resilience.Cap(b, time.Second) }},
		{"MaxRetries", func(b resilience.Backoff) { resilience.MaxRetries(b, 3) }},
		{"HoldLast", func(b resilience.Backoff) { resilience.HoldLast(b) }},
		{"FullJitter", func(b resilience.Backoff) { resilience.FullJitter(b) }},
		{"EqualJitter", func(b resilience.Backoff) { resilience.EqualJitter(b) }},
		{"SymmetricJitter", func(b resilience.Backoff) { resilience.SymmetricJitter(b, 0.1) }},
		{"UpwardJitter", func(b resilience.Backoff) { resilience.UpwardJitter(b, 0.1) }},
		{"UseRand", func(b resilience.Backoff) { resilience.UseRand(b, seeded()) }},
		{"NewCursor", func(b resilience.Backoff) { resilience.NewCursor(b) }},
		{"Delays", func(b resilience.Backoff) { resilience.Delays(b) }},
		{"Repeat", func(b resilience.Backoff) { resilience.Repeat(context.Background(), b, func(context.Context) {}) }},
	}
	bad := []struct {
		name string
		b    resilience.Backoff
		want string // after "resilience: <fn>: "
	}{
		{"nil", nil, "backoff is nil"},
		{"nil BackoffFunc", resilience.BackoffFunc(nil), "backoff is a nil resilience.BackoffFunc"},
		{"typed nil of the user", (*userBackoff)(nil), "backoff is a nil *resilience_test.userBackoff"},
		{"nil *KubernetesBackoff", (*resilience.KubernetesBackoff)(nil), "backoff is a nil *resilience.KubernetesBackoff"},
		{"Kubernetes negative Factor", resilience.KubernetesBackoff{Duration: ms, Factor: -2, Steps: 3},
			"backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got -2"},
		{"Kubernetes NaN Factor", resilience.KubernetesBackoff{Duration: ms, Factor: boNaN}, "backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got NaN"},
		{"Kubernetes -Inf Factor", resilience.KubernetesBackoff{Duration: ms, Factor: boNegInf}, "backoff is a KubernetesBackoff whose Factor must be a finite number >= 0, got -Inf"},
		{"Kubernetes negative Duration", resilience.KubernetesBackoff{Duration: -ms}, "backoff is a KubernetesBackoff whose Duration must not be negative, got -1ms"},
		{"Kubernetes NaN Jitter", resilience.KubernetesBackoff{Duration: ms, Jitter: boNaN}, "backoff is a KubernetesBackoff whose Jitter must be a finite number >= 0, got NaN"},
		{"*KubernetesBackoff +Inf Jitter", &resilience.KubernetesBackoff{Duration: ms, Jitter: boInf}, "backoff is a KubernetesBackoff whose Jitter must be a finite number >= 0, got +Inf"},
	}
	for _, tk := range takers {
		for _, b := range bad {
			tests = append(tests, refusal{tk.fn + " " + b.name, func() { tk.take(b.b) }, "resilience: " + tk.fn + ": " + b.want})
		}
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// TestBackoffEdgeInputMeaning sweeps the values at the edges that are
// accepted, each with the meaning its documentation gives: zero, the
// largest values, and KubernetesBackoff's fields that mean "none".
func TestBackoffEdgeInputMeaning(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		b    resilience.Backoff
		n    int
		want []time.Duration // the first waits, nil for no retry; ignored when check is set
		// check, when set, is run on every wait of the first n instead.
		check func(t *testing.T, d time.Duration)
	}{
		{"Constant(0) waits 0", resilience.Constant(0), 3, []time.Duration{0, 0, 0}, nil},
		{"Constant(max)", resilience.Constant(boMaxD), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Linear(max, max) saturates", resilience.Linear(boMaxD, boMaxD), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Exponential(0, huge) stays 0", resilience.Exponential(0, math.MaxFloat64), 3, []time.Duration{0, 0, 0}, nil},
		{"Exponential(1ns, huge) saturates", resilience.Exponential(1, math.MaxFloat64), 3, []time.Duration{1, boMaxD, boMaxD}, nil},
		{"Fibonacci(max) saturates", resilience.Fibonacci(boMaxD), 3, []time.Duration{boMaxD, boMaxD, boMaxD}, nil},
		{"Random(0, 0) waits 0", resilience.Random(0, 0), 2, []time.Duration{0, 0}, nil},
		{"Random(max, max)", resilience.Random(boMaxD, boMaxD), 1, []time.Duration{boMaxD}, nil},
		{"Schedule() makes no retry", resilience.Schedule(), 3, nil, nil},
		{"Cap(b, 0) waits 0", resilience.Cap(resilience.Exponential(s, 2), 0), 3, []time.Duration{0, 0, 0}, nil},
		{"MaxRetries(b, 0) makes no retry", resilience.MaxRetries(resilience.Constant(s), 0), 3, nil, nil},
		{"MaxRetries(b, MaxInt) goes on", resilience.MaxRetries(resilience.Constant(s), math.MaxInt), 2, []time.Duration{s, s}, nil},
		{"SymmetricJitter 0 is none", resilience.SymmetricJitter(resilience.Constant(boMaxD), 0), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"SymmetricJitter 1 of max stays in range", resilience.SymmetricJitter(resilience.Constant(boMaxD), 1), 50, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"UpwardJitter huge saturates", resilience.UpwardJitter(resilience.Constant(s), math.MaxFloat64), 50, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, s) }},
		{"FullJitter of max", resilience.FullJitter(resilience.Constant(boMaxD)), 50, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"DecorrelatedJitter(0, 0) waits 0", resilience.DecorrelatedJitter(0, 0), 3, []time.Duration{0, 0, 0}, nil},
		{"DecorrelatedJitter(max, max)", resilience.DecorrelatedJitter(boMaxD, boMaxD), 3, []time.Duration{boMaxD, boMaxD, boMaxD}, nil},
		{"SmoothJitter(0) waits 0", resilience.SmoothJitter(0), 3, []time.Duration{0, 0, 0}, nil},
		{"SmoothJitter(max)", resilience.SmoothJitter(boMaxD), 20, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"KubernetesBackoff zero value waits 0", resilience.KubernetesBackoff{}, 3, []time.Duration{0, 0, 0}, nil},
		{"KubernetesBackoff Steps < 1: no growth", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: -5}, 3, []time.Duration{s, s, s}, nil},
		{"KubernetesBackoff Steps MinInt: no growth", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: math.MinInt}, 2, []time.Duration{s, s}, nil},
		{"KubernetesBackoff Cap < 0: no cap", resilience.KubernetesBackoff{Duration: s, Factor: 2, Steps: 3, Cap: -s}, 4, []time.Duration{s, 2 * s, 4 * s, 8 * s}, nil},
		{"KubernetesBackoff Factor 0: no growth", resilience.KubernetesBackoff{Duration: s, Steps: 3, Cap: s / 2}, 3, []time.Duration{s, s, s}, nil},
		{"KubernetesBackoff huge Factor reaches Cap", resilience.KubernetesBackoff{Duration: s, Factor: math.MaxFloat64, Steps: 3, Cap: time.Hour}, 3, []time.Duration{s, time.Hour, time.Hour}, nil},
		{"KubernetesBackoff huge Factor saturates", resilience.KubernetesBackoff{Duration: s, Factor: math.MaxFloat64, Steps: 3}, 3, []time.Duration{s, boMaxD, boMaxD}, nil},
		{"KubernetesBackoff huge Jitter saturates", resilience.KubernetesBackoff{Duration: s, Jitter: math.MaxFloat64}, 20, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, s) }},
		{"Jpillora zeros take the defaults", resilience.Jpillora(0, 0, 0, false), 2, []time.Duration{100 * ms, 200 * ms}, nil},
		{"Jpillora(max, max, huge)", resilience.Jpillora(boMaxD, boMaxD, math.MaxFloat64, true), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Celery maximum 0 waits 0", resilience.Celery(s, 0, true), 3, []time.Duration{0, 0, 0}, nil},
		{"Celery(max, max)", resilience.Celery(boMaxD, boMaxD, false), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"Ethernet(0) waits 0", resilience.Ethernet(0), 2, []time.Duration{0, 0}, nil},
		{"Ethernet(max) saturates", resilience.Ethernet(boMaxD), 15, nil,
			func(t *testing.T, d time.Duration) { require.GreaterOrEqual(t, d, time.Duration(0)) }},
		{"ConstantSchedule(0, d) makes no retry", resilience.ConstantSchedule(0, s), 3, nil, nil},
		{"ConstantSchedule(MaxInt, d) builds no slice", resilience.ConstantSchedule(math.MaxInt, s), 2, []time.Duration{s, s}, nil},
		{"ExponentialSchedule(MaxInt, max)", resilience.ExponentialSchedule(math.MaxInt, boMaxD), 2, []time.Duration{boMaxD, boMaxD}, nil},
		{"LimitedExponentialSchedule limit 0 waits 0", resilience.LimitedExponentialSchedule(3, s, 0), 5, []time.Duration{0, 0, 0}, nil},
		{"LimitedExponentialSchedule limit below initial", resilience.LimitedExponentialSchedule(2, 2*s, s), 5, []time.Duration{s, s}, nil},
		{"HoldLast of no retry makes none", resilience.HoldLast(resilience.ConstantSchedule(0, s)), 3, nil, nil},
		{"nil slice as a user's Backoff is an empty schedule", resilience.Cap(userSchedule(nil), s), 3, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := resilience.UseRand(tc.b, seeded())
			got := waits(b, tc.n)
			if tc.check == nil {
				assert.Equal(t, tc.want, got)
				return
			}
			require.Len(t, got, tc.n)
			for _, d := range got {
				tc.check(t, d)
			}
		})
	}

	// Far retries of the huge presets: no slice, no overflow.
	d, ok := resilience.ConstantSchedule(math.MaxInt, s).Delay(math.MaxInt, 0)
	assert.True(t, ok)
	assert.Equal(t, s, d)
	_, ok = resilience.ConstantSchedule(math.MaxInt-1, s).Delay(math.MaxInt, 0)
	assert.False(t, ok)
	d, _ = resilience.ExponentialSchedule(math.MaxInt, ms).Delay(math.MaxInt, 0)
	assert.Equal(t, boMaxD, d)

	// The idle reset's edges: 0 is documented (TestCursorIdleResetZero);
	// the largest never resets in practice.
	assert.NotPanics(t, func() {
		resilience.NewCursor(resilience.Constant(s), resilience.WithCursorIdleReset(0), resilience.WithCursorIdleReset(boMaxD))
	})
}

// userSchedule is a user's Backoff whose nil value works: a nil slice is
// not refused as a typed nil.
type userSchedule []time.Duration

func (s userSchedule) Delay(n int, _ time.Duration) (time.Duration, bool) {
	if n < 1 || n > len(s) {
		return 0, false
	}
	return s[n-1], true
}

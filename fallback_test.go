package resilience_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errFallback = errors.New("fallback failed too")

func TestFallback(t *testing.T) {
	cached := func(_ context.Context, err error) (string, error) { return "cached", nil }
	failing := func(context.Context, error) (string, error) { return "", errFallback }
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		f         func(context.Context, error) (string, error)
		opts      []resilience.FallbackOption
		fnErr     error
		want      string
		wantErrs  []error // each must match
		wantCalls int     // of the fallback
	}{
		{name: "success is returned as it is", fnErr: nil, f: cached, want: "fn"},
		{name: "failure answered by the fallback", fnErr: io.ErrUnexpectedEOF, f: cached, want: "cached", wantCalls: 1},
		{name: "fallback fails too: both errors kept", fnErr: io.ErrUnexpectedEOF, f: failing,
			wantErrs: []error{io.ErrUnexpectedEOF, errFallback}, wantCalls: 1},
		{name: "caller's context ended: no fallback", ctx: canceled, fnErr: context.Canceled, f: cached,
			wantErrs: []error{context.Canceled}},
		{name: "caller's context ended, other error: no fallback", ctx: canceled, fnErr: io.ErrUnexpectedEOF, f: cached,
			wantErrs: []error{io.ErrUnexpectedEOF}},
		{name: "predicate refuses", fnErr: io.ErrUnexpectedEOF, f: cached,
			opts:     []resilience.FallbackOption{resilience.WithFallbackIf(func(err error) bool { return errors.Is(err, resilience.ErrBreakerOpen) })},
			wantErrs: []error{io.ErrUnexpectedEOF}},
		{name: "predicate accepts", fnErr: resilience.ErrBreakerOpen, f: cached,
			opts: []resilience.FallbackOption{resilience.WithFallbackIf(func(err error) bool { return errors.Is(err, resilience.ErrBreakerOpen) })},
			want: "cached", wantCalls: 1},
		{name: "predicate may answer for the caller's context", ctx: canceled, fnErr: context.Canceled, f: cached,
			opts: []resilience.FallbackOption{resilience.WithFallbackIf(func(error) bool { return true })},
			want: "cached", wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			calls := 0
			var seen error
			p := resilience.Fallback(func(ctx context.Context, err error) (string, error) {
				calls++
				seen = err
				return tc.f(ctx, err)
			}, tc.opts...)
			v, err := resilience.Do(ctx, p, func(context.Context) (string, error) {
				if tc.fnErr != nil {
					return "", tc.fnErr
				}
				return "fn", nil
			})
			assert.Equal(t, tc.wantCalls, calls, "fallback calls")
			if calls > 0 {
				assert.Equal(t, tc.fnErr, seen, "the fallback gets the call's error")
			}
			if len(tc.wantErrs) == 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.want, v)
				return
			}
			for _, want := range tc.wantErrs {
				assert.ErrorIs(t, err, want)
			}
		})
	}
}

func TestFallbackErrorKeepsBoth(t *testing.T) {
	p := resilience.Fallback(func(context.Context, error) (int, error) { return 0, errFallback })
	_, err := p.Execute(context.Background(), func(context.Context) (int, error) {
		return 0, &resilience.RetryError{Attempts: 3, Last: io.EOF, Reason: resilience.ErrRetriesExhausted}
	})
	var fe *resilience.FallbackError
	require.ErrorAs(t, err, &fe)
	var re *resilience.RetryError
	require.ErrorAs(t, err, &re, "errors.As reaches the call's error")
	assert.Equal(t, 3, re.Attempts)
	assert.ErrorIs(t, err, io.EOF)
	assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
	assert.ErrorIs(t, err, errFallback)
	assert.Equal(t, "resilience: fallback failed: fallback failed too (after: resilience: retries exhausted after 3 attempts: EOF)", err.Error())
}

// TestFallbackOutermost: in a composition the fallback answers once the
// retries within have given up, and a panic is not answered for.
func TestFallbackOutermost(t *testing.T) {
	p := resilience.Compose(
		resilience.Fallback(func(context.Context, error) (string, error) { return "stale", nil }),
		resilience.Retry[string](resilience.WithAttempts(3), resilience.WithBackoff(resilience.Constant(0))),
	)
	calls := 0
	v, err := resilience.Do(context.Background(), p, func(context.Context) (string, error) {
		calls++
		return "", io.ErrUnexpectedEOF
	})
	require.NoError(t, err)
	assert.Equal(t, "stale", v)
	assert.Equal(t, 3, calls)

	assert.PanicsWithValue(t, "boom", func() {
		_, _ = resilience.Do(context.Background(), p, func(context.Context) (string, error) { panic("boom") })
	})
}

func TestFallbackEvents(t *testing.T) {
	obs := &recorder{}
	p := resilience.Fallback(func(context.Context, error) (int, error) { return 1, nil },
		resilience.WithObserver(obs), resilience.WithName("users"))
	_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, nil })
	require.Empty(t, obs.take(), "a success emits nothing")
	_, _ = p.Execute(context.Background(), func(context.Context) (int, error) { return 0, io.EOF })
	events := obs.take()
	require.Len(t, events, 1)
	assert.Equal(t, resilience.Event{Kind: resilience.EventFallback, Component: "fallback", Name: "users", Err: io.EOF}, events[0])
	assert.Equal(t, "fallback", events[0].Kind.String())
}

func TestFallbackSuccessAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    resilience.Policy[int]
	}{
		{"alone", resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil })},
		{"composed", resilience.Compose(
			resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil }),
			resilience.Retry[int](),
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if n := testing.AllocsPerRun(1000, func() { _, _ = tc.p.Execute(ctx, okFunc) }); n != 0 {
				t.Errorf("allocs per call = %v, want 0", n)
			}
		})
	}
}

func TestFallbackBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"nil fallback", "resilience: Fallback: fallback function is nil", func() { resilience.Fallback[int](nil) }},
		{"nil option", "resilience: Fallback: option is nil", func() {
			resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil }, nil)
		}},
		{"nil predicate", "resilience: WithFallbackIf: predicate is nil", func() { resilience.WithFallbackIf(nil) }},
		{"nil fn", "resilience: Fallback: fn is nil", func() {
			_, _ = resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil }).Execute(context.Background(), nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.PanicsWithValue(t, tc.want, tc.f) })
	}
}

func BenchmarkFallbackSuccess(b *testing.B) {
	p := resilience.Fallback(func(context.Context, error) (int, error) { return 0, nil })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = p.Execute(ctx, okFunc)
	}
}

func BenchmarkFallbackBare(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = resilience.Do[int](ctx, nil, okFunc)
	}
}

// TestOutcomesOfFallbackAndHedge: Fallback and Hedge report an
// EventCallEnded per call to an observer that asks for outcomes, with the
// call's duration and the error returned.
func TestOutcomesOfFallbackAndHedge(t *testing.T) {
	errDown := errors.New("down")
	for _, tc := range []struct {
		name    string
		p       func(o resilience.Option) resilience.Policy[int]
		fn      resilience.Func[int]
		wantErr error
	}{
		{"Fallback answers", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Fallback(func(context.Context, error) (int, error) { return 1, nil }, o)
		}, func(context.Context) (int, error) { time.Sleep(3 * time.Second); return 0, errDown }, nil},
		{"Fallback passes a success", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Fallback(func(context.Context, error) (int, error) { return 1, nil }, o)
		}, func(context.Context) (int, error) { time.Sleep(3 * time.Second); return 2, nil }, nil},
		{"Fallback fails too", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Fallback(func(context.Context, error) (int, error) { return 0, io.EOF }, o)
		}, func(context.Context) (int, error) { time.Sleep(3 * time.Second); return 0, errDown }, io.EOF},
		{"Hedge", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Hedge[int](resilience.WithHedgeDelay(time.Hour), o)
		}, func(context.Context) (int, error) { time.Sleep(3 * time.Second); return 2, nil }, nil},
		{"Hedge composed", func(o resilience.Option) resilience.Policy[int] {
			return resilience.Compose(resilience.Hedge[int](resilience.WithHedgeDelay(time.Hour), o), resilience.Retry[int]())
		}, func(context.Context) (int, error) { time.Sleep(3 * time.Second); return 2, nil }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &recorder{outcomes: true}
				_, err := tc.p(resilience.WithObserver(obs)).Execute(context.Background(), tc.fn)
				ended := obs.of(resilience.EventCallEnded)
				require.ErrorIs(t, err, tc.wantErr)
				require.Len(t, ended, 1)
				assert.Equal(t, 3*time.Second, ended[0].Duration)
				assert.Equal(t, err, ended[0].Err)
			})
		})
	}
}

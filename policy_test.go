package resilience_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
)

// trace is a policy that records when it is entered and left.
func trace[T any](name string, log *[]string) resilience.Policy[T] {
	return resilience.PolicyFunc[T](func(ctx context.Context, fn resilience.Func[T]) (T, error) {
		*log = append(*log, name+">")
		v, err := fn(ctx)
		*log = append(*log, "<"+name)
		return v, err
	})
}

func TestCompose(t *testing.T) {
	var log []string
	a, b, c := trace[int]("a", &log), trace[int]("b", &log), trace[int]("c", &log)
	tests := []struct {
		name string
		p    resilience.Policy[int]
		want string
	}{
		{"first is outermost", resilience.Compose(a, b, c), "a> b> c> fn <c <b <a"},
		{"nil entries skipped", resilience.Compose(nil, a, nil, b, nil), "a> b> fn <b <a"},
		{"no policies calls fn", resilience.Compose[int](), "fn"},
		{"only nils calls fn", resilience.Compose[int](nil, nil), "fn"},
		{"compositions nest in place", resilience.Compose(resilience.Compose(a, b), c), "a> b> c> fn <c <b <a"},
		{"inner composition", resilience.Compose(a, resilience.Compose(b, c)), "a> b> c> fn <c <b <a"},
		{"nil policy in Do", nil, "fn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log = nil
			got, err := resilience.Do(context.Background(), tc.p, func(context.Context) (int, error) {
				log = append(log, "fn")
				return 42, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 42, got)
			assert.Equal(t, tc.want, strings.Join(log, " "))
		})
	}
}

// TestComposePassesContext checks that each layer's ctx reaches the next.
func TestComposePassesContext(t *testing.T) {
	type key struct{}
	withValue := resilience.PolicyFunc[string](func(ctx context.Context, fn resilience.Func[string]) (string, error) {
		return fn(context.WithValue(ctx, key{}, "set by the outer layer"))
	})
	p := resilience.Compose(withValue, resilience.Timeout[string](0), resilience.Guarded[string](&countingGuard{}))
	got, err := resilience.Do(context.Background(), p, func(ctx context.Context) (string, error) {
		return ctx.Value(key{}).(string), nil
	})
	require.NoError(t, err)
	assert.Equal(t, "set by the outer layer", got)
}

func TestDoNilFn(t *testing.T) {
	assert.PanicsWithValue(t, "resilience: Do: fn is nil", func() {
		_, _ = resilience.Do[int](context.Background(), nil, nil)
	})
}

// countingGuard is a Guard of the caller's own: it admits up to limit calls
// at once (0: any number) and records every outcome.
type countingGuard struct {
	mu       sync.Mutex
	limit    int
	inFlight int
	outcomes []error
	refuse   error
}

func (g *countingGuard) Enter(context.Context) (func(error), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refuse != nil {
		return nil, g.refuse
	}
	if g.limit > 0 && g.inFlight == g.limit {
		return nil, resilience.ErrBulkheadFull
	}
	g.inFlight++
	return func(err error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.inFlight--
		g.outcomes = append(g.outcomes, err)
	}, nil
}

func TestGuarded(t *testing.T) {
	errRefused := errors.New("refused")
	tests := []struct {
		name      string
		refuse    error
		fnErr     error
		wantErr   error
		wantCalls int
	}{
		{"admitted success", nil, nil, nil, 1},
		{"admitted failure is reported", nil, io.ErrUnexpectedEOF, io.ErrUnexpectedEOF, 1},
		{"refused call never runs", errRefused, nil, errRefused, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &countingGuard{refuse: tc.refuse}
			calls := 0
			_, err := resilience.Do(context.Background(), resilience.Guarded[int](g), func(context.Context) (int, error) {
				calls++
				return 1, tc.fnErr
			})
			assert.ErrorIs(t, err, tc.wantErr)
			if tc.wantErr == nil {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.wantCalls, calls)
			assert.Len(t, g.outcomes, tc.wantCalls, "done called once per admitted call")
			if tc.wantCalls == 1 {
				assert.Equal(t, tc.fnErr, g.outcomes[0])
			}
			assert.Zero(t, g.inFlight)
		})
	}
}

// TestGuardedSharedAcrossTypes uses one guard for calls of two result types
// at once.
func TestGuardedSharedAcrossTypes(t *testing.T) {
	g := &countingGuard{limit: 1}
	ints, strs := resilience.Guarded[int](g), resilience.Guarded[string](g)
	release := make(chan struct{})
	entered := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := resilience.Do(context.Background(), ints, func(context.Context) (int, error) {
			close(entered)
			<-release
			return 1, nil
		})
		done <- err
	}()
	<-entered
	_, err := resilience.Do(context.Background(), strs, func(context.Context) (string, error) { return "x", nil })
	assert.ErrorIs(t, err, resilience.ErrBulkheadFull, "the string call sees the int call's slot taken")
	close(release)
	require.NoError(t, <-done)
	s, err := resilience.Do(context.Background(), strs, func(context.Context) (string, error) { return "x", nil })
	require.NoError(t, err)
	assert.Equal(t, "x", s)
}

func TestGuardedPanic(t *testing.T) {
	g := &countingGuard{}
	value := "fn panicked"
	func() {
		defer func() {
			assert.Equal(t, value, recover(), "the panic goes on with its original value")
		}()
		_, _ = resilience.Do(context.Background(), resilience.Guarded[int](g), func(context.Context) (int, error) {
			panic(value)
		})
	}()
	require.Len(t, g.outcomes, 1)
	var pe *resilience.PanicError
	require.ErrorAs(t, g.outcomes[0], &pe, "done receives a *PanicError")
	assert.Equal(t, value, pe.Value)
	assert.Contains(t, string(pe.Stack), "TestGuardedPanic")
	assert.Zero(t, g.inFlight, "the slot is freed")
}

func TestGuardedGoexit(t *testing.T) {
	g := &countingGuard{}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = resilience.Do(context.Background(), resilience.Guarded[int](g), func(context.Context) (int, error) {
			runtimeGoexit()
			return 0, nil
		})
	}()
	<-finished
	require.Len(t, g.outcomes, 1)
	var pe *resilience.PanicError
	assert.ErrorAs(t, g.outcomes[0], &pe, "a call that exits its goroutine is recorded as a failure")
}

func TestGuardedNil(t *testing.T) {
	assert.PanicsWithValue(t, "resilience: Guarded: guard is nil", func() { resilience.Guarded[int](nil) })
}

func TestErrors(t *testing.T) {
	errCause := io.ErrUnexpectedEOF
	tests := []struct {
		name string
		err  error
		is   []error
	}{
		{"ErrTimeout is a deadline", resilience.ErrTimeout, []error{resilience.ErrTimeout, context.DeadlineExceeded}},
		{"PanicError unwraps an error value", &resilience.PanicError{Value: errCause}, []error{errCause}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range tc.is {
				assert.ErrorIs(t, tc.err, target)
			}
		})
	}
	var netErr interface{ Timeout() bool }
	require.ErrorAs(t, resilience.ErrTimeout, &netErr)
	assert.True(t, netErr.Timeout())
	assert.Equal(t, "resilience: panic: boom", (&resilience.PanicError{Value: "boom"}).Error())
	assert.Nil(t, (&resilience.PanicError{Value: "boom"}).Unwrap())
}

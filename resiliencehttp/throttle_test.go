package resiliencehttp_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestTransportAdaptiveThrottler: an AdaptiveThrottler among the
// Transport's guards, told what the server accepted by ThrottleOutcome, starts
// refusing calls locally against a server that refuses three calls in
// four (429 or 503), and sends it fewer of them; its refusals match
// ErrThrottled, carry a retry hint, and are not retried. Against a server
// that answers, if only with 500, it refuses nothing.
func TestTransportAdaptiveThrottler(t *testing.T) {
	tests := []struct {
		name    string
		codes   []int
		refuses bool
	}{
		{"503 three times in four", []int{503, 503, 503, 200}, true},
		{"429 three times in four", []int{429, 200, 429, 429}, true},
		{"502 and 504", []int{502, 504, 502, 200}, true},
		{"500 always", []int{500}, false},
		{"404 and 200", []int{404, 200}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(tc.codes...))
			th := resilience.NewAdaptiveThrottler(
				resilience.WithThrottleClassifier(resiliencehttp.ThrottleOutcome),
				resilience.WithRand(rand.New(rand.NewPCG(1, 2))),
				resilience.WithClock(clock.NewMock())) // the window never slides
			tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithGuards(th), noWait)
			const calls = 200
			refused := 0
			for range calls {
				resp, err := get(t, tr, srv.URL)
				if err != nil {
					require.ErrorIs(t, err, resilience.ErrThrottled)
					d, ok := resilience.RetryAfter(err)
					assert.True(t, ok && d > 0, "RetryAfter(%v) = %v, %t, want a hint", err, d, ok)
					var re *resilience.RetryError
					assert.False(t, errors.As(err, &re), "a local refusal is not retried: %v", err)
					refused++
					continue
				}
				readAll(t, resp)
			}
			if !tc.refuses {
				assert.Zero(t, refused, "refusals")
				assert.Equal(t, int64(calls), srv.requests.Load(), "requests the server saw")
				return
			}
			t.Logf("%d calls, %d refused locally, %d requests reached the server", calls, refused, srv.requests.Load())
			assert.Greater(t, refused, calls/2, "refused locally")
			assert.Less(t, srv.requests.Load(), int64(calls), "requests the server saw, retries included")
		})
	}
}

// TestTransportThrottleRefusalFinal: an AdaptiveThrottler's refusal is
// never retried, whatever WithRetryable, or a predicate given to WithRetry,
// says: one GET through a throttle that refuses is refused once, and
// reaches no server.
func TestTransportThrottleRefusalFinal(t *testing.T) {
	anyErrorOr5xx := func(resp *http.Response, err error) bool { return err != nil || resp.StatusCode >= 500 }
	tests := []struct {
		name string
		opts []resiliencehttp.TransportOption
	}{
		{"Retryable, the default", nil},
		{"any error or 5xx", []resiliencehttp.TransportOption{resiliencehttp.WithRetryable(anyErrorOr5xx)}},
		{"everything", []resiliencehttp.TransportOption{resiliencehttp.WithRetryable(func(*http.Response, error) bool { return true })}},
		{"any error or 5xx, and the retry's own predicate everything", []resiliencehttp.TransportOption{
			resiliencehttp.WithRetryable(anyErrorOr5xx), resiliencehttp.WithRetry(resilience.WithRetryIf(func(error) bool { return true }))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, statuses(200))
			log := &recorder{}
			th := resilience.NewAdaptiveThrottler(resilience.WithRand(drawsZero{}),
				resilience.WithClock(clock.NewMock()), resilience.WithObserver(log)) // the window never slides
			// Twenty calls the service refused: from then on the throttle
			// refuses every call, as its draws are below any ratio.
			for range 20 {
				if done, err := th.Enter(context.Background()); err == nil {
					done(resilience.ErrBulkheadFull)
				}
			}
			before := len(log.all())
			tr := resiliencehttp.NewTransport(base(t), append([]resiliencehttp.TransportOption{resiliencehttp.WithGuards(th), noWait}, tc.opts...)...)
			resp, err := get(t, tr, srv.URL)
			require.ErrorIs(t, err, resilience.ErrThrottled)
			assert.Nil(t, resp)
			var re *resilience.RetryError
			assert.False(t, errors.As(err, &re), "RoundTrip(…) = %v, want the refusal, not retried", err)
			assert.Len(t, log.all()[before:], 1, "refusals of the GET")
			assert.Zero(t, srv.requests.Load(), "requests the server saw")
		})
	}
}

// drawsZero is a throttle's random source that always draws 0.
type drawsZero struct{}

func (drawsZero) Uint64() uint64 { return 0 }

// TestThrottleOutcome: what the Transport tells its guards, read as the
// AdaptiveThrottler's outcomes: accepted (true) or not.
func TestThrottleOutcome(t *testing.T) {
	status := func(code int) error { return &resiliencehttp.StatusError{StatusCode: code} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"success", nil, true},
		{"500", status(500), true},
		{"501", status(501), true},
		{"408", status(408), true},
		{"429", status(429), false},
		{"502", status(502), false},
		{"503", status(503), false},
		{"504", status(504), false},
		{"503 wrapped", fmt.Errorf("attempt: %w", status(503)), false},
		{"connection refused", errors.New("dial tcp: connection refused"), false},
		{"attempt timed out", resilience.ErrTimeout, false},
		{"a breaker's refusal", resilience.ErrBreakerOpen, false},
		{"cancelled", context.Canceled, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := resilience.OutcomeFailure
			if tc.want {
				want = resilience.OutcomeSuccess
			}
			assert.Equal(t, want, resiliencehttp.ThrottleOutcome(tc.err), "ThrottleOutcome(%v)", tc.err)
		})
	}
}

var _ http.RoundTripper = (*resiliencehttp.Transport)(nil)

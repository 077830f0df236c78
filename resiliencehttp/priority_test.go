package resiliencehttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestPriorityFromHeader: the middleware gives the request the priority
// its header names, by name or number; a request without one, or with an
// unknown value, keeps its context's (normal, unless set before).
func TestPriorityFromHeader(t *testing.T) {
	tests := []struct {
		name   string
		header []string // nil: no header
		before *resilience.Priority
		want   resilience.Priority
	}{
		{"no header", nil, nil, resilience.PriorityNormal},
		{"critical", []string{"critical"}, nil, resilience.PriorityCritical},
		{"upper case", []string{"SHEDDABLE"}, nil, resilience.PrioritySheddable},
		{"number", []string{"1"}, nil, resilience.PriorityHigh},
		{"negative number", []string{"-1"}, nil, resilience.PriorityLow},
		{"first value counts", []string{"low", "critical"}, nil, resilience.PriorityLow},
		{"unknown name", []string{"urgent"}, nil, resilience.PriorityNormal},
		{"number out of range", []string{"9"}, nil, resilience.PriorityNormal},
		{"empty value", []string{""}, nil, resilience.PriorityNormal},
		{"unknown keeps an earlier priority", []string{"urgent"}, ptr(resilience.PriorityHigh), resilience.PriorityHigh},
		{"header overrides an earlier priority", []string{"low"}, ptr(resilience.PriorityHigh), resilience.PriorityLow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got resilience.Priority
			h := resiliencehttp.PriorityFromHeader("x-priority")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = resilience.PriorityFrom(r.Context())
			}))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.header != nil {
				r.Header["X-Priority"] = tc.header
			}
			if tc.before != nil {
				r = r.WithContext(resilience.WithPriority(r.Context(), *tc.before))
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			assert.Equal(t, tc.want, got)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestWithPriorityHeader: the Transport sends the priority of the
// request's context, unless it is normal or the request has the header;
// the caller's request is not changed.
func TestWithPriorityHeader(t *testing.T) {
	tests := []struct {
		name   string
		ctx    context.Context
		header string // the request's own, if not ""
		want   string
	}{
		{"no priority", context.Background(), "", ""},
		{"normal", resilience.WithPriority(context.Background(), resilience.PriorityNormal), "", ""},
		{"critical", resilience.WithPriority(context.Background(), resilience.PriorityCritical), "", "critical"},
		{"sheddable", resilience.WithPriority(context.Background(), resilience.PrioritySheddable), "", "sheddable"},
		{"beyond critical", resilience.WithPriority(context.Background(), resilience.Priority(5)), "", "critical"},
		{"the request's own header wins", resilience.WithPriority(context.Background(), resilience.PriorityLow), "high", "high"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("X-Priority") })
			tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithPriorityHeader("x-priority"))
			req, err := http.NewRequestWithContext(tc.ctx, http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("X-Priority", tc.header)
			}
			before := req.Header.Clone()
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, tc.want, <-got)
			assert.Equal(t, before, req.Header, "the caller's header")
		})
	}
}

// TestWithPriorityHeaderNoHeaderMap: a request without a header map (which
// net/http refuses to send, so it goes once to the base transport) gets
// one for the priority.
func TestWithPriorityHeaderNoHeaderMap(t *testing.T) {
	rec := &ctxRecorder{base: headerRecorder{}}
	tr := resiliencehttp.NewTransport(rec, resiliencehttp.WithPriorityHeader("X-Priority"))
	req := httptest.NewRequestWithContext(resilience.WithPriority(context.Background(), resilience.PriorityHigh), http.MethodGet, "http://example.com/", nil)
	req.Header = nil
	_, err := tr.RoundTrip(req)
	require.ErrorIs(t, err, errHeaderRecorded)
	assert.Equal(t, "high", err.(headerError).h.Get("X-Priority"))
	assert.Nil(t, req.Header, "the caller's request")
}

// headerRecorder fails every request with its header.
type headerRecorder struct{}

func (headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, headerError{r.Header}
}

type headerError struct{ h http.Header }

var errHeaderRecorded = errors.New("test: header recorded")

func (headerError) Error() string        { return errHeaderRecorded.Error() }
func (headerError) Is(target error) bool { return target == errHeaderRecorded }

// TestPriorityOptionsRefused: an empty header name panics, naming the
// function.
func TestPriorityOptionsRefused(t *testing.T) {
	assert.PanicsWithValue(t, "resiliencehttp: PriorityFromHeader: header name is empty", func() { resiliencehttp.PriorityFromHeader("") })
	assert.PanicsWithValue(t, "resiliencehttp: PriorityFromHeader: next is nil", func() { resiliencehttp.PriorityFromHeader("X-Priority")(nil) })
	assert.PanicsWithValue(t, "resiliencehttp: WithPriorityHeader: header name is empty", func() { resiliencehttp.WithPriorityHeader("") })
}

// TestPrioritySheddingEndToEnd: clients mark their requests' contexts
// with priorities, the Transport sends them as a header, and a server
// whose AdaptiveLimiter is full of normal requests (its limit held at 10:
// 8 for normal calls) refuses the sheddable, low and normal ones with 503
// while the high and critical ones still get in, up to the limit.
func TestPrioritySheddingEndToEnd(t *testing.T) {
	limiter := resilience.NewAdaptiveLimiter(resilience.WithAdaptiveLimits(10, 10), resilience.WithAdaptiveInitial(10))
	arrived := make(chan resilience.Priority, 16)
	release := make(chan struct{})
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- resilience.PriorityFrom(r.Context())
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := newServer(t, resiliencehttp.PriorityFromHeader("X-Priority")(resiliencehttp.Handler(app, limiter)).ServeHTTP)
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithPriorityHeader("X-Priority"),
		resiliencehttp.WithRetry(resilience.WithAttempts(1)))

	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	send := func(p resilience.Priority) int {
		req, err := http.NewRequestWithContext(resilience.WithPriority(context.Background(), p), http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		return resp.StatusCode
	}
	// admitted sends a request that the server holds, and waits until it
	// has reached the handler.
	admitted := func(p resilience.Priority) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.Equal(t, http.StatusOK, send(p), "%v, once released", p)
		}()
		assert.Equal(t, p, <-arrived)
	}
	for range 8 {
		admitted(resilience.PriorityNormal)
	}
	require.EqualValues(t, 8, limiter.InFlight())

	steps := []struct {
		p        resilience.Priority
		admitted bool
	}{
		{resilience.PrioritySheddable, false},
		{resilience.PriorityLow, false},
		{resilience.PriorityNormal, false},
		{resilience.PriorityHigh, true},
		{resilience.PriorityHigh, false},
		{resilience.PriorityCritical, true},
		{resilience.PriorityCritical, false}, // the limit is reached
		{resilience.PrioritySheddable, false},
	}
	for i, st := range steps {
		if st.admitted {
			admitted(st.p)
			continue
		}
		assert.Equal(t, http.StatusServiceUnavailable, send(st.p), "step %d: %v", i, st.p)
	}
	assert.EqualValues(t, 10, limiter.InFlight())
}

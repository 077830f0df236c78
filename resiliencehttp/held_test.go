package resiliencehttp_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// busy answers the first n requests with 503 and a body of size bytes,
// and the others with 200 "ok".
func busy(n int64, size int) http.HandlerFunc {
	var seen atomic.Int64
	body := bytes.Repeat([]byte("b"), size)
	return func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > n {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(body)
	}
}

// TestTransportLastResponseWhole: when the retries run out on a 503, the
// last response comes back with its whole body, whether the body is
// shorter than the drain limit (read into memory), as long or longer (the
// rest still unread), or the limit is 0.
func TestTransportLastResponseWhole(t *testing.T) {
	tests := []struct {
		limit int64
		size  int
	}{
		{8, 0}, {8, 7}, {8, 8}, {8, 9}, {8, 40},
		{0, 5},
		{resiliencehttp.DefaultDrainLimit, resiliencehttp.DefaultDrainLimit},
		{resiliencehttp.DefaultDrainLimit, resiliencehttp.DefaultDrainLimit + 1},
	}
	for _, tc := range tests {
		t.Run("limit "+strconv.FormatInt(tc.limit, 10)+", body "+strconv.Itoa(tc.size), func(t *testing.T) {
			srv := newServer(t, busy(3, tc.size))
			tr := resiliencehttp.NewTransport(base(t), noWait, resiliencehttp.WithDrainLimit(tc.limit))
			resp, err := get(t, tr, srv.URL)
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Len(t, readAll(t, resp), tc.size, "the body")
			assert.Equal(t, int64(3), srv.requests.Load())
		})
	}
}

// TestTransportDrainLimitZeroReadsNothing: with a drain limit of 0 the
// responses the Transport does not return are closed unread, as
// WithDrainLimit says: the 503s the retry drops, and with WithStatusErrors
// the last one too.
func TestTransportDrainLimitZeroReadsNothing(t *testing.T) {
	tests := []struct {
		name    string
		busy    int64 // the 503s before a 200
		opts    []resiliencehttp.TransportOption
		dropped int // the responses not returned, all first
	}{
		{"the retried 503s", 2, nil, 2},
		{"the last 503, with WithStatusErrors", 3, []resiliencehttp.TransportOption{resiliencehttp.WithStatusErrors()}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, busy(tc.busy, 100))
			rec := &bodyRecorder{base: base(t)}
			opts := append([]resiliencehttp.TransportOption{noWait, resiliencehttp.WithDrainLimit(0)}, tc.opts...)
			resp, err := get(t, resiliencehttp.NewTransport(rec, opts...), srv.URL)
			if tc.dropped < 3 {
				require.NoError(t, err)
				assert.Equal(t, "ok", readAll(t, resp))
			} else {
				assert.ErrorIs(t, err, resilience.ErrRetriesExhausted)
			}
			bodies := rec.all()
			require.Len(t, bodies, 3)
			for i, b := range bodies[:tc.dropped] {
				assert.Zero(t, b.reads.Load(), "reads of the body of attempt %d", i+1)
				assert.True(t, b.closed.Load(), "the body of attempt %d is closed", i+1)
			}
		})
	}
}

// TestTransportRetriedResponseReleasesGuards: a 503 whose body fits in the
// drain limit is read and closed before the retry's wait, and its guards
// told its outcome then, so that a bulkhead slot or a breaker's probe is
// not held through the wait; a longer body keeps them until the next
// attempt begins.
func TestTransportRetriedResponseReleasesGuards(t *testing.T) {
	tests := []struct {
		size      int
		toldFirst bool // the guards are told before the wait
	}{
		{0, true}, {7, true}, {8, true},
		{9, false},
	}
	for _, tc := range tests {
		t.Run("body "+strconv.Itoa(tc.size), func(t *testing.T) {
			srv := newServer(t, busy(1, tc.size))
			g := &recordGuard{}
			bh := resilience.NewBulkhead(1)
			clk := newWaitClock()
			tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithClock(clk), resiliencehttp.WithGuards(g, bh),
				resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0), resiliencehttp.WithDrainLimit(8),
				resiliencehttp.WithRetry(resilience.WithAttempts(2), resilience.WithBackoff(resilience.Constant(time.Second)), resilience.WithoutBudget()))
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := get(t, tr, srv.URL)
				done <- result{resp, err}
			}()
			assert.Equal(t, time.Second, <-clk.waits)
			if tc.toldFirst {
				assert.Len(t, g.told(), 1, "outcomes told before the wait")
				assert.Zero(t, bh.InFlight(), "bulkhead slots held through the wait")
			} else {
				assert.Empty(t, g.told(), "outcomes told before the wait")
				assert.Equal(t, 1, bh.InFlight(), "bulkhead slots held through the wait")
			}
			clk.Add(time.Second)
			res := <-done
			require.NoError(t, res.err)
			assert.Equal(t, "ok", readAll(t, res.resp))
			told := g.told()
			require.Len(t, told, 2)
			var se *resiliencehttp.StatusError
			assert.ErrorAs(t, told[0], &se)
			assert.NoError(t, told[1])
			assert.Zero(t, bh.InFlight())
		})
	}
}

// bodyRecorder is a base transport that records how the body of each
// response it returns is used.
type bodyRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*recordedBody
}

type recordedBody struct {
	io.ReadCloser
	reads  atomic.Int32
	closed atomic.Bool
}

func (b *recordedBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.ReadCloser.Read(p)
}

func (b *recordedBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

func (r *bodyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &recordedBody{ReadCloser: resp.Body}
	resp.Body = b
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
	return resp, nil
}

func (r *bodyRecorder) all() []*recordedBody {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*recordedBody(nil), r.bodies...)
}

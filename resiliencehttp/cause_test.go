package resiliencehttp_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// ctxErrBase is a base transport that reports the end of a request's
// context as ctx.Err(), not as its cause, in RoundTrip's error and in the
// body's reads, which check the context first, as transports written
// before context causes do.
type ctxErrBase struct{ base http.RoundTripper }

func (b ctxErrBase) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	resp.Body = ctxErrBody{ReadCloser: resp.Body, ctx: ctx}
	return resp, nil
}

type ctxErrBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b ctxErrBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	return b.ReadCloser.Read(p)
}

// TestTransportTimeoutWhateverTheBaseReports: a timeout's error matches
// resilience.ErrTimeout even from a base transport that reports only
// context.DeadlineExceeded, whether the attempt timed out waiting for the
// response or while its body was read.
func TestTransportTimeoutWhateverTheBaseReports(t *testing.T) {
	t.Run("waiting for the response", func(t *testing.T) {
		arrived := make(chan struct{}, 1)
		srv := newServer(t, hang(arrived))
		clk := clock.NewMock()
		tr := resiliencehttp.NewTransport(ctxErrBase{base(t)}, resiliencehttp.WithClock(clk),
			resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(time.Second),
			resiliencehttp.WithRetry(resilience.WithAttempts(1)))
		errc := make(chan error, 1)
		go func() {
			_, err := get(t, tr, srv.URL)
			errc <- err
		}()
		<-arrived
		clk.Add(time.Second)
		err := <-errc
		assert.ErrorIs(t, err, resilience.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("reading the body", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(mebibyte) })
		clk := clock.NewMock()
		rec := &ctxRecorder{base: ctxErrBase{base(t)}}
		tr := resiliencehttp.NewTransport(rec, resiliencehttp.WithClock(clk),
			resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(time.Second))
		resp, err := get(t, tr, srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.ReadFull(resp.Body, make([]byte, 1024))
		require.NoError(t, err)
		clk.Add(time.Second)
		<-rec.last().Done()
		_, err = io.ReadAll(resp.Body)
		assert.ErrorIs(t, err, resilience.ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// lateBase is a base transport whose response arrives as the attempt's
// deadline passes: it moves the clock past the deadline and returns the
// response once the attempt's context has ended.
type lateBase struct {
	base http.RoundTripper
	clk  *clock.Mock
	by   time.Duration
}

func (b lateBase) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b.clk.Add(b.by)
	<-req.Context().Done()
	return resp, nil
}

// TestTransportLateResponseIsATimeout: a response that arrives as the
// attempt's deadline passes cannot be read any more: the attempt is a
// timeout, and the response is closed.
func TestTransportLateResponseIsATimeout(t *testing.T) {
	srv := newServer(t, statuses(200))
	clk := clock.NewMock()
	rec := &bodyRecorder{base: base(t)}
	tr := resiliencehttp.NewTransport(lateBase{base: rec, clk: clk, by: time.Second}, resiliencehttp.WithClock(clk),
		resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(time.Second),
		resiliencehttp.WithRetry(resilience.WithAttempts(1)))
	resp, err := get(t, tr, srv.URL)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, resilience.ErrTimeout)
	bodies := rec.all()
	require.Len(t, bodies, 1)
	assert.True(t, bodies[0].closed.Load(), "the late response is closed")
}

package resiliencehttp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// closeCounter is a request body without GetBody that counts its Closes.
type closeCounter struct {
	io.Reader
	closes atomic.Int32
}

func (c *closeCounter) Close() error { c.closes.Add(1); return nil }

func TestTransportRequestBodies(t *testing.T) {
	const payload = "the request body"
	tests := []struct {
		name     string
		body     func() (io.Reader, *closeCounter) // the request's body; a counter when it has no GetBody
		opts     []resiliencehttp.TransportOption
		want     int
		requests int
	}{
		{"GetBody replays", func() (io.Reader, *closeCounter) { return strings.NewReader(payload), nil }, nil, 200, 3},
		{"no GetBody: buffered and replayed", func() (io.Reader, *closeCounter) {
			c := &closeCounter{Reader: strings.NewReader(payload)}
			return c, c
		}, nil, 200, 3},
		{"no GetBody, exactly the buffer", func() (io.Reader, *closeCounter) {
			c := &closeCounter{Reader: strings.NewReader(payload)}
			return c, c
		}, []resiliencehttp.TransportOption{resiliencehttp.WithBodyBuffer(int64(len(payload)))}, 200, 3},
		{"no GetBody, over the buffer: sent once", func() (io.Reader, *closeCounter) {
			c := &closeCounter{Reader: strings.NewReader(payload)}
			return c, c
		}, []resiliencehttp.TransportOption{resiliencehttp.WithBodyBuffer(4)}, 503, 1},
		{"no GetBody, no buffer: sent once", func() (io.Reader, *closeCounter) {
			c := &closeCounter{Reader: strings.NewReader(payload)}
			return c, c
		}, []resiliencehttp.TransportOption{resiliencehttp.WithBodyBuffer(0)}, 503, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			codes := statuses(503, 503, 200)
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, string(b))
				mu.Unlock()
				codes(w, r)
			})
			tr := resiliencehttp.NewTransport(base(t), append([]resiliencehttp.TransportOption{noWait}, tc.opts...)...)
			body, counter := tc.body()
			req, err := http.NewRequest(http.MethodPut, srv.URL, body)
			require.NoError(t, err)
			if counter != nil {
				require.Nil(t, req.GetBody)
			}
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			readAll(t, resp)
			assert.Equal(t, tc.want, resp.StatusCode)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, got, tc.requests)
			for i, b := range got {
				assert.Equal(t, payload, b, "body of attempt %d", i+1)
			}
			if counter != nil {
				assert.Positive(t, counter.closes.Load(), "the request body is closed")
			}
		})
	}
}

func TestTransportClosesUnsentBody(t *testing.T) {
	// A request refused before it is sent still has its body closed, as
	// the RoundTripper contract asks.
	bh := resilience.NewBulkhead(1)
	require.True(t, bh.TryAcquire())
	defer bh.Release()
	tr := resiliencehttp.NewTransport(base(t), resiliencehttp.WithGuards(bh), resiliencehttp.WithRetry(resilience.WithAttempts(1)))
	for _, method := range []string{http.MethodPut, http.MethodPost} {
		body := &closeCounter{Reader: strings.NewReader("x")}
		req, err := http.NewRequest(method, "http://127.0.0.1:1/", body)
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		assert.ErrorIs(t, err, resilience.ErrBulkheadFull, method)
		assert.Equal(t, int32(1), body.closes.Load(), method)
	}
}

// mebibyte is the body of TestTransportBodyAfterReturn.
var mebibyte = bytes.Repeat([]byte("0123456789abcdef"), 1<<16)

func TestTransportBodyAfterReturn(t *testing.T) {
	// With a call and an attempt timeout, the body stays readable after
	// RoundTrip returns; the attempt's context ends when the body is read
	// to the end or closed, or when its deadline passes while reading.
	tests := []struct {
		name    string
		read    func(t *testing.T, resp *http.Response, clk *clock.Mock)
		wantErr error
	}{
		{"read to the end", func(t *testing.T, resp *http.Response, _ *clock.Mock) {
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, mebibyte, b)
		}, context.Canceled},
		{"closed early", func(t *testing.T, resp *http.Response, _ *clock.Mock) {
			_, err := io.ReadFull(resp.Body, make([]byte, 1024))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}, context.Canceled},
		{"deadline while reading", func(t *testing.T, resp *http.Response, clk *clock.Mock) {
			_, err := io.ReadFull(resp.Body, make([]byte, 1024))
			require.NoError(t, err)
			clk.Add(2 * time.Second)
			_, err = io.ReadAll(resp.Body)
			assert.ErrorIs(t, err, resilience.ErrTimeout)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			require.NoError(t, resp.Body.Close())
		}, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(mebibyte) })
			clk := clock.NewMock()
			rec := &ctxRecorder{base: base(t)}
			tr := resiliencehttp.NewTransport(rec, resiliencehttp.WithClock(clk),
				resiliencehttp.WithTimeout(5*time.Second), resiliencehttp.WithAttemptTimeout(2*time.Second))
			resp, err := get(t, tr, srv.URL)
			require.NoError(t, err)
			ctx := rec.last()
			require.NoError(t, ctx.Err(), "the attempt's context outlives RoundTrip")
			tc.read(t, resp, clk)
			assert.ErrorIs(t, ctx.Err(), tc.wantErr, "the attempt's context is over")
		})
	}
}

func TestClientBodyAfterReturn(t *testing.T) {
	// The same through an http.Client and the real clock.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(mebibyte) })
	client := &http.Client{Transport: resiliencehttp.NewTransport(base(t))}
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Len(t, b, len(mebibyte))
}

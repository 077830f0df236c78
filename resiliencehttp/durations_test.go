package resiliencehttp_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestTransportTimeoutsSaturate: a call or attempt timeout of the largest
// Duration or 200 years is a deadline that far ahead, on the real clock
// and on an injected one, and a century later the body still reads.
func TestTransportTimeoutsSaturate(t *testing.T) {
	const century = 100 * 365 * 24 * time.Hour
	srv := newServer(t, statuses(http.StatusOK))
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"MaxInt64", math.MaxInt64}, {"200 years", 2 * century}} {
		for _, opt := range []struct {
			name string
			opts []resiliencehttp.TransportOption
		}{
			{"WithTimeout", []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(d.d), resiliencehttp.WithAttemptTimeout(0)}},
			{"WithAttemptTimeout", []resiliencehttp.TransportOption{resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(d.d)}},
		} {
			for _, mock := range []bool{false, true} {
				name := opt.name + "/" + d.name + "/real clock"
				now := time.Now
				opts := opt.opts
				var clk *clock.Mock
				if mock {
					name = opt.name + "/" + d.name + "/mock clock"
					clk = clock.NewMock()
					now = clk.Now
					opts = append(opts, resiliencehttp.WithClock(clk))
				}
				t.Run(name, func(t *testing.T) {
					rec := &ctxRecorder{base: base(t)}
					resp, err := get(t, resiliencehttp.NewTransport(rec, opts...), srv.URL)
					require.NoError(t, err)
					deadline, ok := rec.last().Deadline()
					require.True(t, ok)
					assert.Greater(t, deadline.Sub(now()), century)
					if clk != nil {
						clk.Add(century)
					}
					assert.Equal(t, "status 200", readAll(t, resp))
				})
			}
		}
	}
}

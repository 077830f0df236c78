package resiliencegrpc_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/faf87a20/resilience/resiliencegrpc"
)

// TestAttemptTimeoutSaturates: an attempt timeout of the largest Duration
// or 200 years lets the call through, and the server sees a deadline more
// than a century ahead, never one that wrapped into the past.
func TestAttemptTimeoutSaturates(t *testing.T) {
	const century = 100 * 365 * 24 * time.Hour
	for _, tc := range []struct {
		name string
		d    time.Duration
	}{{"MaxInt64", math.MaxInt64}, {"200 years", 2 * century}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{script: []step{{}}}
			cc := serve(t, srv, nil, grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithAttemptTimeout(tc.d))))
			_, err := healthpb.NewHealthClient(cc).Check(context.Background(), checkReq)
			require.NoError(t, err)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			require.Len(t, srv.ctxs, 1)
			assert.Greater(t, srv.ctxs[0], century)
		})
	}
}

package resiliencegrpc

import (
	"context"
	"testing"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// pastDeadline is a guard's refusal that matches context.DeadlineExceeded
// too, as a rate limiter's does when the tokens would come after the
// deadline.
type pastDeadline struct{}

func (pastDeadline) Error() string { return "test: refused, past the deadline" }
func (pastDeadline) Is(target error) bool {
	return target == resilience.ErrRefused || target == context.DeadlineExceeded
}

// TestRefusalStatus: a guard's refusal (resilience.ErrRefused) is the
// refusal code whatever else it matches and whether or not the call's
// context has ended; the error of a context that ended while a guard made
// the call wait is the context's status; any other error of a guard's is
// the refusal code.
func TestRefusalStatus(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := &serverConfig{code: codes.ResourceExhausted}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{"a refusal", live, resilience.ErrBulkheadFull, codes.ResourceExhausted},
		{"a refusal, the context ended", ended, resilience.ErrThrottled, codes.ResourceExhausted},
		{"a refusal past the deadline, the context ended", ended, pastDeadline{}, codes.ResourceExhausted},
		{"the context ended during a wait", ended, context.Canceled, codes.Canceled},
		{"the deadline passed during a wait", ended, context.DeadlineExceeded, codes.DeadlineExceeded},
		{"a context error, the context live", live, context.Canceled, codes.ResourceExhausted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := cfg.refusal(tc.ctx, tc.err, func(metadata.MD) {})
			assert.Equal(t, tc.want, status.Code(err), "refusal(%v) = %v", tc.err, err)
		})
	}
}

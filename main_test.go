package resilience_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind, with
// goleak's default options: the workers of default-mode Timeouts exit on
// their own soon after their last task, as a user's own leak check needs.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package browsertest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: chromedp
// waits for the browser to exit when its context is cancelled, so nothing
// of it is left either.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

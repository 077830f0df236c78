package resilience_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/faf87a20/resilience"
)

// TestMain fails the run if any test leaves a goroutine behind. The parked
// workers of default-mode Timeouts are stopped first: they are the pool's,
// not a leak.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// A worker still finishing its last task parks after the first
		// stop: stop again before calling anything a leak.
		var err error
		for range 5 {
			resilience.StopIdleWorkers()
			if err = goleak.Find(); err == nil {
				break
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

package resilience_test

// This file holds the README's testing example as it stands there, so that
// the example compiles and passes.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
)

// slowService stands for a dependency that takes a minute to answer.
func slowService(ctx context.Context) (string, error) {
	select {
	case <-time.After(time.Minute):
		return "late", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func TestSlowServiceTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		policy := resilience.Timeout[string](time.Second, resilience.WithClock(mock))

		errc := make(chan error, 1)
		go func() {
			_, err := resilience.Do(context.Background(), policy, slowService)
			errc <- err
		}()
		synctest.Wait()       // the call is now waiting on the mock clock
		mock.Add(time.Second) // the deadline passes
		if err := <-errc; !errors.Is(err, resilience.ErrTimeout) {
			t.Fatalf("Do() = %v, want ErrTimeout", err)
		}
	})
}

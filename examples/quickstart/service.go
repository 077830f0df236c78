package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// errUnavailable is what the simulated service answers when it fails.
var errUnavailable = errors.New("service unavailable")

// service is a simulated remote service. Its behaviour is scripted: call n
// (from 1) follows script[(n-1) % len(script)], so every run tells the same
// story.
type service struct {
	script []step
	calls  atomic.Int64
}

// step is how the service answers one call.
type step struct {
	delay time.Duration // how long the call takes
	fail  bool          // answer errUnavailable
	deaf  bool          // ignore ctx while delaying
}

func newService(script ...step) *service { return &service{script: script} }

// ok, slow, fail and hang are the steps scenarios script with.
func ok(d time.Duration) step   { return step{delay: d} }
func fail(d time.Duration) step { return step{delay: d, fail: true} }
func hang(d time.Duration) step { return step{delay: d, deaf: true} }

// Call answers one call. It honours ctx unless the step is deaf.
func (s *service) Call(ctx context.Context) (string, error) {
	n := s.calls.Add(1)
	st := s.script[(n-1)%int64(len(s.script))]
	if st.deaf {
		time.Sleep(st.delay)
	} else {
		t := time.NewTimer(st.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if st.fail {
		return "", errUnavailable
	}
	return fmt.Sprintf("answer #%d", n), nil
}

// since formats the time since start for a line of output, rounded so that
// runs print alike.
func since(start time.Time) string {
	return time.Since(start).Round(10 * time.Millisecond).String()
}

package resilience

import (
	"testing"
	"time"
)

// TestTimeoutRing: what a default-mode call's alarm does when it fires, by
// the state of the call on its timedCall: it abandons a call past its
// deadline and wakes its caller, waits on for a call whose deadline is
// later (an alarm set for an earlier call's deadline), and lets the alarm
// rest when no call runs under it.
func TestTimeoutRing(t *testing.T) {
	tm := Timeout[int](time.Hour).(*timeout[int])
	now := time.Now()
	past, future := deadlineAt(now, 0), deadlineAt(now, time.Hour) // past by the time ring reads the clock
	running := func(dl int64) uint64 { return uint64(dl)<<callBits | callRunning }
	tests := []struct {
		name      string
		state     uint64
		wantState uint64
		wantDue   int64
		woken     bool
	}{
		{"past its deadline", running(past), uint64(past)<<callBits | callAbandoned, 0, true},
		{"before its deadline", running(future), running(future), future, false},
		{"finished", uint64(past)<<callBits | callFinished, uint64(past)<<callBits | callFinished, 0, false},
		{"idle", callIdle, callIdle, 0, false},
		{"waiting for its context", callRunning, callRunning, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tm.call(now)
			c.arm(past, time.Hour) // an alarm set for an earlier deadline
			c.state.Store(tc.state)
			c.ring()
			if got := c.state.Load(); got != tc.wantState {
				t.Errorf("state %#x, want %#x", got, tc.wantState)
			}
			if got := c.due.Load(); got != tc.wantDue {
				t.Errorf("due %d, want %d", got, tc.wantDue)
			}
			select {
			case <-c.reply:
				if !tc.woken {
					t.Error("the caller was woken")
				}
			default:
				if tc.woken {
					t.Error("the caller was not woken")
				}
			}
			c.state.Store(callIdle) // the alarm, if set again, finds no call
		})
	}
}

package resiliencehttp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRenamePanic: a panic of the core's chaos constructors takes the
// name of this package's function; any other goes on as it is.
func TestRenamePanic(t *testing.T) {
	errPanic := errors.New("not a string")
	tests := []struct {
		in, want any
	}{
		{"resilience: ChaosFault: option is nil", "resiliencehttp: F: option is nil"},
		{"resilience: ChaosLatency: x", "resiliencehttp: F: x"},
		{"resilience: Retry: x", "resilience: Retry: x"},
		{errPanic, errPanic},
	}
	for _, tc := range tests {
		if got := renamePanic(tc.in, "F"); got != tc.want {
			t.Errorf("renamePanic(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// failingWriter fails every write, as a connection the client closed.
type failingWriter struct{ http.ResponseWriter }

var errWrite = errors.New("test: write failed")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestTruncatingWriter: a failed write is reported as it is; the writer
// unwraps to the server's.
func TestTruncatingWriter(t *testing.T) {
	inner := failingWriter{httptest.NewRecorder()}
	w := &truncatingWriter{ResponseWriter: inner, n: 10}
	if n, err := w.Write([]byte("hello")); n != 0 || err != errWrite {
		t.Errorf("Write = %d, %v, want 0, %v", n, err, errWrite)
	}
	if w.Unwrap() != http.ResponseWriter(inner) {
		t.Error("Unwrap is not the server's writer")
	}
}

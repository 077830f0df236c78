package resiliencehttp

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"1", time.Second},
		{" 120 ", 2 * time.Minute},
		{"-1", 0},
		{"1.5", 0},
		{"3s", 0},
		{"soon", 0},
		{"99999999999999999999", math.MaxInt64},
		{"9223372036", 9223372036 * time.Second},
		{"9223372037", math.MaxInt64},
		{"18446744073709551616", math.MaxInt64}, // past uint64
		{"Fri, 31 Dec 9999 23:59:59 GMT", math.MaxInt64}, // past 292 years
		{"Sun, 06 Nov 1994 08:49:37 GMT", 0},             // long past
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-90 * time.Second).Format(http.TimeFormat), 0},
		{now.Format(http.TimeFormat), 0},
		{"Monday, 23-Nov-26 12:00:30 GMT", 30 * time.Second}, // RFC 850
		{"Mon Nov 23 12:00:45 2026", 45 * time.Second},       // asctime
	}
	for _, tc := range tests {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "17", "-3", "Sun, 06 Nov 1994 08:49:37 GMT", "x", "18446744073709551616"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := parseRetryAfter(s, now); d < 0 {
			t.Fatalf("parseRetryAfter(%q) = %v, want no negative wait", s, d)
		}
	})
}

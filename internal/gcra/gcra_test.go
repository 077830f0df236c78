package gcra

import (
	"math"
	"testing"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		burst int
		want  Params
		err   error
	}{
		{"ten a second, burst 5", 10, 5, Params{Interval: 1e8, Tau: 5e8, MaxN: 5, Burst: 5}, nil},
		{"rate 0", 0, 3, Params{Interval: 1, Tau: 3, MaxN: 3, Frozen: true, Burst: 3}, nil},
		{"no limit", 1e10, 1, Params{Tau: math.MaxInt64, MaxN: math.MaxInt64, Burst: 1}, nil},
		{"NaN", math.NaN(), 1, Params{}, ErrRate},
		{"infinite", math.Inf(1), 1, Params{}, ErrRate},
		{"negative rate", -1, 1, Params{}, ErrRate},
		{"negative burst", 1, -1, Params{}, ErrBurst},
		{"too slow to refill", 1e-9, 2, Params{}, ErrRefill},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(tc.rate, tc.burst)
			if got != tc.want || err != tc.err {
				t.Errorf("New(%v, %d) = %+v, %v; want %+v, %v", tc.rate, tc.burst, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestTake: a bucket of burst 2 at 1 token a second, taken from at t = 0.
func TestTake(t *testing.T) {
	p, _ := New(1, 2)
	const s = int64(1e9)
	tests := []struct {
		name             string
		tat, t, cost     int64
		maxWait          int64
		wantNext, wantWt int64
		wantOK           bool
	}{
		{"full bucket, one token", 0, 0, s, 0, s, -s, true},
		{"full bucket, the whole burst", 0, 0, 2 * s, 0, 2 * s, 0, true},
		{"empty bucket, no waiting", 2 * s, 0, s, 0, 2 * s, s, false},
		{"empty bucket, waiting allowed", 2 * s, 0, s, s, 3 * s, s, true},
		{"tat in the past counts from now", -5 * s, 0, s, 0, s, -s, true},
		{"too far ahead", MaxAhead + 2*s, 0, s, math.MaxInt64, MaxAhead + 2*s, MaxAhead + s, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, wait, ok := p.Take(tc.tat, tc.t, tc.cost, tc.maxWait)
			if next != tc.wantNext || wait != tc.wantWt || ok != tc.wantOK {
				t.Errorf("Take = %d, %d, %v; want %d, %d, %v", next, wait, ok, tc.wantNext, tc.wantWt, tc.wantOK)
			}
		})
	}
	if got := p.Tokens(0, 0); got != 2 {
		t.Errorf("Tokens of a full bucket = %v, want 2", got)
	}
	if got := p.Tokens(3*s, 0); got != -1 {
		t.Errorf("Tokens of a bucket booked a token ahead = %v, want -1", got)
	}
	if !p.Never(3, 0) || p.Never(2, 0) {
		t.Error("Never: 3 tokens are more than the burst of 2, 2 are not")
	}
	if got := p.Rate(); got != 1 {
		t.Errorf("Rate() = %v, want 1", got)
	}
}

package sat

import (
	"math"
	"math/big"
	"testing"
	"time"
)

// model computes with big integers and clamps to [0, Max].
func model(x *big.Int) time.Duration {
	if x.Sign() < 0 {
		return 0
	}
	if !x.IsInt64() {
		return Max
	}
	return time.Duration(x.Int64())
}

func TestTable(t *testing.T) {
	tests := []struct {
		name      string
		got, want time.Duration
	}{
		{"Add", Add(1, 2), 3},
		{"Add at the edge", Add(Max-1, 1), Max},
		{"Add past", Add(Max, Max), Max},
		{"Mul", Mul(3, 4), 12},
		{"Mul past", Mul(Max/2+1, 2), Max},
		{"Mul by 0", Mul(Max, 0), 0},
		{"Scale", Scale(10, 1.5), 15},
		{"Scale past", Scale(Max, 2), Max},
		{"Scale by +Inf", Scale(1, math.Inf(1)), Max},
		{"Scale 0 by +Inf", Scale(0, math.Inf(1)), 0},
		{"Scale by NaN", Scale(1, math.NaN()), 0},
		{"Shift", Shift(3, 4), 48},
		{"Shift 0", Shift(0, 100), 0},
		{"Shift past", Shift(1, 63), Max},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		d, unit time.Duration
		want    int64
	}{{0, time.Second, 0}, {-5, time.Second, 0}, {1, time.Second, 1}, {time.Second, time.Second, 1},
		{time.Second + 1, time.Second, 2}, {Max, time.Second, 9223372037}, {Max, time.Millisecond, 9223372036855}} {
		if got := CeilDiv(tc.d, tc.unit); got != tc.want {
			t.Errorf("CeilDiv(%d, %v) = %d, want %d", tc.d, tc.unit, got, tc.want)
		}
	}
}

// FuzzArithmetic holds Add, Mul and Shift to exact arithmetic, clamped.
func FuzzArithmetic(f *testing.F) {
	f.Add(int64(1), int64(2), uint8(3))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), uint8(63))
	f.Add(int64(1<<62), int64(2), uint8(1))
	f.Add(int64(0), int64(math.MaxInt64), uint8(200))
	f.Fuzz(func(t *testing.T, a, b int64, k uint8) {
		if a < 0 || b < 0 {
			return // the functions take non-negative operands
		}
		da, db := time.Duration(a), time.Duration(b)
		if got, want := Add(da, db), model(new(big.Int).Add(big.NewInt(a), big.NewInt(b))); got != want {
			t.Fatalf("Add(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := Mul(da, b), model(new(big.Int).Mul(big.NewInt(a), big.NewInt(b))); got != want {
			t.Fatalf("Mul(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := Shift(da, int(k)), model(new(big.Int).Lsh(big.NewInt(a), uint(k))); got != want {
			t.Fatalf("Shift(%d, %d) = %d, want %d", a, k, got, want)
		}
	})
}

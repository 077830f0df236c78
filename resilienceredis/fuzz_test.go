package resilienceredis_test

import (
	"testing"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/stretchr/testify/require"
)

// FuzzScript runs the script on a frozen clock moved by the input, against
// a reference model of the cell rate algorithm in integer microseconds:
// every decision and every hint agree.
func FuzzScript(f *testing.F) {
	f.Add(uint8(10), uint8(2), []byte{0, 1, 0, 1, 0, 1, 100, 1})
	f.Add(uint8(3), uint8(5), []byte{0, 5, 0, 1, 255, 2, 7, 6, 0, 0})
	f.Add(uint8(1), uint8(0), []byte{0, 1, 9, 0})
	f.Fuzz(func(t *testing.T, rate, burst uint8, ops []byte) {
		if rate == 0 || len(ops) > 64 {
			t.Skip()
		}
		l, mr := frozen(t, float64(rate), int(burst))
		interval := int64(1e6/float64(rate) + 0.5)
		tau := interval * int64(burst)
		now := int64(1_700_000_000) * 1e6
		tat := now
		for i := 0; i+1 < len(ops); i += 2 {
			now += int64(ops[i]) * 7919 // up to about 2 s a step
			n := int64(ops[i+1] % 8)
			mr.SetTime(time.UnixMicro(now))
			err := l.AllowN(ctxBG, "k", int(n))

			cost := n * interval
			var wantOK bool
			var wantHint time.Duration
			switch t0 := max(tat, now); {
			case cost > tau:
			case t0+cost-tau-now > 0:
				wantHint = time.Duration(t0+cost-tau-now) * time.Microsecond
			default:
				wantOK = true
				if cost > 0 {
					tat = t0 + cost
				}
			}
			if wantOK {
				require.NoError(t, err, "step %d", i/2)
				continue
			}
			require.ErrorIs(t, err, resilience.ErrRateLimited, "step %d", i/2)
			hint, _ := resilience.RetryAfter(err)
			require.Equal(t, wantHint, hint, "step %d", i/2)
		}
	})
}

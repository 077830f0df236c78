package resilience

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// KubernetesBackoff reproduces, to the nanosecond, the waits of Kubernetes'
// wait.Backoff's Step, one per retry: while Steps last, each wait is
// Duration, which then grows by Factor (0 keeps it) and, once past Cap (if
// Cap > 0), becomes Cap and ends the steps; then every wait is the last
// Duration ({1s, ×2, Steps 3}: 1s, 2s, 4s, 8s, 8s, …). Jitter > 0 adds a
// uniform [0, Jitter·d), which may pass Cap. It never stops: combine it
// with [MaxRetries]. The zero value waits 0. Delay panics, and functions
// that take a Backoff refuse it, if Duration is negative, or Factor or
// Jitter negative, NaN or infinite.
type KubernetesBackoff struct {
	Duration time.Duration
	Factor   float64
	Jitter   float64
	Steps    int
	Cap      time.Duration

	src source
}

// Delay returns the wait Step would return on its n-th call.
func (k KubernetesBackoff) Delay(n int, _ time.Duration) (time.Duration, bool) {
	d := k.base(n)
	if k.Jitter > 0 && k.Jitter <= math.MaxFloat64 { // [d, d + Jitter·d)
		d += k.src.below(uint64(min(sat.Scale(d, k.Jitter), sat.Max-d)))
	} else if k.Jitter != 0 {
		k.fail()
	}
	return d, true
}

// base is the wait before jitter: Duration after n-1 Steps.
func (k *KubernetesBackoff) base(n int) time.Duration {
	if k.Duration < 0 || !(k.Factor >= 0 && k.Factor <= math.MaxFloat64) {
		k.fail()
	}
	if k.Steps < 1 || k.Factor == 0 || k.Duration == 0 || n <= 1 {
		return k.Duration
	}
	return kubeWait(kubeKey{k.Duration, k.Factor, k.Steps, k.Cap}, n)
}

// invalid returns what is wrong with k's fields, or "" when nothing is.
func (k KubernetesBackoff) invalid() string {
	switch {
	case k.Duration < 0:
		return fmt.Sprintf("Duration must not be negative, got %v", k.Duration)
	case !(k.Factor >= 0) || math.IsInf(k.Factor, 0):
		return fmt.Sprintf("Factor must be a finite number >= 0, got %v", k.Factor)
	case !(k.Jitter >= 0) || math.IsInf(k.Jitter, 0):
		return fmt.Sprintf("Jitter must be a finite number >= 0, got %v", k.Jitter)
	}
	return ""
}

func (k *KubernetesBackoff) fail() {
	panic("resilience: KubernetesBackoff.Delay: " + k.invalid())
}

func (k KubernetesBackoff) withRand(r Rand) Backoff { k.src = source{r}; return k }

// kubeStep is one Step of wait.Backoff without its jitter: it takes the
// duration and the steps left, and returns them for the next Step.
func kubeStep(d time.Duration, left int, factor float64, cap time.Duration) (time.Duration, int) {
	if left < 1 {
		return d, left
	}
	left--
	if factor != 0 {
		if x := float64(d) * factor; x >= float64(sat.Max) {
			d = sat.Max
		} else {
			d = time.Duration(x) // truncated, as Kubernetes does
		}
		if cap > 0 && d > cap {
			d, left = cap, 0
		}
	}
	return d, left
}

const kubeTableLen = 64

type kubeKey struct {
	d     time.Duration
	f     float64
	steps int
	cap   time.Duration
}

// kubeTable holds the waits of one KubernetesBackoff's first retries.
type kubeTable struct {
	key     kubeKey
	waits   [kubeTableLen]time.Duration // waits[i]: Duration after i Steps
	settled bool                        // the waits no longer change after the table
	d       time.Duration               // Duration after kubeTableLen Steps
	left    int                         // Steps left then
}

func newKubeTable(key kubeKey) *kubeTable {
	t := &kubeTable{key: key}
	d, left := key.d, key.steps
	for i := range t.waits {
		t.waits[i] = d
		if t.settled {
			continue
		}
		next, nleft := kubeStep(d, left, key.f, key.cap)
		t.settled = nleft < 1 || next == d // the same from here on
		d, left = next, nleft
	}
	t.d, t.left = d, left
	return t
}

// wait returns Duration after n-1 Steps.
func (t *kubeTable) wait(n int) time.Duration {
	k := n - 1
	if k < len(t.waits) {
		return t.waits[k]
	}
	if t.settled {
		return t.d
	}
	return t.key.walk(t.d, t.left, k-len(t.waits))
}

// walk returns the duration after taking up to k more Steps from duration
// d with left steps left, stopping as soon as it no longer changes.
func (key kubeKey) walk(d time.Duration, left, k int) time.Duration {
	for range k {
		next, nleft := kubeStep(d, left, key.f, key.cap)
		if nleft < 1 || next == d {
			return next
		}
		d, left = next, nleft
	}
	return d
}

// kubeTables caches the tables of the KubernetesBackoff values in use, in
// slots chosen by a hash of their parameters. It is empty until the first
// KubernetesBackoff grows, so it costs nothing when the package starts. A
// table is kept once made and never evicted, so values that find both of
// their slots taken walk their steps on each Delay instead, without
// allocating; the cache holds at most len(kubeTables) tables of about
// 600 bytes.
var kubeTables [256]atomic.Pointer[kubeTable]

// kubeWait returns Duration after n-1 Steps for the parameters of key.
func kubeWait(key kubeKey, n int) time.Duration {
	h := (uint64(key.d) ^ bits.RotateLeft64(math.Float64bits(key.f), 17) ^
		bits.RotateLeft64(uint64(key.steps), 40) ^ bits.RotateLeft64(uint64(key.cap), 23)) * 0x9e3779b97f4a7c15
	i := h >> 56
	for probe := range uint64(2) {
		slot := &kubeTables[(i+probe)%uint64(len(kubeTables))]
		t := slot.Load()
		if t == nil {
			if t = newKubeTable(key); !slot.CompareAndSwap(nil, t) {
				t = slot.Load() // taken meanwhile, perhaps by the same key
			}
		}
		if t.key == key {
			return t.wait(n)
		}
	}
	return key.walk(key.d, key.steps, n-1)
}

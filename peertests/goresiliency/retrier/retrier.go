// Package retrier offers the API of github.com/eapache/go-resiliency/retrier
// on top of resilience.Retry, its go-resiliency schedules
// (ConstantSchedule, ExponentialSchedule, LimitedExponentialSchedule) and
// its classification options, so that that library's own tests check ours.
// It is written for this module's tests, not for use. It also offers
// calcSleep, the seam go-resiliency's tests read its waits through.
//
// The Retrier runs without a retry quota (resilience.WithoutBudget), as
// go-resiliency has none.
package retrier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
)

// ConstantBackoff returns n waits of amount.
func ConstantBackoff(n int, amount time.Duration) []time.Duration {
	return slices.Collect(resilience.Delays(resilience.ConstantSchedule(n, amount)))
}

// ExponentialBackoff returns n waits, doubling from initialAmount.
func ExponentialBackoff(n int, initialAmount time.Duration) []time.Duration {
	return slices.Collect(resilience.Delays(resilience.ExponentialSchedule(n, initialAmount)))
}

// LimitedExponentialBackoff returns n waits, doubling from initialAmount
// up to limitAmount.
func LimitedExponentialBackoff(n int, initialAmount, limitAmount time.Duration) []time.Duration {
	return slices.Collect(resilience.Delays(resilience.LimitedExponentialSchedule(n, initialAmount, limitAmount)))
}

// Action is a classifier's verdict.
type Action int

// The verdicts.
const (
	Succeed Action = iota
	Fail
	Retry
)

// Classifier classifies a work's error.
type Classifier interface {
	Classify(error) Action
}

// DefaultClassifier retries every error.
type DefaultClassifier struct{}

// Classify returns Succeed for nil, Retry otherwise.
func (DefaultClassifier) Classify(err error) Action {
	if err == nil {
		return Succeed
	}
	return Retry
}

// WhitelistClassifier retries the errors that match one of its own
// (resilience.WithRetryOn), and no other.
type WhitelistClassifier []error

// Classify returns Succeed for nil, Retry for an error that matches the
// list, Fail otherwise.
func (list WhitelistClassifier) Classify(err error) Action {
	if err == nil {
		return Succeed
	}
	for _, e := range list {
		if errors.Is(err, e) {
			return Retry
		}
	}
	return Fail
}

// BlacklistClassifier retries every error but those that match one of its
// own (resilience.WithAbortOn).
type BlacklistClassifier []error

// Classify returns Succeed for nil, Fail for an error that matches the
// list, Retry otherwise.
func (list BlacklistClassifier) Classify(err error) Action {
	if err == nil {
		return Succeed
	}
	for _, e := range list {
		if errors.Is(err, e) {
			return Fail
		}
	}
	return Retry
}

// Retrier is a resilience.Retry with a schedule of waits.
type Retrier struct {
	mu       sync.Mutex
	backoff  []time.Duration
	class    Classifier
	infinite bool
	surface  bool
	jitter   float64
	policy   resilience.Policy[struct{}]
}

// New returns a Retrier that waits backoff[i] before retry i+1 and retries
// what class says (DefaultClassifier when nil).
func New(backoff []time.Duration, class Classifier) *Retrier {
	if class == nil {
		class = DefaultClassifier{}
	}
	return &Retrier{backoff: backoff, class: class}
}

// WithInfiniteRetry makes the Retrier retry for ever, waiting the last
// wait of its schedule once the others are spent.
func (r *Retrier) WithInfiniteRetry() *Retrier {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.infinite, r.policy = true, nil
	return r
}

// WithSurfaceWorkErrors makes a Retrier whose context ends return the
// work's last error rather than the context's.
func (r *Retrier) WithSurfaceWorkErrors() *Retrier {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.surface = true
	return r
}

// SetJitter spreads every wait by up to ±jit of it (resilience.SymmetricJitter);
// values outside [0, 1] are ignored.
func (r *Retrier) SetJitter(jit float64) {
	if jit < 0 || jit > 1 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jitter, r.policy = jit, nil
}

// retry returns the Retry policy of the Retrier's settings.
func (r *Retrier) retry() (resilience.Policy[struct{}], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.policy == nil {
		attempts := len(r.backoff) + 1
		if r.infinite {
			attempts = 0
		}
		opts := []resilience.RetryOption{resilience.WithAttempts(attempts), resilience.WithBackoff(r.waits()), resilience.WithoutBudget()}
		switch c := r.class.(type) {
		case DefaultClassifier:
		case WhitelistClassifier:
			opts = append(opts, resilience.WithRetryOn(c...))
		case BlacklistClassifier:
			opts = append(opts, resilience.WithAbortOn(c...))
		default:
			opts = append(opts, resilience.WithRetryIf(func(err error) bool { return c.Classify(err) == Retry }))
		}
		r.policy = resilience.Retry[struct{}](opts...)
	}
	return r.policy, r.surface
}

// waits returns the Retrier's waits: its schedule, the last wait held for
// ever after it (which only an infinite Retrier reaches), spread by its
// jitter. r.mu must be held.
func (r *Retrier) waits() resilience.Backoff {
	b := resilience.Schedule(r.backoff...)
	if len(r.backoff) > 0 {
		b = resilience.HoldLast(b)
	}
	if r.jitter > 0 {
		b = resilience.SymmetricJitter(b, r.jitter)
	}
	return b
}

// calcSleep is the seam go-resiliency's tests read the waits through: the
// wait before retry i+1.
//
//lint:ignore U1000 called by go-resiliency's tests, which the runner adds to the package
func (r *Retrier) calcSleep(i int) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, _ := r.waits().Delay(i+1, 0)
	return d
}

// Run runs work until it succeeds or is not to be retried, or the waits
// run out; it returns work's last error.
func (r *Retrier) Run(work func() error) error {
	return r.RunFn(context.Background(), func(context.Context, int) error { return work() })
}

// RunCtx is Run with a context, which work receives.
func (r *Retrier) RunCtx(ctx context.Context, work func(ctx context.Context) error) error {
	return r.RunFn(ctx, func(ctx context.Context, _ int) error { return work(ctx) })
}

// RunFn is RunCtx whose work also receives the number of retries made.
// When ctx ends during a wait, it returns ctx's error, or the work's last
// error WithSurfaceWorkErrors.
func (r *Retrier) RunFn(ctx context.Context, work func(ctx context.Context, retries int) error) error {
	p, surface := r.retry()
	retries := 0
	var last error
	_, err := p.Execute(ctx, func(ctx context.Context) (struct{}, error) {
		last = work(ctx, retries)
		retries++
		return struct{}{}, last
	})
	if err == nil {
		return nil
	}
	var re *resilience.RetryError
	if errors.As(err, &re) {
		if ctx.Err() != nil && re.Reason == ctx.Err() && !surface {
			return ctx.Err()
		}
		return last
	}
	return err
}

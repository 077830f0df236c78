package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faf87a20/resilience/internal/sat"
)

// AdaptiveThrottler is client-side throttling as the Google SRE book
// describes it: a client that sees the service refuse much of what it sends
// over a sliding window refuses a share of its calls itself, before sending
// them, with a *[ShedError] matching [ErrThrottled]. Its observer events
// have component "adaptive-throttler"; docs/load-control.md gives the rule.
// It is safe for concurrent use; its zero value is not usable: make one with
// [NewAdaptiveThrottler].
type AdaptiveThrottler struct {
	k        float64
	maxRatio float64
	width    time.Duration // of a part of the window
	judge    func(error) Outcome
	rand     source
	common
	refusalCount
	origin time.Time

	parts              [throttleParts]throttlePart
	cur                atomic.Int64 // the part calls count in
	mask               atomic.Int64 // the clock is read when a part's count of requests & mask is 0
	lastRead           atomic.Int64 // when it was last read so, on the time line
	partEnd            atomic.Int64 // when it ends, on the time line
	oldReq, oldAccepts atomic.Int64 // the totals of the other parts
	mu                 sync.Mutex   // held by the call that slides the window
	done               func(error)  // Enter's, made once
}

const throttleParts = 10

type throttlePart struct{ requests, accepts atomic.Int64 }

// NewAdaptiveThrottler returns a client-side throttle configured by opts.
// It panics if an option is invalid.
func NewAdaptiveThrottler(opts ...AdaptiveThrottlerOption) *AdaptiveThrottler {
	cfg := throttlerConfig{k: 2, maxRatio: 1, window: 10 * time.Second, judge: throttleOutcome}
	for _, o := range opts {
		checkOption("NewAdaptiveThrottler", o)
		o.applyAdaptiveThrottler(&cfg)
	}
	cfg.route = newRoute(KindAdaptiveThrottler, &cfg.common)
	t := &AdaptiveThrottler{k: cfg.k, maxRatio: cfg.maxRatio, width: cfg.window / throttleParts, judge: cfg.judge, rand: source{cfg.common.rand}, common: cfg.common}
	t.width = max(t.width, 1)
	t.origin = t.now()
	t.partEnd.Store(int64(t.width))
	t.done = func(err error) { t.exit(enterCtx, 0, err, true) }
	return t
}

// AdaptiveThrottlerOption configures [NewAdaptiveThrottler]; an [Option] is one too.
type AdaptiveThrottlerOption interface {
	applyAdaptiveThrottler(*throttlerConfig)
}

type throttlerConfig struct {
	k        float64
	maxRatio float64
	window   time.Duration
	judge    func(error) Outcome
	common
}

type throttlerOptionFunc func(*throttlerConfig)

func (f throttlerOptionFunc) applyAdaptiveThrottler(c *throttlerConfig) { f(c) }

func (o Option) applyAdaptiveThrottler(c *throttlerConfig) { o.set(&c.common) }

// WithThrottleK sets K, how many requests per accepted one the throttle
// lets through before it refuses some. The default is 2. It panics if k is
// NaN, infinite or less than 1.
func WithThrottleK(k float64) AdaptiveThrottlerOption {
	if !(k >= 1) || math.IsInf(k, 1) {
		panic(fmt.Sprintf("resilience: WithThrottleK: K must be at least 1 and finite, got %v", k))
	}
	return throttlerOptionFunc(func(c *throttlerConfig) { c.k = k })
}

// WithThrottleMaxRatio caps at r the probability with which the throttle
// refuses a call, so that it always sends a share 1 − r of its calls. The
// default, 1, is no cap. It panics if r is NaN or outside (0, 1].
func WithThrottleMaxRatio(r float64) AdaptiveThrottlerOption {
	if !(r > 0 && r <= 1) {
		panic(fmt.Sprintf("resilience: WithThrottleMaxRatio: ratio must be in (0, 1], got %v", r))
	}
	return throttlerOptionFunc(func(c *throttlerConfig) { c.maxRatio = r })
}

// WithThrottleWindow sets the window over which requests and accepts are
// counted. The default is 10s. It panics if d is less than 10ns.
func WithThrottleWindow(d time.Duration) AdaptiveThrottlerOption {
	if d < throttleParts {
		panic(fmt.Sprintf("resilience: WithThrottleWindow: window must be at least 10ns, got %v", d))
	}
	return throttlerOptionFunc(func(c *throttlerConfig) { c.window = d })
}

// WithThrottleClassifier sets how the throttle counts the error of a call
// it let through (f never sees nil: no error is a success). Every call
// asked of the throttle is a request, those it refuses itself included;
// [OutcomeSuccess] counts the call as accepted by the service,
// [OutcomeFailure] as not accepted (a request without an accept), and
// [OutcomeIgnored] takes back its request, so that it counts in neither.
// Any other value counts as a failure. A call its caller cancelled (an
// error matching context.Canceled while the call's context is cancelled,
// or any such error given to [AdaptiveThrottler.Enter]'s done) is ignored
// before f is asked. By default every error is a success but a timeout, a
// guard's refusal or an error with a retry hint ([RetryAfter]), which are
// failures. f is called on the caller's goroutine, concurrently when calls
// are; a panic in f counts as a failure, then goes on up through the call.
// It panics if f is nil.
func WithThrottleClassifier(f func(err error) Outcome) AdaptiveThrottlerOption {
	checkClassifier("WithThrottleClassifier", f)
	return throttlerOptionFunc(func(c *throttlerConfig) { c.judge = f })
}

// isAccepted is the default predicate of what the service accepted: all
// but a guard's refusal (ErrRefused), an overload (context.DeadlineExceeded)
// or an error that says when to try again. An error merely able to carry a
// hint (an HTTP 500's) is an answer.
func isAccepted(err error) bool {
	if err == nil {
		return true
	}
	if _, ok := RetryAfter(err); ok {
		return false
	}
	return !errors.Is(err, ErrRefused) && !errors.Is(err, context.DeadlineExceeded)
}

// throttleOutcome is the throttle's default classifier: what isAccepted
// takes for accepted is a success, the rest a failure.
func throttleOutcome(err error) Outcome {
	if isAccepted(err) {
		return OutcomeSuccess
	}
	return OutcomeFailure
}

// Enter admits the call or refuses it, as described on
// [AdaptiveThrottler]. The done function it returns must be called exactly
// once with the call's outcome, an error matching context.Canceled if its
// caller cancelled it.
func (t *AdaptiveThrottler) Enter(ctx context.Context) (done func(err error), err error) {
	if _, err := t.enter(ctx, true); err != nil {
		return nil, err
	}
	return t.done, nil
}

// Ratio returns the probability with which the throttle refuses a call
// now.
func (t *AdaptiveThrottler) Ratio() float64 {
	t.advance(int64(t.since(t.origin)))
	return t.ratio(t.totals())
}

func (t *AdaptiveThrottler) ratio(req, acc int64) float64 {
	if req < throttleMinRequests {
		return 0
	}
	return min(t.maxRatio, max(0, (float64(req)-t.k*float64(acc))/float64(req+1)))
}

// throttleMinRequests is the number of requests in the window below which
// the throttle refuses nothing: the formula alone would refuse a new
// client's first call with a probability of one half.
const throttleMinRequests = 20

func (t *AdaptiveThrottler) part() *throttlePart { return &t.parts[t.cur.Load()] }

// totals returns the requests and accepts in the window.
func (t *AdaptiveThrottler) totals() (req, acc int64) {
	p := t.part()
	return t.oldReq.Load() + p.requests.Load(), t.oldAccepts.Load() + p.accepts.Load()
}

// enter counts a request and refuses it with the probability of the
// window's counts. A busy throttle reads the clock for one request in
// every mask+1 (about 16 times a part) and whenever it might refuse one,
// so that the window slides on time where it matters: a window that slid
// late holds an older part a little longer.
func (t *AdaptiveThrottler) enter(ctx context.Context, _ bool) (uint64, error) {
	if t.part().requests.Add(1)&t.mask.Load() == 0 {
		now := int64(t.since(t.origin))
		t.tune(now)
		t.advance(now)
	}
	req, acc := t.totals()
	if req < throttleMinRequests || float64(req) <= t.k*float64(acc) {
		return 0, nil
	}
	now := int64(t.since(t.origin))
	if t.advance(now) {
		req, acc = t.totals()
	}
	if r := t.ratio(req, acc); r > 0 && float64(t.rand.uint64()>>11)/(1<<53) < r {
		err := &ShedError{sentinel: ErrThrottled, priority: PriorityFrom(ctx), after: max(time.Duration(t.partEnd.Load()-now), time.Millisecond)}
		t.refusedN.Add(1)
		if t.reports() {
			t.observe(ctx, Event{Kind: EventRefused, Component: KindAdaptiveThrottler, Err: err, Wait: err.after})
		}
		return 0, err
	}
	return 0, nil
}

// tune doubles the number of requests between readings of the clock while
// they come faster than 16 a part, and starts again from every request
// when they come slower than 8: a throttle shared by many callers reads
// the clock rarely, an idle one at every request.
func (t *AdaptiveThrottler) tune(now int64) {
	gap, every := now-t.lastRead.Swap(now), int64(t.width)/16
	switch m := t.mask.Load(); {
	case gap < every && m < 1<<30:
		t.mask.Store(2*m + 1)
	case gap > 2*every:
		t.mask.Store(0)
	}
}

// advance slides the window if now is past the current part, and reports
// whether it did.
func (t *AdaptiveThrottler) advance(now int64) bool {
	if now < t.partEnd.Load() {
		return false
	}
	t.slide(now)
	return true
}

// reportsOutcomes is false: a throttler reports no EventCallEnded.
func (t *AdaptiveThrottler) reportsOutcomes() bool { return false }

// exit counts the outcome of a call of context ctx (for enterCtx, see
// there). An ignored call takes back the request enter counted. A panic of
// the classifier goes on once the outcome is counted.
func (t *AdaptiveThrottler) exit(ctx context.Context, _ uint64, err error, _ bool) {
	p := t.part()
	switch {
	case err == nil:
		p.accepts.Add(1)
		return
	case errors.Is(err, context.Canceled) && (ctx == enterCtx || ctx.Err() == context.Canceled):
		p.requests.Add(-1)
		return
	}
	o, panicked := classify(t.judge, err)
	switch o {
	case OutcomeSuccess:
		p.accepts.Add(1)
	case OutcomeIgnored:
		p.requests.Add(-1)
	}
	if panicked != nil {
		panic(panicked)
	}
}

// slide moves the window on to the part now falls in, dropping the parts
// that ended, unless another call is doing so. A count made meanwhile in a
// part being dropped may be lost: the throttle is a statistic.
func (t *AdaptiveThrottler) slide(now int64) {
	if !t.mu.TryLock() {
		return
	}
	defer t.mu.Unlock()
	end := t.partEnd.Load()
	if now < end {
		return
	}
	steps := (now-end)/int64(t.width) + 1
	cur := t.cur.Load()
	for i := range min(steps, throttleParts) {
		p := &t.parts[(cur+1+i)%throttleParts]
		p.requests.Store(0)
		p.accepts.Store(0)
	}
	cur = (cur + steps) % throttleParts
	var req, acc int64
	for i := range throttleParts {
		if int64(i) != cur {
			req += max(t.parts[i].requests.Load(), 0)
			acc += t.parts[i].accepts.Load()
		}
	}
	t.oldReq.Store(req)
	t.oldAccepts.Store(acc)
	t.cur.Store(cur)
	// Saturated: a part that would end past the end of time never ends.
	t.partEnd.Store(int64(sat.Add(time.Duration(end), sat.Mul(t.width, steps))))
}

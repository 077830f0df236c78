// Command sim shows, in virtual time, what a retry policy does to a
// struggling server. It runs three scenarios: contention (N clients race to
// land one optimistic-concurrency write each on one shared row, under six
// backoff strategies), outage (M clients send at a steady rate to a server
// that fails every call for a while, under six client policies) and
// defaults (every library's default retry policy in that outage, under
// failures at random and in a brownout). It prints tables to stdout and,
// with -charts, draws them.
//
// Everything is a discrete-event simulation: nothing sleeps, and a run is a
// pure function of -seed and the other flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options holds every flag.
type options struct {
	seed     uint64
	scenario string
	charts   string
	format   string
	workers  int

	netMean, netSD time.Duration

	// contention
	nMin, nMax, nStep int
	runs              int
	base, cap         time.Duration
	maxCalls          int

	// outage
	clients      int
	rate         float64
	duration     time.Duration
	outageStart  time.Duration
	outage       time.Duration
	refuse       float64
	capacity     float64
	queue        int
	timeout      time.Duration
	transient    float64
	bucket       time.Duration
	tolerance    float64
	attempts     int
	fixedWait    time.Duration
	retryBase    time.Duration
	retryCap     time.Duration
	budgetRatio  float64
	budgetFloor  int
	budgetCap    int
	breakerFails int
	breakerCool  time.Duration

	// defaults
	brownout       time.Duration
	brownoutRefuse float64
	roomCapacity   float64
}

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: sim [flags]

sim simulates, in virtual time, what a retry policy does to a struggling
server, and prints the results as tables (and, with -charts, as charts).

  contention  N clients race to land one optimistic-concurrency write each on
              one shared row; a write fails when another landed since the
              client's read. Strategies: none, exponential, full jitter,
              equal jitter, decorrelated jitter, Polly's smooth jitter.
  outage      M clients send at a steady rate; the server fails every call
              for a while, then recovers. Policies: plain retries, exponential
              backoff with full jitter, that plus a retry budget, that plus a
              circuit breaker, and the library's Retry() with its default
              retry quota and with gRPC's throttle.
  defaults    every library's default retry policy in the outage, under
              independent failures and in a brownout.

Runs are deterministic for a -seed. Flags:
`)
		fs.PrintDefaults()
	}
	fs.Uint64Var(&o.seed, "seed", 1, "random seed; the same seed and flags give the same figures")
	fs.StringVar(&o.scenario, "scenario", "all", "which scenario to run: all, contention, outage or defaults")
	fs.StringVar(&o.charts, "charts", "", "directory to write the charts to (none when empty)")
	fs.StringVar(&o.format, "format", "png", "chart format: png or svg")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "runs simulated at once (results do not depend on it)")
	fs.DurationVar(&o.netMean, "net-mean", 10*time.Millisecond, "mean one-way network delay (both scenarios)")
	fs.DurationVar(&o.netSD, "net-sd", 2*time.Millisecond, "standard deviation of the network delay (normal, cut at 0)")

	fs.IntVar(&o.nMin, "n-min", 10, "contention: fewest clients")
	fs.IntVar(&o.nMax, "n-max", 200, "contention: most clients")
	fs.IntVar(&o.nStep, "n-step", 10, "contention: step between client counts")
	fs.IntVar(&o.runs, "runs", 50, "contention: runs averaged per strategy and client count")
	fs.DurationVar(&o.base, "base", 5*time.Millisecond, "contention: backoff base (first wait)")
	fs.DurationVar(&o.cap, "cap", 2*time.Second, "contention: backoff cap (longest wait)")
	fs.IntVar(&o.maxCalls, "max-calls", 1_000_000, "contention: a run stops after this many writes (a safety net)")

	fs.IntVar(&o.clients, "clients", 100, "outage: clients (M)")
	fs.Float64Var(&o.rate, "rate", 10, "outage: requests per second sent by each client")
	fs.DurationVar(&o.duration, "duration", 40*time.Second, "outage: length of a run")
	fs.DurationVar(&o.outageStart, "outage-start", 5*time.Second, "outage: when the server starts failing")
	fs.DurationVar(&o.outage, "outage", 10*time.Second, "outage: how long the server fails every call (T)")
	fs.Float64Var(&o.refuse, "refuse", 1, "outage: share of the calls the server refuses during the outage (below 1: a brownout)")
	fs.Float64Var(&o.capacity, "capacity", 1200, "outage: calls per second the server can serve")
	fs.IntVar(&o.queue, "queue", 1000, "outage: calls the server lets wait before refusing more (0: no limit)")
	fs.DurationVar(&o.timeout, "timeout", 100*time.Millisecond, "outage: a client's timeout on one attempt (0: none)")
	fs.Float64Var(&o.transient, "transient", 0, "outage: chance that a call the server serves fails anyway, outage or not (0.01: 1%)")
	fs.DurationVar(&o.bucket, "bucket", 100*time.Millisecond, "outage: width of one point of the load series")
	fs.Float64Var(&o.tolerance, "tolerance", 0.1, "outage: drained once the load stays within this fraction of the offered load and no attempt fails")
	fs.IntVar(&o.attempts, "attempts", 3, "outage: attempts per request, the first included (every policy)")
	fs.DurationVar(&o.fixedWait, "fixed-wait", 100*time.Millisecond, "outage: wait between plain retries")
	fs.DurationVar(&o.retryBase, "retry-base", 100*time.Millisecond, "outage: exponential backoff's first wait")
	fs.DurationVar(&o.retryCap, "retry-cap", 10*time.Second, "outage: exponential backoff's cap, also the cap on a breaker's retry-after hint")
	fs.Float64Var(&o.budgetRatio, "budget-ratio", 0.1, "outage: retries a client's budget allows per request")
	fs.IntVar(&o.budgetFloor, "budget-floor", 1, "outage: retries per second a client's budget always allows")
	fs.IntVar(&o.budgetCap, "budget-capacity", 100, "outage: retries a client's budget can save up")
	fs.IntVar(&o.breakerFails, "breaker-failures", 5, "outage: consecutive failures that open a client's breaker")
	fs.DurationVar(&o.breakerCool, "breaker-cooldown", 2*time.Second, "outage: how long a breaker stays open before a probe")
	fs.DurationVar(&o.brownout, "brownout", 30*time.Second, "defaults: how long the brownout lasts, from -outage-start")
	fs.Float64Var(&o.brownoutRefuse, "brownout-refuse", 0.3, "defaults: share of the calls the server refuses during the brownout")
	fs.Float64Var(&o.roomCapacity, "room-capacity", 2000, "defaults: server capacity (calls/s) for 20% and 30% independent failures, room for every retry")
	return fs
}

// validate checks the flags' values and names every bad one, in the order
// of the checks below.
func (o *options) validate() error {
	var errs []error
	for _, checks := range [][]flagCheck{o.commonChecks(), o.contentionChecks(), o.outageChecks(), o.policyChecks(), o.defaultsChecks(), o.sizeChecks()} {
		for _, c := range checks {
			if c.bad {
				errs = append(errs, fmt.Errorf("-%s: "+c.format, c.flag, c.value))
			}
		}
	}
	return errors.Join(errs...)
}

// flagCheck is one rule on a flag: when bad holds, the flag's message is
// format applied to value.
type flagCheck struct {
	bad    bool
	flag   string
	format string
	value  any
}

// commonChecks checks the flags every scenario reads.
func (o *options) commonChecks() []flagCheck {
	return []flagCheck{
		{o.scenario != "all" && o.scenario != "contention" && o.scenario != "outage" && o.scenario != "defaults", "scenario", "must be all, contention, outage or defaults, got %q", o.scenario},
		{o.format != "png" && o.format != "svg", "format", "must be png or svg, got %q", o.format},
		{o.workers < 1, "workers", "must be at least 1, got %d", o.workers},
		{o.netMean < 0, "net-mean", "must not be negative, got %v", o.netMean},
		{o.netSD < 0, "net-sd", "must not be negative, got %v", o.netSD},
	}
}

// contentionChecks checks the contention scenario's flags.
func (o *options) contentionChecks() []flagCheck {
	return []flagCheck{
		{o.nMin < 1, "n-min", "must be at least 1, got %d", o.nMin},
		{o.nMax < o.nMin, "n-max", "must be at least -n-min, got %d", o.nMax},
		{o.nStep < 1, "n-step", "must be at least 1, got %d", o.nStep},
		{o.runs < 1, "runs", "must be at least 1, got %d", o.runs},
		{o.base <= 0, "base", "must be positive, got %v", o.base},
		{o.cap < o.base, "cap", "must be at least -base, got %v", o.cap},
		{o.maxCalls < 1, "max-calls", "must be at least 1, got %d", o.maxCalls},
	}
}

// outageChecks checks the outage's clients and server.
func (o *options) outageChecks() []flagCheck {
	return []flagCheck{
		{o.clients < 1, "clients", "must be at least 1, got %d", o.clients},
		{!(o.rate > 0 && o.rate <= 1e6), "rate", "must be in (0, 1e6], got %v", o.rate},
		{o.duration <= 0 || o.duration > 24*time.Hour, "duration", "must be in (0, 24h], got %v", o.duration},
		{o.outageStart < 0 || o.outageStart >= o.duration, "outage-start", "must be in [0, -duration), got %v", o.outageStart},
		{o.outage < 0 || o.outageStart+o.outage >= o.duration, "outage", "must not be negative and must end before -duration, got %v", o.outage},
		{!(o.refuse > 0 && o.refuse <= 1), "refuse", "must be in (0, 1], got %v", o.refuse},
		{!(o.capacity > 0 && o.capacity <= 1e9), "capacity", "must be in (0, 1e9], got %v", o.capacity},
		{o.queue < 0, "queue", "must not be negative, got %d", o.queue},
		{o.timeout < 0, "timeout", "must not be negative, got %v", o.timeout},
		{!(o.transient >= 0 && o.transient <= 1), "transient", "must be in [0, 1], got %v", o.transient},
		{o.bucket <= 0 || o.bucket > o.duration, "bucket", "must be in (0, -duration], got %v", o.bucket},
		{!(o.tolerance >= 0), "tolerance", "must not be negative, got %v", o.tolerance},
	}
}

// policyChecks checks the outage's retry policies.
func (o *options) policyChecks() []flagCheck {
	return []flagCheck{
		{o.attempts < 1, "attempts", "must be at least 1, got %d", o.attempts},
		{o.fixedWait < 0, "fixed-wait", "must not be negative, got %v", o.fixedWait},
		{o.retryBase <= 0, "retry-base", "must be positive, got %v", o.retryBase},
		{o.retryCap < o.retryBase, "retry-cap", "must be at least -retry-base, got %v", o.retryCap},
		{!(o.budgetRatio >= 0 && o.budgetRatio <= 1000), "budget-ratio", "must be in [0, 1000], got %v", o.budgetRatio},
		{o.budgetFloor < 0, "budget-floor", "must not be negative, got %d", o.budgetFloor},
		{o.budgetCap < 0 || o.budgetCap > 1e12, "budget-capacity", "must be in [0, 1e12], got %d", o.budgetCap},
		{o.breakerFails < 1, "breaker-failures", "must be at least 1, got %d", o.breakerFails},
		{o.breakerCool <= 0, "breaker-cooldown", "must be positive, got %v", o.breakerCool},
	}
}

// defaultsChecks checks the defaults scenario's flags; -brownout only when
// that scenario runs.
func (o *options) defaultsChecks() []flagCheck {
	defaults := o.scenario == "all" || o.scenario == "defaults"
	return []flagCheck{
		{defaults && (o.brownout <= 0 || o.outageStart+o.brownout >= o.duration), "brownout", "must be positive and must end before -duration, got %v", o.brownout},
		{!(o.brownoutRefuse > 0 && o.brownoutRefuse <= 1), "brownout-refuse", "must be in (0, 1], got %v", o.brownoutRefuse},
		{!(o.roomCapacity > 0 && o.roomCapacity <= 1e9), "room-capacity", "must be in (0, 1e9], got %v", o.roomCapacity},
	}
}

// sizeChecks keeps a run of the outage and defaults scenarios quick and
// its memory bounded.
func (o *options) sizeChecks() []flagCheck {
	outage := o.scenario != "contention"
	events := float64(o.clients) * o.rate * o.duration.Seconds() * float64(o.attempts)
	return []flagCheck{
		{outage && events > 5e7, "rate", "with -clients, -duration and -attempts this is %.0f calls, more than 5e7", events},
		{outage && o.bucket > 0 && o.duration/o.bucket > 1_000_000, "bucket", "gives more than 1e6 points, got %v", o.bucket},
	}
}

// run is the whole command, with its exit status: 0 on success, 2 for a bad
// flag, 1 when writing the output fails.
func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlagSet(&o, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sim: unexpected argument %q\nRun 'sim -h' for the flags.\n", fs.Arg(0))
		return 2
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "sim: %v\nRun 'sim -h' for the flags.\n", err)
		return 2
	}
	if err := simulate(&o, stdout); err != nil {
		fmt.Fprintf(stderr, "sim: %v\n", err)
		return 1
	}
	return 0
}

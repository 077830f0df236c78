package resiliencehttp

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/faf87a20/resilience"
)

//go:embed status.html
var statusHTML string

// statusTemplate renders the page. html/template escapes every name, key
// and error text for where it lands: names come from users.
var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{"breakable": breakable}).Parse(statusHTML))

// breakable splits name after each run of separators (. - _ / : @), where
// the page lets it wrap: "payments-api.eu" is "payments-", "api.", "eu".
func breakable(name string) []string {
	var parts []string
	for name != "" {
		i := strings.IndexAny(name, ".-_/:@")
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(name) && strings.IndexByte(".-_/:@", name[j]) >= 0 {
			j++
		}
		parts, name = append(parts, name[:j]), name[j:]
	}
	if name != "" {
		parts = append(parts, name)
	}
	return parts
}

// statusPage is what the template shows: the rows shown, and the counts
// of all guards and of those not shown.
type statusPage struct {
	Guards        []statusRow
	All, Omitted  healthCounts
	MaxGuards     int
	Updated       string
	Actions       bool
	RefreshMillis int64
	ReloadSeconds int // without scripts
	Nonce         string
}

// statusRow is a guard's row: its snapshot, its counts in words, and
// whether it has actions (a breaker whose name is whole).
type statusRow struct {
	resilience.Snapshot
	Details string
	Actions bool
}

// maxStatusRefresh is the longest pace of the page: a browser's timer
// takes a delay of at most 2^31−1 ms (24.8 days) and wraps a longer one,
// modulo 2^32, into a short or negative delay that fires at once.
const maxStatusRefresh = math.MaxInt32 * time.Millisecond

func newStatusPage(all []resilience.Snapshot, actions bool, refresh time.Duration, nonce string) statusPage {
	p := statusPage{
		MaxGuards:     maxGuardsShown,
		Updated:       time.Now().Format("15:04:05"),
		Actions:       actions,
		RefreshMillis: min(refresh, maxStatusRefresh).Milliseconds(),
		ReloadSeconds: max(5, int(min(refresh, maxStatusRefresh)/time.Second)),
		Nonce:         nonce,
	}
	for _, s := range all {
		p.All.add(s.Health)
	}
	snaps, omitted := shown(all)
	p.Guards, p.Omitted = make([]statusRow, len(snaps)), omitted
	for i, s := range snaps {
		whole := bound(&s)
		p.Guards[i] = statusRow{Snapshot: s, Details: details(s), Actions: actions && whole && s.Kind == resilience.KindBreaker}
		if s.Shedding {
			p.Guards[i].Details += "; refused calls, the last at " + s.LastRefused.Format("15:04:05")
		}
	}
	return p
}

// details says a guard's counts in a line.
func details(s resilience.Snapshot) string {
	switch {
	case s.Err != "":
		return s.Err
	case s.Breaker != nil:
		return breakerDetails(s.Breaker)
	case s.Bulkhead != nil:
		b := s.Bulkhead
		return fmt.Sprintf("%d of %d in flight, %d waiting", b.InFlight, b.Limit, b.Waiting)
	case s.RateLimiter != nil:
		l := s.RateLimiter
		return fmt.Sprintf("%s of %d tokens, %s a second", number(l.Tokens), l.Burst, number(l.Rate))
	case s.KeyedRateLimiter != nil:
		k := s.KeyedRateLimiter
		return withTopRefused(fmt.Sprintf("%d of %d keys, each %s tokens a second, burst %d", k.Keys, k.MaxKeys, number(k.Rate), k.Burst), k.TopRefused)
	case s.Keyed != nil:
		k := s.Keyed
		return withTopRefused(fmt.Sprintf("%d of %d keys, %d kept for their state", k.Keys, k.MaxKeys, k.Busy), k.TopRefused)
	case s.RetryBudget != nil:
		b := s.RetryBudget
		return fmt.Sprintf("%s: %s of %s, %s available", b.Form, number(b.Tokens), number(b.Capacity), plural(b.Available, "retry"))
	case s.AdaptiveLimiter != nil:
		l := s.AdaptiveLimiter
		return fmt.Sprintf("limit %d, %d in flight, %d waiting", l.Limit, l.InFlight, l.Waiting)
	case s.AdaptiveThrottler != nil:
		return fmt.Sprintf("refuses %s%% of calls", number(100*s.AdaptiveThrottler.Ratio))
	case s.Hedge != nil:
		h := s.Hedge
		how := "from recent latencies"
		if h.Fixed {
			how = "fixed"
		}
		return fmt.Sprintf("hedges after %v (%s), %s available", h.Delay, how, plural(h.BudgetAvailable, "hedge"))
	}
	return ""
}

func breakerDetails(b *resilience.BreakerSnapshot) string {
	var parts []string
	if b.WindowCalls > 0 {
		parts = append(parts, fmt.Sprintf("failure rate %s%% (%d of %d)", number(100*b.FailureRate), b.WindowFailures, b.WindowCalls))
	}
	parts = append(parts, plural(b.ConsecutiveFailures, "consecutive failure"))
	switch {
	case b.Isolated:
		parts = append(parts, "isolated until reset")
	case b.HalfOpenIn > 0:
		parts = append(parts, "half-open in "+roughly(b.HalfOpenIn))
	case b.Probes > 0:
		parts = append(parts, plural(b.Probes, "probe")+" in flight")
	}
	return strings.Join(append(parts, plural(b.Trips, "trip")), ", ")
}

// withTopRefused adds a keyed guard's most refused keys to out.
func withTopRefused(out string, refused []resilience.KeyRefusal) string {
	if len(refused) == 0 {
		return out
	}
	top := make([]string, len(refused))
	for i, kr := range refused {
		top[i] = kr.Key + " (" + strconv.FormatInt(kr.Refusals, 10) + ")"
	}
	return out + "; most refused: " + strings.Join(top, ", ")
}

// roughly rounds d for a reader: to the second from a second up.
func roughly(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// number writes f with at most two decimals, and a rate past any count
// as "unlimited".
func number(f float64) string {
	if f >= 1e15 {
		return "unlimited"
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// plural counts n of what: "1 trip", "2 trips", "3 retries".
func plural(n int, what string) string {
	switch {
	case n == 1:
		return "1 " + what
	case strings.HasSuffix(what, "y"):
		return strconv.Itoa(n) + " " + what[:len(what)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + what + "s"
}

package resiliencehttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// fetchPage fetches url with the headers given as name, value pairs, and
// returns the response with its body read.
func fetchPage(t *testing.T, method, url string, body io.Reader, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// statusServer serves reg's status page on 127.0.0.1 under
// /debug/resilience/, as a program mounts it.
func statusServer(t *testing.T, reg *resilience.Registry, opts ...resiliencehttp.StatusOption) string {
	mux := http.NewServeMux()
	mux.Handle("/debug/resilience/", http.StripPrefix("/debug/resilience", resiliencehttp.StatusHandler(reg, opts...)))
	return newServer(t, mux.ServeHTTP).URL + "/debug/resilience/"
}

func TestStatusHandlerEscapesNamesAndErrors(t *testing.T) {
	const name = `<script>alert("name")</script><img src=x onerror=alert(1)>'&`
	reg := resilience.NewRegistry()
	require.NoError(t, reg.Register(name, resilience.NewBreaker()))
	reg.Observe(context.Background(), resilience.Event{
		Kind: resilience.EventRefused, Component: "breaker", Name: name,
		Err: errors.New(`<script>alert("error")</script>`),
	})
	for _, actions := range []bool{false, true} {
		t.Run(fmt.Sprint("actions=", actions), func(t *testing.T) {
			var opts []resiliencehttp.StatusOption
			if actions {
				opts = append(opts, resiliencehttp.WithStatusActions())
			}
			resp, body := fetchPage(t, "GET", statusServer(t, reg, opts...), nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'nonce-")
			for _, raw := range []string{`<script>alert(`, `<img`, `onerror=alert(1)>`} {
				assert.NotContains(t, body, raw)
			}
			assert.Contains(t, body, `&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&#39;&amp;`)
			assert.Contains(t, body, `&lt;script&gt;alert(&#34;error&#34;)&lt;/script&gt;`)
			assert.Equal(t, 1, strings.Count(body, "<script"), "the page's own script alone")
		})
	}
}

func TestStatusHandlerShowsEveryKind(t *testing.T) {
	reg := resilience.NewRegistry()
	open := resilience.NewBreaker(resilience.WithClock(clock.NewMock()))
	open.Trip()
	guards := map[string]resilience.Inspector{
		"a-breaker":   resilience.NewBreaker(),
		"b-open":      open,
		"c-bulkhead":  resilience.NewBulkhead(4),
		"d-limiter":   resilience.NewRateLimiter(10, 5),
		"e-keyed":     resilience.NewKeyedRateLimiter[string](1, 1),
		"f-quota":     resilience.NewRetryQuota(40),
		"g-adaptive":  resilience.NewAdaptiveLimiter(),
		"h-throttler": resilience.NewAdaptiveThrottler(),
		"i-hedge":     resilience.Hedge[int](resilience.WithHedgeDelay(5 * time.Millisecond)).(resilience.Inspector),
	}
	for name, g := range guards {
		require.NoError(t, reg.Register(name, g))
	}
	_, body := fetchPage(t, "GET", statusServer(t, reg), nil)
	for _, want := range []string{
		`<tr class="ok" data-name="a-breaker">`, `<span class="state ok">closed</span>`,
		`<tr class="critical" data-name="b-open">`, `<span class="state critical">open</span>`, "half-open in 30s",
		"0 of 4 in flight, 0 waiting", "5 of 5 tokens, 10 a second", "0 of 1048576 keys",
		"quota: 40 of 40, 8 retries available", "limit 20, 0 in flight, 0 waiting",
		"refuses 0% of calls", "hedges after 5ms (fixed), 1 hedge available",
		"9 registered: 8 ok, 0 warning, 1 critical",
		`<noscript><meta http-equiv="refresh" content="5"></noscript>`,
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "<form", "read-only by default")
}

// TestStatusHandlerRefresh: the page fetches new snapshots every second by
// default, or as often as WithStatusRefresh says, from 100ms up; without
// scripts it reloads itself at that pace, every 5 s at the most often, and
// every 2^31−1 ms (24.8 days) at the least.
func TestStatusHandlerRefresh(t *testing.T) {
	tests := []struct {
		name          string
		opts          []resiliencehttp.StatusOption
		millis, every string
	}{
		{"default", nil, "1000", "5"},
		{"the least", []resiliencehttp.StatusOption{resiliencehttp.WithStatusRefresh(100 * time.Millisecond)}, "100", "5"},
		{"ten seconds", []resiliencehttp.StatusOption{resiliencehttp.WithStatusRefresh(10 * time.Second)}, "10000", "10"},
		// A browser's timer takes at most 2^31−1 ms and wraps a longer delay
		// (200 years would refresh at once, again and again): the page's
		// pace saturates there instead.
		{"24.8 days", []resiliencehttp.StatusOption{resiliencehttp.WithStatusRefresh(math.MaxInt32 * time.Millisecond)}, "2147483647", "2147483"},
		{"200 years", []resiliencehttp.StatusOption{resiliencehttp.WithStatusRefresh(200 * 365 * 24 * time.Hour)}, "2147483647", "2147483"},
		{"MaxInt64", []resiliencehttp.StatusOption{resiliencehttp.WithStatusRefresh(math.MaxInt64)}, "2147483647", "2147483"},
	}
	reg := resilience.NewRegistry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, body := fetchPage(t, "GET", statusServer(t, reg, tc.opts...), nil)
			assert.Contains(t, body, `data-refresh="`+tc.millis+`"`)
			assert.Contains(t, body, `<noscript><meta http-equiv="refresh" content="`+tc.every+`"></noscript>`)
		})
	}
}

// TestStatusHandlerDetails: each row's details say its guard's counts in
// words, only those that apply, and the summary counts the rows of each
// health.
func TestStatusHandlerDetails(t *testing.T) {
	ctx := context.Background()
	mock := clock.NewMock()
	rated := resilience.NewBreaker(resilience.WithBreakerFailureRate(0.9, 10, 20))
	for _, err := range []error{nil, nil, errors.New("down")} {
		done, enterErr := rated.Enter(ctx)
		require.NoError(t, enterErr)
		done(err)
	}
	opening := func(coolDown time.Duration) *resilience.Breaker {
		b := resilience.NewBreaker(resilience.WithClock(mock), resilience.WithBreakerCoolDown(coolDown))
		b.Trip()
		return b
	}
	probing := opening(time.Second)
	mock.Add(time.Second)
	probeDone, err := probing.Enter(ctx)
	require.NoError(t, err)
	defer probeDone(nil)
	refused := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(mock))
	refused.Allow("k")
	refused.Allow("k")
	guards := []struct {
		name  string
		guard resilience.Inspector
		want  string
	}{
		{"a-closed", resilience.NewBreaker(), "0 consecutive failures, 0 trips"},
		{"b-rated", rated, "failure rate 33.33% (1 of 3), 1 consecutive failure, 0 trips"},
		{"c-open", opening(1500 * time.Millisecond), "0 consecutive failures, half-open in 2s, 1 trip"},
		{"d-open-soon", opening(250 * time.Millisecond), "0 consecutive failures, half-open in 250ms, 1 trip"},
		{"e-probing", probing, "0 consecutive failures, 1 probe in flight, 1 trip"},
		{"f-keyed", resilience.NewKeyedRateLimiter[string](1, 1), "0 of 1048576 keys, each 1 tokens a second, burst 1"},
		{"g-keyed-refused", refused, "1 of 1048576 keys, each 1 tokens a second, burst 1; most refused: k (1); refused calls, the last at 00:00:01"},
		{"h-unlimited", resilience.NewRateLimiter(1e15, 1), "1 of 1 tokens, unlimited a second"},
	}
	reg := resilience.NewRegistry(resilience.WithClock(mock)) // the refused limiter's count is noticed at the page's read
	for _, g := range guards {
		require.NoError(t, reg.Register(g.name, g.guard))
	}
	_, body := fetchPage(t, "GET", statusServer(t, reg), nil)
	for _, g := range guards {
		row := regexp.MustCompile(`data-name="` + g.name + `">\n<td class="name">.*</td>\n<td class="kind">[^<]*</td>\n<td class="health"><span [^>]*>[^<]*</span></td>\n<td class="details">([^<]*)</td>`)
		m := row.FindStringSubmatch(body)
		if assert.NotNil(t, m, "row of %s", g.name) {
			assert.Equal(t, g.want, m[1], "details of %s", g.name)
		}
	}
	assert.Contains(t, body, "8 registered: 4 ok, 2 warning, 2 critical.")
}

func TestStatusHandlerJSON(t *testing.T) {
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker(resilience.WithName("db"), resilience.WithObserver(reg))
	require.NoError(t, reg.Register("db", br))
	require.NoError(t, reg.Register("pool", resilience.NewBulkhead(3)))
	br.Trip()
	base := statusServer(t, reg)
	tests := []struct {
		name    string
		query   string
		accept  string
		wantsJS bool
	}{
		{"format=json", "?format=json", "", true},
		{"Accept", "", "application/json", true},
		{"a browser's Accept", "", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"format=html wins", "?format=html", "application/json", false},
		{"no Accept", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.accept != "" {
				headers = []string{"Accept", tc.accept}
			}
			resp, body := fetchPage(t, "GET", base+tc.query, nil, headers...)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			if !tc.wantsJS {
				assert.True(t, strings.HasPrefix(body, "<!DOCTYPE html>"), body)
				return
			}
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var got []resilience.Snapshot
			require.NoError(t, json.Unmarshal([]byte(body), &got))
			want := reg.Snapshots()
			require.Len(t, got, 2)
			assert.Equal(t, want[1], got[1])
			assert.Equal(t, "open", got[0].State)
			assert.Equal(t, "state-change", got[0].Events[0].Kind)
		})
	}

	_, body := fetchPage(t, "GET", statusServer(t, resilience.NewRegistry())+"?format=json", nil)
	assert.Equal(t, "[]\n", body, "an empty registry")
}

func TestStatusHandlerIsReadOnlyByDefault(t *testing.T) {
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker()
	require.NoError(t, reg.Register("db", br))
	base := statusServer(t, reg)
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		t.Run(method, func(t *testing.T) {
			resp, _ := fetchPage(t, method, base, strings.NewReader("name=db&action=isolate"), "Content-Type", "application/x-www-form-urlencoded")
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
			assert.Equal(t, resilience.BreakerClosed, br.State())
		})
	}
	resp, _ := fetchPage(t, "GET", base+"?name=db&action=isolate", nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, resilience.BreakerClosed, br.State(), "a GET changes nothing")
}

func TestStatusHandlerActions(t *testing.T) {
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker()
	require.NoError(t, reg.Register("db", br))
	require.NoError(t, reg.Register("pool", resilience.NewBulkhead(1)))
	base := statusServer(t, reg, resiliencehttp.WithStatusActions())
	origin := strings.TrimSuffix(base, "/debug/resilience/")
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name    string
		method  string
		form    url.Values
		headers []string
		status  int
		want    resilience.BreakerState
	}{
		{"isolate", "POST", url.Values{"name": {"db"}, "action": {"isolate"}}, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusSeeOther, resilience.BreakerOpen},
		{"reset", "POST", url.Values{"name": {"db"}, "action": {"reset"}}, []string{"Origin", origin}, http.StatusSeeOther, resilience.BreakerClosed},
		{"cross-site", "POST", url.Values{"name": {"db"}, "action": {"isolate"}}, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, resilience.BreakerClosed},
		{"another origin", "POST", url.Values{"name": {"db"}, "action": {"isolate"}}, []string{"Origin", "http://attacker.example"}, http.StatusForbidden, resilience.BreakerClosed},
		{"unknown name", "POST", url.Values{"name": {"nobody"}, "action": {"isolate"}}, nil, http.StatusNotFound, resilience.BreakerClosed},
		{"not a breaker", "POST", url.Values{"name": {"pool"}, "action": {"isolate"}}, nil, http.StatusBadRequest, resilience.BreakerClosed},
		{"unknown action", "POST", url.Values{"name": {"db"}, "action": {"explode"}}, nil, http.StatusBadRequest, resilience.BreakerClosed},
		{"PUT", "PUT", url.Values{"name": {"db"}, "action": {"isolate"}}, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusMethodNotAllowed, resilience.BreakerClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := fetchPage(t, tc.method, base, strings.NewReader(tc.form.Encode()), append([]string{"Content-Type", form}, tc.headers...)...)
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.status == http.StatusSeeOther {
				assert.Equal(t, "/debug/resilience/", resp.Header.Get("Location"))
			}
			assert.Equal(t, tc.want, br.State())
		})
	}
	_, body := fetchPage(t, "GET", base, nil)
	assert.Contains(t, body, `<form method="post"><input type="hidden" name="name" value="db"><button name="action" value="isolate">Isolate</button>`)
	assert.Equal(t, 1, strings.Count(body, "<form"), "a form for the breaker alone")
}

func TestStatusHandlerPanics(t *testing.T) {
	reg := resilience.NewRegistry()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil registry", func() { resiliencehttp.StatusHandler(nil) }, "resiliencehttp: StatusHandler: registry is nil"},
		{"nil option", func() { resiliencehttp.StatusHandler(reg, nil) }, "resiliencehttp: StatusHandler: option is nil"},
		{"refresh", func() { resiliencehttp.WithStatusRefresh(time.Millisecond) }, "resiliencehttp: WithStatusRefresh: refresh must be at least 100ms, got 1ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tc.want, tc.f)
		})
	}
}

// brokenError is an error type whose Error method reads its receiver: a
// typed nil of it panics when put in words.
type brokenError struct{ msg string }

func (e *brokenError) Error() string { return e.msg }

// TestStatusHandlerBrokenError: an event whose error panics when put in
// words shows as broken on the page and in the JSON, which are served as
// usual, that time and every time after.
func TestStatusHandlerBrokenError(t *testing.T) {
	reg := resilience.NewRegistry()
	require.NoError(t, reg.Register("db", resilience.NewBreaker()))
	var typedNil *brokenError
	reg.Observe(context.Background(), resilience.Event{Kind: resilience.EventRefused, Component: "breaker", Name: "db", Err: typedNil})
	base := statusServer(t, reg)
	const broken = "%!v(PANIC=Error method: runtime error: invalid memory address or nil pointer dereference)"
	for range 2 {
		resp, body := fetchPage(t, "GET", base, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, body, "refused: "+broken)
		resp, body = fetchPage(t, "GET", base+"?format=json", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var got []resilience.Snapshot
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		require.Len(t, got, 1)
		assert.Equal(t, broken, got[0].Events[0].Err)
	}
}

// TestStatusHandlerActionRedirectStaysOnHost: served without a mux that
// cleans paths, an action on a path a browser reads as another host sends
// the browser back to a path of the same host, never to that host.
func TestStatusHandlerActionRedirectStaysOnHost(t *testing.T) {
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker()
	require.NoError(t, reg.Register("db", br))
	srv := newServer(t, resiliencehttp.StatusHandler(reg, resiliencehttp.WithStatusActions()).ServeHTTP)
	base, err := url.Parse(srv.URL)
	require.NoError(t, err)
	tests := []struct{ path, want string }{
		{"/", "/"},
		{"/status/", "/status/"},
		{"/status", "/status"},
		{"//evil.example/", "/evil.example/"},
		{"///evil.example", "/evil.example"},
		{"//evil.example/a/../", "/evil.example/"},
		{"/./evil.example/", "/evil.example/"},
		{`/\evil.example/`, "/%5Cevil.example/"},
		{"/%2F%2Fevil.example/", "/%2F%2Fevil.example/"},
		{"/%5Cevil.example/", "/%5Cevil.example/"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp := postRaw(t, base.Host, tc.path, "name=db&action=reset", "Sec-Fetch-Site: same-origin")
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			loc := resp.Header.Get("Location")
			assert.Equal(t, tc.want, loc)
			u, err := url.Parse(loc)
			require.NoError(t, err)
			assert.Equal(t, base.Host, base.ResolveReference(u).Host, "Location %q leaves the host", loc)
		})
	}
}

// postRaw sends a form to host with target as the request target, byte
// for byte, as no client that cleans URLs would, and returns the answer.
func postRaw(t *testing.T, host, target, form string, headers ...string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	require.NoError(t, err)
	defer conn.Close()
	req := "POST " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n" +
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + strconv.Itoa(len(form)) + "\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	_, err = io.WriteString(conn, req+"\r\n"+form)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestStatusHandlerShowsShedding: an adaptive limiter that refuses calls
// of low priority with slots free shows on the page and in the JSON as
// shedding, in amber, until the registry's shedding window has passed on
// its clock.
func TestStatusHandlerShowsShedding(t *testing.T) {
	ctx := resilience.WithPriority(context.Background(), resilience.PrioritySheddable)
	mock := clock.NewMock()
	reg := resilience.NewRegistry(resilience.WithClock(mock), resilience.WithRegistryShedding(10*time.Second))
	l := resilience.NewAdaptiveLimiter(resilience.WithClock(mock), resilience.WithAdaptiveInitial(8),
		resilience.WithName("api"), resilience.WithObserver(reg))
	require.NoError(t, reg.Register("api", l))
	for {
		done, err := l.Enter(ctx)
		if err != nil {
			break
		}
		defer done(nil)
	}
	require.Less(t, l.InFlight(), l.Limit(), "refused with slots free")
	base := statusServer(t, reg)

	_, body := fetchPage(t, "GET", base, nil)
	assert.Contains(t, body, `<tr class="warning" data-name="api">`)
	assert.Contains(t, body, `<span class="state warning">shedding</span>`)
	assert.Contains(t, body, "; refused calls, the last at "+mock.Now().Format("15:04:05"))
	assert.Contains(t, body, "1 registered: 0 ok, 1 warning, 0 critical.")
	_, body = fetchPage(t, "GET", base+"?format=json", nil)
	assert.Contains(t, body, `"state":"shedding","health":"warning","lastRefused":"`)
	assert.Contains(t, body, `"shedding":true`)

	mock.Add(10 * time.Second)
	_, body = fetchPage(t, "GET", base, nil)
	assert.Contains(t, body, `<span class="state ok">ok</span>`)
	assert.NotContains(t, body, "refused calls, the last")
}

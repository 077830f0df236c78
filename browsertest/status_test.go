// Package browsertest opens the status page of package resiliencehttp in a
// real browser, headless Chromium driven by chromedp, in front of a live
// registry. It is a module of its own so that chromedp never reaches the
// library's go.mod.
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// chromiumPath is Debian's Chromium, which .ci/run installs; CHROMIUM
// names another.
func chromiumPath(t *testing.T) string {
	path := "/usr/bin/chromium"
	if p := os.Getenv("CHROMIUM"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no browser at %s (apt-get install chromium, or set CHROMIUM): %v", path, err)
	}
	return path
}

// newBrowser starts headless Chromium, with a fresh profile that chromedp
// makes and removes, and returns a context for a tab of it. The browser
// is closed, and waited for, when the test ends.
func newBrowser(t *testing.T) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI's container
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1200, 700),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel() // closes the tab and the browser, and waits for them
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser, without a timeout
		t.Fatalf("starting %s: %v", chromiumPath(t), err)
	}
	return ctx
}

// within runs the actions with a bound on the time they may take, so that
// a page that never shows what is awaited fails the test instead of
// hanging it.
func within(t *testing.T, ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// shownName is name as the page and its JSON show it: cut to 80
// characters, the last an ellipsis, when it is longer (evilName is 83).
func shownName(name string) string {
	if r := []rune(name); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return name
}

// evilName is a guard's name made of markup and script: the page must
// show it as text.
const evilName = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`

// liveService is a registry with a breaker in front of a dependency that
// fails when told, and other guards beside it, served on 127.0.0.1.
type liveService struct {
	reg     *resilience.Registry
	breaker *resilience.Breaker
	calls   resilience.Policy[string]
	url     string
}

func newLiveService(t *testing.T, opts ...resiliencehttp.StatusOption) *liveService {
	reg := resilience.NewRegistry()
	br := resilience.NewBreaker(resilience.WithName("payments"), resilience.WithObserver(reg), resilience.WithBreakerThreshold(3))
	guards := map[string]resilience.Inspector{
		"payments":      br,
		"payments-pool": resilience.NewBulkhead(8),
		"per-user":      resilience.NewKeyedRateLimiter[string](5, 5),
		"search-hedge":  resilience.Hedge[string](resilience.WithHedgeDelay(20 * time.Millisecond)).(resilience.Inspector),
		evilName:        resilience.NewRateLimiter(10, 10),
	}
	for name, g := range guards {
		if err := reg.Register(name, g); err != nil {
			t.Fatal(err)
		}
	}
	reg.Observe(context.Background(), resilience.Event{
		Kind: resilience.EventRefused, Component: resilience.KindRateLimiter, Name: evilName,
		Err: errors.New(`<b onmouseover="document.title='pwned'">refused</b>`),
	})
	return &liveService{reg: reg, breaker: br, calls: resilience.Guarded[string](br), url: serve(t, reg, opts...)}
}

// serve serves reg's status page on 127.0.0.1 under /debug/resilience/, as
// a program mounts it, until the test ends, and returns its URL.
func serve(t *testing.T, reg *resilience.Registry, opts ...resiliencehttp.StatusOption) string {
	mux := http.NewServeMux()
	mux.Handle("/debug/resilience/", http.StripPrefix("/debug/resilience", resiliencehttp.StatusHandler(reg, opts...)))
	srv := httptest.NewServer(mux) // on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv.URL + "/debug/resilience/"
}

// fail makes n calls that fail through the breaker.
func (s *liveService) fail(n int) {
	down := errors.New("payments: connection refused")
	for range n {
		_, _ = resilience.Do(context.Background(), s.calls, func(context.Context) (string, error) { return "", down })
	}
}

// TestStatusPageShowsATripWithoutReload opens the page, trips the breaker
// behind it, and waits (bounded) for its row to turn open and red in the
// same document: no reload, the page's own script fetched the rows.
func TestStatusPageShowsATripWithoutReload(t *testing.T) {
	svc := newLiveService(t)
	ctx := newBrowser(t)
	row := `tr[data-name="payments"]`

	within(t, ctx, 20*time.Second,
		chromedp.Navigate(svc.url),
		chromedp.WaitVisible(chromedp.CSS(row+` .state.ok`)),
	)
	if got := run(t, ctx, chromedp.Text(chromedp.CSS(row+" .state"))); got != "closed" {
		t.Fatalf("state before = %q, want closed", got)
	}
	// A mark on the document: a reload would make a new one without it.
	run(t, ctx, chromedp.Evaluate[bool](`window.sameDocument = true`))

	svc.fail(3)
	if s, _ := svc.reg.Snapshot("payments"); s.State != "open" {
		t.Fatalf("breaker state = %q, want open", s.State)
	}
	within(t, ctx, 15*time.Second, chromedp.WaitVisible(chromedp.CSS(row+` .state.critical`)))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS(row+" .state"))); got != "open" {
		t.Errorf("state after = %q, want open", got)
	}
	if !run(t, ctx, chromedp.Evaluate[bool](`window.sameDocument === true`)) {
		t.Error("the page was reloaded")
	}
	events := run(t, ctx, chromedp.Text(chromedp.CSS(row+" details summary")))
	if want := "closed → open"; !strings.Contains(events, want) {
		t.Errorf("events = %q, want %q in it", events, want)
	}
	// The rate limiter named evilName refused a call a moment ago: it sheds.
	if title, want := run(t, ctx, chromedp.Title()), "Guards: 1 critical, 1 warning"; title != want {
		t.Errorf("title = %q, want %q", title, want)
	}

	// Names and errors are text: no markup of theirs became elements,
	// and none of their scripts ran.
	checkEscaped(t, ctx)
	screenshot(t, ctx, "status-page.png")
}

func checkEscaped(t *testing.T, ctx context.Context) {
	t.Helper()
	names := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("td.name")].map(td => td.textContent)`))
	if want := shownName(evilName); !slices.Contains(names, want) {
		t.Errorf("names shown = %q, want %q among them as text", names, want)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("img, b, script").length`)); n != 1 {
		t.Errorf("the page has %d img, b and script elements, want 1 (its own script)", n)
	}
	if title := run(t, ctx, chromedp.Title()); title == "pwned" {
		t.Error("a name's script ran")
	}
}

// screenshot writes the page as a PNG among the test's artifacts (kept
// with go test -artifacts).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := run(t, ctx, chromedp.FullScreenshot(100))
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestStatusPageWithoutScripts: with scripts off the page still shows
// every row, and its meta refresh reloads it.
func TestStatusPageWithoutScripts(t *testing.T) {
	svc := newLiveService(t)
	ctx := newBrowser(t)
	row := `tr[data-name="payments"]`
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, 20*time.Second,
		chromedp.Navigate(svc.url),
		chromedp.WaitVisible(chromedp.CSS(row+` .state.ok`)),
	)
	svc.fail(3)
	// The page reloads itself every 5 seconds.
	within(t, ctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(row+` .state.critical`)))
}

// TestStatusPageActions: an operator's Reset, clicked in the browser,
// goes through the cross-origin protection and closes the breaker.
func TestStatusPageActions(t *testing.T) {
	svc := newLiveService(t, resiliencehttp.WithStatusActions())
	svc.breaker.Isolate()
	ctx := newBrowser(t)
	row := `tr[data-name="payments"]`
	within(t, ctx, 20*time.Second,
		chromedp.Navigate(svc.url),
		chromedp.WaitVisible(chromedp.CSS(row+` .state.critical`)),
	)
	clickCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(clickCtx, chromedp.Click(chromedp.CSS(row+` button[value="reset"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("after Reset the page answered %d", resp.Status)
	}
	within(t, ctx, 15*time.Second, chromedp.WaitVisible(chromedp.CSS(row+` .state.ok`)))
	if st := svc.breaker.State(); st != resilience.BreakerClosed {
		t.Errorf("breaker = %v after Reset, want closed", st)
	}
}

// TestStatusPageJSONMatchesSnapshots reads the JSON the page serves, as
// the browser gets it, strictly into the snapshot types: every field it
// has is one of theirs, and the values are the registry's.
func TestStatusPageJSONMatchesSnapshots(t *testing.T) {
	svc := newLiveService(t)
	svc.fail(3)
	ctx := newBrowser(t)
	within(t, ctx, 20*time.Second, chromedp.Navigate(svc.url))
	body := run(t, ctx, chromedp.Evaluate[string](`fetch("?format=json").then(r => r.text())`, chromedp.EvalAwaitPromise))

	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	var got []resilience.Snapshot
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("more after the list: %v", err)
	}
	want := svc.reg.Snapshots()
	if len(got) != len(want) {
		t.Fatalf("%d snapshots, want %d", len(got), len(want))
	}
	for i := range want {
		// The times and counts of a live registry move; what each guard is,
		// and the breaker's trip, do not.
		g, w := got[i], want[i]
		if g.Name != shownName(w.Name) || g.Kind != w.Kind || g.State != w.State || g.Health != w.Health {
			t.Errorf("snapshot %d = %s %s %s %s, want %s %s %s %s", i, g.Name, g.Kind, g.State, g.Health, w.Name, w.Kind, w.State, w.Health)
		}
		if sections(g) != sections(w) {
			t.Errorf("%s: sections %s, want %s", g.Name, sections(g), sections(w))
		}
	}
	// Marshalled again, the values give back the same JSON: nothing the
	// page sent was lost on the way into the types.
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(body), &a)
	_ = json.Unmarshal(again, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("JSON does not survive the snapshot types:\nsent  %s\nagain %s", body, again)
	}
}

// sections names the sections of a snapshot that are set.
func sections(s resilience.Snapshot) string {
	v := reflect.ValueOf(s)
	out := ""
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			out += v.Type().Field(i).Name + " "
		}
	}
	return out
}

// TestStatusPageWrapsNamesAtSeparators: in a window as narrow as a phone's,
// a long name wraps, but only after its separators: each part of it between
// two <wbr> is on one line; and every kind and state is on one line.
func TestStatusPageWrapsNamesAtSeparators(t *testing.T) {
	const long = "payments-api.eu-west-1.tenant-0123456789.reads"
	reg := resilience.NewRegistry()
	for name, g := range map[string]resilience.Inspector{
		long:                        resilience.NewKeyedRateLimiter[string](1, 1),
		"checkout-adaptive-limiter": resilience.NewAdaptiveLimiter(),
		"search_adaptive_throttler": resilience.NewAdaptiveThrottler(),
		"inventory.reads.half-open": resilience.NewBreaker(),
		"a-name-without-a-break-at-all-in-it-for-quite-a-while": resilience.NewBulkhead(1),
	} {
		if err := reg.Register(name, g); err != nil {
			t.Fatal(err)
		}
	}
	ctx := newBrowser(t)
	within(t, ctx, 20*time.Second,
		chromedp.EmulateViewport(360, 640),
		chromedp.Navigate(serve(t, reg)),
		chromedp.WaitVisible(chromedp.CSS(`td.name`)),
	)
	// lines counts the lines a node's text is laid out on.
	type row struct {
		Whole, Kind, State int
		Parts              []int
	}
	rows := run(t, ctx, chromedp.Evaluate[map[string]row](`(() => {
		const lines = n => {
			const r = document.createRange();
			r.selectNodeContents(n);
			return new Set([...r.getClientRects()].map(q => Math.round(q.top))).size;
		};
		const out = {};
		for (const tr of document.querySelectorAll("tr[data-name]")) {
			const name = tr.querySelector("td.name");
			out[tr.dataset.name] = {
				Whole: lines(name),
				Kind: lines(tr.querySelector("td.kind")),
				State: lines(tr.querySelector("td.health span")),
				Parts: [...name.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(lines),
			};
		}
		return out;
	})()`))
	screenshot(t, ctx, "narrow.png")
	if len(rows) != 5 {
		t.Fatalf("rows = %v, want 5", rows)
	}
	if rows[long].Whole < 2 {
		t.Errorf("%s is on %d line, want it wrapped in a narrow window", long, rows[long].Whole)
	}
	for name, r := range rows {
		for i, n := range r.Parts {
			if n != 1 {
				t.Errorf("%s: part %d is on %d lines, want 1 (a name wraps at its separators alone)", name, i, n)
			}
		}
		if r.Kind != 1 || r.State != 1 {
			t.Errorf("%s: kind on %d lines, state on %d, want 1 each", name, r.Kind, r.State)
		}
	}
}

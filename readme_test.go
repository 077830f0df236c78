package resilience_test

// This file holds the README's recipes that no other test or example holds,
// as they stand there, so that they compile and pass.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// slowService stands for a dependency that takes a minute to answer.
func slowService(ctx context.Context) (string, error) {
	select {
	case <-time.After(time.Minute):
		return "late", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// TestSlowServiceTimesOut is the README's first testing example: a
// synctest bubble alone, no fake clock.
func TestSlowServiceTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := resilience.Timeout[string](time.Second) // built inside the bubble
		start := time.Now()
		_, err := resilience.Do(context.Background(), policy, slowService)
		if !errors.Is(err, resilience.ErrTimeout) {
			t.Fatalf("Do() = %v, want ErrTimeout", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Do() took %v of the bubble's time, want 1s", took)
		}
	})
}

// TestSlowServiceTimesOutOnAMock is the README's second testing example:
// an injected clock, moved by the test.
func TestSlowServiceTimesOutOnAMock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		policy := resilience.Timeout[string](time.Second, resilience.WithClock(mock))

		errc := make(chan error, 1)
		go func() {
			_, err := resilience.Do(context.Background(), policy, slowService)
			errc <- err
		}()
		synctest.Wait()       // the call is now waiting on the mock clock
		mock.Add(time.Second) // the deadline passes
		if err := <-errc; !errors.Is(err, resilience.ErrTimeout) {
			t.Fatalf("Do() = %v, want ErrTimeout", err)
		}
	})
}

// readmeAPI stands for the users service of the README's retry recipe: it
// fails twice, then answers.
type readmeAPI struct{ calls int }

// ErrNotFound is the users service's answer for a user it does not have.
var ErrNotFound = errors.New("not found")

func (a *readmeAPI) User(_ context.Context, id int) (User, error) {
	if a.calls++; a.calls <= 2 {
		return User{}, errors.New("connection reset")
	}
	return User{ID: id, Name: "Ann"}, nil
}

// TestREADMEInTenLines runs the README's first recipe, in a bubble so that
// its waits take no real time.
func TestREADMEInTenLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, api, id := context.Background(), &readmeAPI{}, 42

		br := resilience.NewBreaker() // shared by every call to the service
		users := resilience.Compose(
			resilience.Timeout[User](2*time.Second),
			resilience.Retry[User](resilience.WithAttempts(3)),
			resilience.Guarded[User](br),
		)

		u, err := resilience.Do(ctx, users, func(ctx context.Context) (User, error) {
			return api.User(ctx, id)
		})

		if err != nil || u.Name != "Ann" || api.calls != 3 {
			t.Errorf("Do() = %v, %v after %d calls, want Ann after 3", u, err, api.calls)
		}
	})
}

// TestREADMERetry runs the README's retry recipe, in a bubble so that its
// waits take no real time.
func TestREADMERetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, api, id := context.Background(), &readmeAPI{}, 42

		users := resilience.Retry[User](
			resilience.WithAttempts(5),                       // at most 5 attempts in all
			resilience.WithMaxElapsed(time.Minute),           // no wait that would end past a minute
			resilience.WithAbortOn(ErrNotFound),              // never retried
			resilience.WithBackoff(resilience.GRPCConnect()), // 1s, ×1.6 a retry up to 2m, each ±20%
		)
		u, err := resilience.Do(ctx, users, func(ctx context.Context) (User, error) {
			return api.User(ctx, id)
		})

		if err != nil || u.Name != "Ann" || api.calls != 3 {
			t.Errorf("Do() = %v, %v after %d calls, want Ann after 3", u, err, api.calls)
		}
	})
}

// TestREADMESheddingServer runs the README's server recipe: each user has
// 2 requests an hour, and requests without the header share the key "".
func TestREADMESheddingServer(t *testing.T) {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })

	// At most 64 requests at once (503 past that), and each user 2 requests
	// an hour (429 past that), both with a Retry-After header. Your client
	// or your authenticating proxy sets X-User; requests without it all
	// have the key "" and share one user's 2 requests an hour.
	perUser := resilience.NewKeyedRateLimiter[string](2.0/3600, 2)
	mux := http.NewServeMux()
	mux.Handle("/", resiliencehttp.Handler(app, resilience.NewBulkhead(64),
		resiliencehttp.PerKey(perUser, resiliencehttp.Header("X-User"))))

	var got []string
	for _, user := range []string{"alice", "alice", "alice", "bob", "", "", ""} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		got = append(got, fmt.Sprint(user, ":", w.Code))
	}
	want := []string{"alice:200", "alice:200", "alice:429", "bob:200", ":200", ":200", ":429"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers %v, want %v", got, want)
	}
}

// TestREADMECodeIsCompiled: every Go block of the README stands, line for
// line, in a Go file of the repository that the tests compile (an Example
// or a test), so that no recipe goes stale. Indentation and blank lines
// aside.
func TestREADMECodeIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	normal := func(s string) string {
		var b strings.Builder
		for line := range strings.Lines(s) {
			if l := strings.TrimSpace(line); l != "" {
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	var sources []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "examples"+string(filepath.Separator)) && strings.HasSuffix(path, ".go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, normal(string(src)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(readme), "```go\n")[1:]
	if len(blocks) < 6 {
		t.Fatalf("the README has %d Go blocks, want at least the six recipes", len(blocks))
	}
	for _, b := range blocks {
		code := normal(b[:strings.Index(b, "```")])
		found := false
		for _, src := range sources {
			if strings.Contains(src, code) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("this README block is in no test or example of the repository:\n%s", code)
		}
	}
}

// TestDocsLinksResolve: every relative link of the repository's Markdown,
// outside code, names a file or folder that exists, and so does every
// "](../" inside code, so that no guide points nowhere and no rewrite of
// links reaches into code (Guarded[T](br) is not a link).
func TestDocsLinksResolve(t *testing.T) {
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	up := regexp.MustCompile(`\]\((\.\./[^)\n]*)\)`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		links := append(link.FindAllStringSubmatch(code.ReplaceAllString(string(text), ""), -1), up.FindAllStringSubmatch(string(text), -1)...)
		for _, m := range links {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, _, _ := strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), file)); err != nil {
				t.Errorf("%s links to %s, which does not exist", path, target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

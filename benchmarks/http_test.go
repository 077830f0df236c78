package benchmarks

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// httpClient is one library's client over base, each retrying at once (no
// wait between attempts) so that a row measures the library, not a sleep.
type httpClient struct {
	name string
	make func(base *http.Transport) *http.Client
}

var httpClients = []httpClient{
	{"net-http", func(base *http.Transport) *http.Client {
		return &http.Client{Transport: base}
	}},
	{"resilience", func(base *http.Transport) *http.Client {
		// The defaults: a call and an attempt timeout, 3 attempts; no retry
		// throttle, which would rightly stop retrying a server that fails
		// two calls in three, and which the peers do not have.
		return &http.Client{Transport: resiliencehttp.NewTransport(base,
			resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget()))}
	}},
	{"resilience-retry-only", func(base *http.Transport) *http.Client {
		return &http.Client{Transport: resiliencehttp.NewTransport(base,
			resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0),
			resiliencehttp.WithRetry(resilience.WithBackoff(resilience.Constant(0)), resilience.WithoutBudget()))}
	}},
	{"go-retryablehttp", func(base *http.Transport) *http.Client {
		c := retryablehttp.NewClient()
		c.HTTPClient.Transport = base
		c.Logger = nil
		c.RetryWaitMin, c.RetryWaitMax = 0, 0
		c.RetryMax = 2
		return c.StandardClient()
	}},
	{"failsafe-go", func(base *http.Transport) *http.Client {
		return &http.Client{Transport: failsafehttp.NewRoundTripper(base, failsafehttp.NewRetryPolicyBuilder().Build())}
	}},
}

// countingServer is a loopback server that counts the TCP connections
// clients open to it.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newCountingServer(h http.HandlerFunc) *countingServer {
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	return s
}

func fetch(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// BenchmarkHTTPSuccess is a GET answered 200 "ok" by a loopback server,
// through each library's client over the same kind of transport; net-http
// is the transport alone.
func BenchmarkHTTPSuccess(b *testing.B) {
	srv := newCountingServer(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	defer srv.Close()
	for _, hc := range httpClients {
		b.Run(hc.name, func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			client := hc.make(base)
			b.ReportAllocs()
			for b.Loop() {
				if code, err := fetch(client, srv.URL); err != nil || code != 200 {
					b.Fatalf("GET = %d, %v", code, err)
				}
			}
		})
	}
}

// BenchmarkHTTPSuccessParallel is the same under b.RunParallel.
func BenchmarkHTTPSuccessParallel(b *testing.B) {
	srv := newCountingServer(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	defer srv.Close()
	for _, hc := range httpClients {
		b.Run(hc.name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 64}
			defer base.CloseIdleConnections()
			client := hc.make(base)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if code, err := fetch(client, srv.URL); err != nil || code != 200 {
						b.Errorf("GET = %d, %v", code, err)
						return
					}
				}
			})
		})
	}
}

// TestHTTPRetryConnections makes 100 calls through each library's client
// against a server answering 503, 503, 200, and prints the TCP
// connections they opened and the goroutines left running once every
// body was read and closed:
//
//	go test -run HTTPRetryConnections -v .
func TestHTTPRetryConnections(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("| library | calls answered 200 | TCP connections | goroutines before | after |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, hc := range httpClients[1:] {
		var n atomic.Int64
		srv := newCountingServer(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%3 != 0 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		base := &http.Transport{}
		client := hc.make(base)
		before := runtime.NumGoroutine()
		ok := 0
		for range 100 {
			if code, err := fetch(client, srv.URL); err == nil && code == 200 {
				ok++
			}
		}
		after := runtime.NumGoroutine()
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %d |\n", hc.name, ok, srv.conns.Load(), before, after)
		if strings.HasPrefix(hc.name, "resilience") && (ok != 100 || srv.conns.Load() > 2) {
			t.Errorf("%s: %d calls answered 200 over %d connections, want 100 over at most 2", hc.name, ok, srv.conns.Load())
		}
		base.CloseIdleConnections()
		srv.CloseClientConnections() // the connections of bodies never closed
		srv.Close()
	}
	t.Log("\n" + sb.String())
}

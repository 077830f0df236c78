package resiliencehttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
)

// errDialed is the dialer's error of refusing: a request that reaches it
// passed every check net/http makes before it dials.
var errDialed = errors.New("test: dialed")

// netHTTPSends reports whether net/http's Transport would send req, by
// sending it through a Transport whose dialer refuses every connection.
func netHTTPSends(t *testing.T, req *http.Request) bool {
	tr := &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, errDialed },
		Proxy:       nil,
	}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip(%q %v) gave a response without a connection", req.Method, req.URL)
	}
	return errors.Is(err, errDialed)
}

// FuzzSendable checks sendable against net/http's own checks of a
// request's method, header and trailer fields and URL.
func FuzzSendable(f *testing.F) {
	for _, s := range [][4]string{
		{"GET", "X-Name", "value", "http"},
		{"", "Header-Name-\033", "v", "https"},
		{"GET", "N", "bad \033", "http"},
		{"PURGE", "N", "a\tb \x80", "http"},
		{"GET /", "N", "v", "http"},
		{"GET", "", "v", "http"},
		{"GET", "N", "v", "ftp"},
		{"GET", "N", "v", "HTTP"},
		{"GET", "!#$%&'*+-.^_`|~", "\x7f", "http"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, method, name, value, scheme, trailerName, trailerValue string) {
		req := &http.Request{
			Method:  method,
			URL:     &url.URL{Scheme: scheme, Host: "127.0.0.1:1", Path: "/"},
			Header:  http.Header{name: {value}},
			Trailer: http.Header{trailerName: {trailerValue}},
		}
		if got, want := sendable(req), netHTTPSends(t, req); got != want {
			t.Errorf("sendable(%q %q, header %q: %q, trailer %q: %q) = %v, net/http sends: %v",
				method, scheme, name, value, trailerName, trailerValue, got, want)
		}
	})
}

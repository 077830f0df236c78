// Package retryablehttp offers the API of github.com/hashicorp/go-retryablehttp
// on top of resiliencehttp.Transport, so that that library's own tests check
// ours. It is written for this module's tests, not for use.
//
// Each call of Client.Do runs one request through a resiliencehttp.Transport
// made for it: the Transport makes the attempts, waits between them and
// replays the body; the Client's CheckRetry decides which outcomes are
// retried (resiliencehttp.WithRetryable), its Backoff how long to wait, and
// its hooks see every attempt.
package retryablehttp

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// Logger is a logger of the standard library's kind.
type Logger interface {
	Printf(string, ...interface{})
}

// LeveledLogger is a structured logger of hclog's kind.
type LeveledLogger interface {
	Error(msg string, keysAndValues ...interface{})
	Info(msg string, keysAndValues ...interface{})
	Debug(msg string, keysAndValues ...interface{})
	Warn(msg string, keysAndValues ...interface{})
}

// RequestLogHook is called before every attempt, with the number of
// retries made so far.
type RequestLogHook func(Logger, *http.Request, int)

// ResponseLogHook is called with every response an attempt gets.
type ResponseLogHook func(Logger, *http.Response)

// CheckRetry decides whether an attempt's outcome is retried; its error,
// if any, is the call's error in the end.
type CheckRetry func(ctx context.Context, resp *http.Response, err error) (bool, error)

// Backoff returns the wait before retry attemptNum+1.
type Backoff func(min, max time.Duration, attemptNum int, resp *http.Response) time.Duration

// ErrorHandler makes the call's result when the retries ran out.
type ErrorHandler func(resp *http.Response, err error, numTries int) (*http.Response, error)

// PrepareRetry is called on the request before every retry.
type PrepareRetry func(req *http.Request) error

// Client makes HTTP calls with retries through resiliencehttp.Transport.
type Client struct {
	HTTPClient      *http.Client
	Logger          interface{}
	RetryWaitMin    time.Duration
	RetryWaitMax    time.Duration
	RetryMax        int
	RequestLogHook  RequestLogHook
	ResponseLogHook ResponseLogHook
	CheckRetry      CheckRetry
	Backoff         Backoff
	ErrorHandler    ErrorHandler
	PrepareRetry    PrepareRetry
}

// NewClient returns a client with go-retryablehttp's defaults: 4 retries,
// waits from 1s to 30s, DefaultRetryPolicy and DefaultBackoff.
func NewClient() *Client {
	return &Client{
		HTTPClient:   &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		Logger:       log.New(os.Stderr, "", log.LstdFlags),
		RetryWaitMin: time.Second,
		RetryWaitMax: 30 * time.Second,
		RetryMax:     4,
		CheckRetry:   DefaultRetryPolicy,
		Backoff:      DefaultBackoff,
	}
}

// DefaultRetryPolicy retries what resiliencehttp.Retryable retries, unless
// the context ended; it reports the context's error then.
func DefaultRetryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return resiliencehttp.Retryable(resp, err), nil
}

// ErrorPropagatedRetryPolicy is DefaultRetryPolicy that also reports a
// retried status as an error.
func ErrorPropagatedRetryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	retry, err2 := DefaultRetryPolicy(ctx, resp, err)
	if err2 == nil && retry && err == nil && resp != nil {
		err2 = fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	return retry, err2
}

// DefaultBackoff waits min·2^attemptNum, at most max; a 429 or 503 with a
// Retry-After waits that instead.
func DefaultBackoff(min, max time.Duration, attemptNum int, resp *http.Response) time.Duration {
	if d, ok := retryAfter(resp); ok {
		return d
	}
	d, _ := resilience.Cap(resilience.Exponential(min, 2), max).Delay(attemptNum+1, 0)
	return d
}

// LinearJitterBackoff waits a random time in [min, max]·(attemptNum+1).
func LinearJitterBackoff(min, max time.Duration, attemptNum int, resp *http.Response) time.Duration {
	n := time.Duration(attemptNum + 1)
	if max <= min {
		return min * n
	}
	d, _ := resilience.Random(min*n, max*n+1).Delay(1, 0)
	return d
}

// RateLimitLinearJitterBackoff is LinearJitterBackoff that honours a 429's
// or a 503's Retry-After.
func RateLimitLinearJitterBackoff(min, max time.Duration, attemptNum int, resp *http.Response) time.Duration {
	if d, ok := retryAfter(resp); ok {
		return d
	}
	return LinearJitterBackoff(min, max, attemptNum, resp)
}

// retryAfter reads the Retry-After of a 429 or 503.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// PassthroughErrorHandler returns the last attempt's response and error as
// they are.
func PassthroughErrorHandler(resp *http.Response, err error, _ int) (*http.Response, error) {
	return resp, err
}

// Get sends a GET.
func (c *Client) Get(url string) (*http.Response, error) {
	req, err := NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// Head sends a HEAD.
func (c *Client) Head(url string) (*http.Response, error) {
	req, err := NewRequest(http.MethodHead, url, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// Post sends a POST.
func (c *Client) Post(url, bodyType string, body interface{}) (*http.Response, error) {
	req, err := NewRequest(http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", bodyType)
	return c.Do(req)
}

// PostForm sends a POST of a form.
func (c *Client) PostForm(url string, data url.Values) (*http.Response, error) {
	return c.Post(url, "application/x-www-form-urlencoded", strings.NewReader(data.Encode()))
}

// StandardClient returns an http.Client that sends through c.
func (c *Client) StandardClient() *http.Client {
	return &http.Client{Transport: &RoundTripper{Client: c}}
}

// RoundTripper sends requests through a Client.
type RoundTripper struct {
	Client *Client
	once   sync.Once
}

// RoundTrip sends req through the Client, a new one if there is none.
func (rt *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.once.Do(func() {
		if rt.Client == nil {
			rt.Client = NewClient()
		}
	})
	r, err := FromRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := rt.Client.Do(r)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return resp, err
}

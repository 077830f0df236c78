// Package retryablehttp offers the API of github.com/hashicorp/go-retryablehttp
// on top of resiliencehttp.Transport, so that that library's own tests check
// ours. It is written for this module's tests, not for use.
//
// Each call of Client.Do runs one request through a resiliencehttp.Transport
// made for it: the Transport makes the attempts, waits between them and
// replays the body; the Client's CheckRetry decides which outcomes are
// retried (resiliencehttp.WithRetryIf), its Backoff how long to wait, and
// its hooks see every attempt.
package retryablehttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// ReaderFunc makes a fresh body for every attempt.
type ReaderFunc func() (io.Reader, error)

// ResponseHandlerFunc checks a response before the retry policy does.
type ResponseHandlerFunc func(*http.Response) error

// Request is an http.Request whose body can be read again for every
// attempt.
type Request struct {
	*http.Request
	responseHandler ResponseHandlerFunc
}

// NewRequest makes a request with a background context.
func NewRequest(method, url string, rawBody interface{}) (*Request, error) {
	return NewRequestWithContext(context.Background(), method, url, rawBody)
}

// NewRequestWithContext makes a request whose body, rawBody, is read again
// for every attempt: nil, []byte, string, *bytes.Buffer, *bytes.Reader,
// *strings.Reader, a ReaderFunc, func() (io.Reader, error) or any
// io.Reader (read into memory).
func NewRequestWithContext(ctx context.Context, method, url string, rawBody interface{}) (*Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, err
	}
	r := &Request{Request: hr}
	if err := r.SetBody(rawBody); err != nil {
		return nil, err
	}
	return r, nil
}

// FromRequest wraps r, reading its body into memory when it has no
// GetBody.
func FromRequest(r *http.Request) (*Request, error) {
	req := &Request{Request: r}
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		data, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if err := req.SetBody(data); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// WithContext returns a copy of r with ctx.
func (r *Request) WithContext(ctx context.Context) *Request {
	return &Request{Request: r.Request.WithContext(ctx), responseHandler: r.responseHandler}
}

// SetResponseHandler sets a check of the response that runs before the
// retry policy: its error is retried.
func (r *Request) SetResponseHandler(fn ResponseHandlerFunc) { r.responseHandler = fn }

// BodyBytes returns a copy of the body.
func (r *Request) BodyBytes() ([]byte, error) {
	if r.GetBody == nil {
		return nil, nil
	}
	b, err := r.GetBody()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return io.ReadAll(b)
}

// SetBody sets the body, as NewRequestWithContext takes it.
func (r *Request) SetBody(rawBody interface{}) error {
	var get func() (io.Reader, error)
	length := int64(-1)
	switch b := rawBody.(type) {
	case nil:
		r.Body, r.GetBody, r.ContentLength = http.NoBody, noBody, 0
		return nil
	case ReaderFunc:
		get = b
	case func() (io.Reader, error):
		get = b
	case []byte:
		get, length = func() (io.Reader, error) { return bytes.NewReader(b), nil }, int64(len(b))
	case string:
		get, length = func() (io.Reader, error) { return strings.NewReader(b), nil }, int64(len(b))
	case *bytes.Buffer:
		data := b.Bytes()
		get, length = func() (io.Reader, error) { return bytes.NewReader(data), nil }, int64(len(data))
	case *bytes.Reader:
		data, err := io.ReadAll(b)
		if err != nil {
			return err
		}
		get, length = func() (io.Reader, error) { return bytes.NewReader(data), nil }, int64(len(data))
	case io.Reader:
		data, err := io.ReadAll(b)
		if err != nil {
			return err
		}
		get, length = func() (io.Reader, error) { return bytes.NewReader(data), nil }, int64(len(data))
	default:
		return fmt.Errorf("cannot handle type %T", rawBody)
	}
	r.GetBody = func() (io.ReadCloser, error) {
		rd, err := get()
		if err != nil {
			return nil, err
		}
		if rc, ok := rd.(io.ReadCloser); ok {
			return rc, nil
		}
		return io.NopCloser(rd), nil
	}
	body, err := r.GetBody()
	if err != nil {
		return err
	}
	r.Body = body
	if length >= 0 {
		r.ContentLength = length
	}
	if length == 0 {
		r.Body, r.GetBody = http.NoBody, noBody
	}
	return nil
}

func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// call is one Do's state, shared with the Transport's predicate and
// backoff and the attempts below it.
type call struct {
	c   *Client
	req *Request
	ctx context.Context

	mu       sync.Mutex
	attempts int            // attempts sent
	checked  int            // attempts CheckRetry saw
	resp     *http.Response // the last attempt's response
	err      error          // the last attempt's error
	retry    bool           // CheckRetry's last verdict
	checkErr error          // CheckRetry's last error
}

// RoundTrip is one attempt, below the resiliencehttp.Transport.
func (k *call) RoundTrip(r *http.Request) (*http.Response, error) {
	k.mu.Lock()
	k.attempts++
	n := k.attempts
	k.mu.Unlock()
	c := k.c
	if n > 1 && c.PrepareRetry != nil {
		if err := c.PrepareRetry(r); err != nil {
			return nil, err
		}
	}
	if c.RequestLogHook != nil {
		c.RequestLogHook(k.logger(), r, n-1)
	}
	base := http.DefaultTransport
	if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
		base = c.HTTPClient.Transport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && k.req.responseHandler != nil {
		if herr := k.req.responseHandler(resp); herr != nil {
			resp.Body.Close()
			resp, err = nil, herr
		}
	}
	if resp != nil && c.ResponseLogHook != nil {
		c.ResponseLogHook(k.logger(), resp)
	}
	k.mu.Lock()
	k.resp, k.err = resp, err
	k.mu.Unlock()
	return resp, err
}

// logger returns the client's Logger as a Logger when it is one.
func (k *call) logger() Logger {
	l, _ := k.c.Logger.(Logger)
	return l
}

// check asks CheckRetry about the last attempt.
func (k *call) check(resp *http.Response, err error) bool {
	retry, checkErr := k.c.checkRetry()(k.ctx, resp, err)
	k.mu.Lock()
	k.checked = k.attempts
	k.retry, k.checkErr = retry, checkErr
	k.mu.Unlock()
	return retry
}

func (c *Client) checkRetry() CheckRetry {
	if c.CheckRetry != nil {
		return c.CheckRetry
	}
	return DefaultRetryPolicy
}

// Do sends req, retrying as CheckRetry says, up to RetryMax times.
func (c *Client) Do(req *Request) (*http.Response, error) {
	k := &call{c: c, req: req, ctx: req.Context()}
	backoff := c.Backoff
	if backoff == nil {
		backoff = DefaultBackoff
	}
	wait := resilience.BackoffFunc(func(n int, _ time.Duration) (time.Duration, bool) {
		k.mu.Lock()
		resp := k.resp
		k.mu.Unlock()
		return backoff(c.RetryWaitMin, c.RetryWaitMax, n-1, resp), true
	})
	t := resiliencehttp.NewTransport(k,
		resiliencehttp.WithTimeout(0), resiliencehttp.WithAttemptTimeout(0),
		resiliencehttp.WithIdempotent(func(*http.Request) bool { return true }),
		resiliencehttp.WithRetryIf(k.check),
		resiliencehttp.WithRetry(resilience.WithAttempts(max(c.RetryMax, 0)+1), resilience.WithBackoff(wait),
			resilience.WithoutBudget(), resilience.WithMaxRetryAfter(time.Duration(1<<62))))
	hc := http.Client{Transport: t}
	if c.HTTPClient != nil {
		hc.CheckRedirect, hc.Jar, hc.Timeout = c.HTTPClient.CheckRedirect, c.HTTPClient.Jar, c.HTTPClient.Timeout
	}
	resp, doErr := hc.Do(req.Request)
	k.mu.Lock()
	asked := k.checked == k.attempts
	lastResp, lastErr, attempts := k.resp, k.err, k.attempts
	k.mu.Unlock()
	if !asked && attempts > 0 {
		// The Transport did not ask about the last attempt (one it sends
		// once, or the last of all): CheckRetry sees every attempt.
		k.check(lastResp, lastErr)
	}
	k.mu.Lock()
	retry, checkErr := k.retry, k.checkErr
	k.mu.Unlock()
	if doErr == nil && checkErr == nil && !retry {
		return resp, nil
	}
	err := doErr
	if checkErr != nil {
		err = checkErr
	}
	if c.ErrorHandler != nil {
		if resp == nil {
			resp = lastResp
		}
		return c.ErrorHandler(resp, err, attempts)
	}
	if resp != nil {
		resp.Body.Close()
	}
	u := ""
	if req.URL != nil {
		u = req.URL.Redacted()
	}
	if err == nil {
		return nil, fmt.Errorf("%s %s giving up after %d attempt(s)", req.Method, u, attempts)
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil && doErr == err {
		err = ue.Err
	}
	return nil, fmt.Errorf("%s %s giving up after %d attempt(s): %w", req.Method, u, attempts, err)
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

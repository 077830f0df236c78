package retryablehttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

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
	resp, doErr := c.httpClient(k).Do(req.Request)
	lastResp, attempts, retry, checkErr := k.finish()
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
	return nil, giveUp(req, attempts, err, doErr)
}

// httpClient returns the http.Client that sends k's request: over a
// resiliencehttp.Transport that makes k's attempts, as c says, and with
// c.HTTPClient's redirect policy, cookie jar and timeout.
func (c *Client) httpClient(k *call) *http.Client {
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
		resiliencehttp.WithRetryable(k.check),
		resiliencehttp.WithRetry(resilience.WithAttempts(max(c.RetryMax, 0)+1), resilience.WithBackoff(wait),
			resilience.WithoutBudget(), resilience.WithMaxRetryAfter(time.Duration(1<<62))))
	hc := &http.Client{Transport: t}
	if c.HTTPClient != nil {
		hc.CheckRedirect, hc.Jar, hc.Timeout = c.HTTPClient.CheckRedirect, c.HTTPClient.Jar, c.HTTPClient.Timeout
	}
	return hc
}

// finish asks CheckRetry about the last attempt when the Transport did not
// (one it sends once, or the last of all): CheckRetry sees every attempt.
// It returns the last attempt's response, the number of attempts, and
// CheckRetry's last verdict and error.
func (k *call) finish() (lastResp *http.Response, attempts int, retry bool, checkErr error) {
	k.mu.Lock()
	asked := k.checked == k.attempts
	lastResp, lastErr, attempts := k.resp, k.err, k.attempts
	k.mu.Unlock()
	if !asked && attempts > 0 {
		k.check(lastResp, lastErr)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return lastResp, attempts, k.retry, k.checkErr
}

// giveUp is Do's error when the retries ran out and the Client has no
// ErrorHandler: err, the last error, unwrapped from http.Client's url.Error
// when it is doErr, http.Client's.
func giveUp(req *Request, attempts int, err, doErr error) error {
	u := ""
	if req.URL != nil {
		u = req.URL.Redacted()
	}
	if err == nil {
		return fmt.Errorf("%s %s giving up after %d attempt(s)", req.Method, u, attempts)
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil && doErr == err {
		err = ue.Err
	}
	return fmt.Errorf("%s %s giving up after %d attempt(s): %w", req.Method, u, attempts, err)
}

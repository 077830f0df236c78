package resiliencehttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"

	"github.com/faf87a20/resilience"
)

// call is one RoundTrip: the request, its body's replay, and the response
// of the last attempt when that attempt is to be retried.
type call struct {
	t      *Transport
	req    *http.Request
	ctx    context.Context    // req's context, bounded by the call's timeout
	cancel context.CancelFunc // ends ctx; nil without a call timeout
	hostG  []resilience.Guard // the host's own guards
	single bool               // sent once, never retried

	buffered  []byte        // the request body, read into memory to be replayed
	first     io.ReadCloser // the first attempt's body, when it is not req.Body
	bodyTaken bool          // req.Body was closed or handed to the base transport

	held    *http.Response // the last attempt's response, which the retry may repeat
	heldErr *StatusError   // its error
	final   *StatusError   // the failure status of the response to return, if sent once
}

func (c *call) run() (*http.Response, error) {
	t := c.t
	c.ctx = c.req.Context()
	if t.timeout > 0 {
		c.ctx, c.cancel = t.withTimeout(c.ctx, t.timeout, t.callErr)
	}
	if t.hosts != nil && c.req.URL != nil {
		c.hostG = t.hosts.get(c.req.URL.Host)
	}
	c.single = !t.idempotent(c.req) || !sendable(c.req)
	if !c.single {
		if err := c.prepareBody(); err != nil {
			return c.finish(nil, err)
		}
	}
	var resp *http.Response
	var err error
	if c.single {
		resp, err = c.attempt(c.ctx)
	} else {
		resp, err = t.retry.Execute(c.ctx, c.attempt)
	}
	return c.finish(resp, err)
}

// prepareBody makes the request's body replayable, or marks the request to
// be sent once. A body without GetBody is read into memory up to the
// buffer's size; a larger one is sent once, the part read first.
func (c *call) prepareBody() error {
	req, limit := c.req, c.t.bodyBuffer
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return nil
	}
	if limit == 0 {
		c.single = true
		return nil
	}
	buf, err := io.ReadAll(io.LimitReader(req.Body, min(limit, math.MaxInt64-1)+1))
	if err != nil {
		c.bodyTaken = true
		_ = req.Body.Close()
		return err
	}
	if int64(len(buf)) <= limit {
		c.bodyTaken = true
		_ = req.Body.Close()
		c.buffered = buf
		return nil
	}
	c.single = true
	c.first = readCloser{io.MultiReader(bytes.NewReader(buf), req.Body), req.Body}
	return nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// request returns the request of this attempt: req on ctx, with a fresh
// copy of its body.
func (c *call) request(ctx context.Context) (*http.Request, error) {
	r := c.req.WithContext(ctx)
	c.t.setPriority(r)
	switch {
	case c.buffered != nil:
		r.Body, _ = c.getBuffered()
		r.GetBody = c.getBuffered
	case c.first != nil:
		r.Body = c.first
		c.bodyTaken = true
	case r.Body == nil || r.Body == http.NoBody:
	case !c.bodyTaken:
		c.bodyTaken = true
	default:
		body, err := c.req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

func (c *call) getBuffered() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(c.buffered)), nil
}

// attempt is one try: through the guards, under the attempt's timeout, to
// the base transport. A response to be retried is returned as its
// *StatusError, and kept until the next attempt begins or the call ends.
func (c *call) attempt(ctx context.Context) (*http.Response, error) {
	t := c.t
	c.drop()
	dones, err := c.enter(ctx)
	if err != nil {
		return nil, c.verdict(err)
	}
	l := lease{dones: dones}
	actx := ctx
	if t.attemptTimeout > 0 {
		actx, l.cancel = t.withTimeout(ctx, t.attemptTimeout, t.attemptErr)
	}
	r, err := c.request(actx)
	if err != nil {
		l.end(err)
		return nil, resilience.Permanent(err)
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp == nil {
		err = errNoResponse
	}
	if err != nil {
		if cause := t.deadlineCause(actx); cause != nil {
			err = cause
		}
		l.end(err)
		return nil, c.verdict(err)
	}
	if cause := t.deadlineCause(actx); cause != nil {
		// The deadline passed as the response arrived: its body could not
		// be read. Drop it like any late response.
		t.discard(resp)
		l.end(cause)
		return nil, c.verdict(cause)
	}
	retry := t.retryIf(resp, nil)
	var se *StatusError
	var outcome error
	if failure(resp, retry) {
		se = newStatusError(c.req, resp, 0)
		outcome = se
	}
	if retry && !c.single {
		se.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), t.now())
		c.hold(resp, l, actx, se)
		return nil, se
	}
	if retry {
		c.final = se
	}
	t.wrap(resp, l, actx, outcome)
	return resp, nil
}

var errNoResponse = errors.New("resiliencehttp: base transport returned neither a response nor an error")

// enter asks every guard, shared ones first, to admit the attempt. When one
// refuses, those that admitted it are told the refusal as its outcome, as
// in a composition of guarded policies.
func (c *call) enter(ctx context.Context) ([]func(error), error) {
	shared := c.t.guards
	n := len(shared) + len(c.hostG)
	if n == 0 {
		return nil, nil
	}
	dones := make([]func(error), 0, n)
	for _, guards := range [2][]resilience.Guard{shared, c.hostG} {
		for _, g := range guards {
			done, err := g.Enter(ctx)
			if err != nil {
				lease{dones: dones}.end(err)
				return nil, err
			}
			dones = append(dones, done)
		}
	}
	return dones, nil
}

// verdict marks an attempt's error as final when it is not to be retried:
// a throttle's refusal always, before the user's predicate is asked, for a
// retry would add to the load the throttle sheds; any other error as the
// predicate says.
func (c *call) verdict(err error) error {
	if c.single || !errors.Is(err, resilience.ErrThrottled) && c.t.retryIf(nil, err) {
		return err
	}
	return resilience.Permanent(err)
}

// hold keeps a response the retry may repeat. Its body is read into memory
// up to the drain limit, so that a body that fits gives its connection back
// before the retry's wait, and stays readable if no retry follows; a longer
// body keeps the rest unread, and its guards and context, until the
// response is dropped or returned.
func (c *call) hold(resp *http.Response, l lease, actx context.Context, se *StatusError) {
	c.held, c.heldErr = resp, se
	orig := resp.Body
	if orig == nil || orig == http.NoBody {
		l.end(se)
		return
	}
	limit := c.t.drainLimit
	var buf []byte
	var err error
	if limit > 0 {
		buf, err = io.ReadAll(io.LimitReader(orig, min(limit, math.MaxInt64-1)+1))
	}
	switch {
	case err != nil:
		_ = orig.Close()
		l.end(se)
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), errReader{err}))
	case limit > 0 && int64(len(buf)) <= limit:
		_ = orig.Close()
		l.end(se)
		resp.Body = io.NopCloser(bytes.NewReader(buf))
	default:
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(buf), orig), orig}
		c.t.wrap(resp, l, actx, se)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// drop closes the response held from the previous attempt, which the retry
// is about to repeat.
func (c *call) drop() {
	if c.held != nil {
		_ = c.held.Body.Close()
		c.held, c.heldErr = nil, nil
	}
}

// finish turns what the retry returned into RoundTrip's answer: the last
// response when the retries ran out on a status (or its error, with
// WithStatusErrors), and the call's context ended now or, for a response
// returned, when its body is done.
func (c *call) finish(resp *http.Response, err error) (*http.Response, error) {
	resp = c.takeHeld(resp, err)
	c.closeBody()
	if resp != nil && c.final != nil && c.t.statusErrors {
		c.t.discard(resp)
		if err == nil {
			err = c.final
		}
		resp = nil
	}
	if resp == nil {
		return nil, c.end(err)
	}
	c.endWith(resp)
	return resp, nil
}

// takeHeld returns the response held from the last attempt when the retry
// ran out on it and returned no response, and drops it otherwise.
func (c *call) takeHeld(resp *http.Response, err error) *http.Response {
	if c.held == nil {
		return resp
	}
	if resp == nil && ranOut(err, c.heldErr) {
		resp, c.final = c.held, c.heldErr
		c.held = nil
		return resp
	}
	c.drop()
	return resp
}

// closeBody closes the request's body if no attempt took it, as the
// RoundTripper contract asks.
func (c *call) closeBody() {
	if !c.bodyTaken && c.req.Body != nil && c.req.Body != http.NoBody {
		c.bodyTaken = true
		_ = c.req.Body.Close()
	}
}

// end ends the call's context and returns the call's error err, made to
// match the call's timeout when that ended the call.
func (c *call) end(err error) error {
	if c.cancel == nil {
		return err
	}
	if cause := context.Cause(c.ctx); cause == c.t.callErr && !errors.Is(err, resilience.ErrTimeout) {
		err = &causedError{cause: cause, err: err}
	}
	c.cancel()
	return err
}

// endWith makes the call's context end when resp's body is done with.
func (c *call) endWith(resp *http.Response) {
	if c.cancel == nil {
		return
	}
	if b, ok := resp.Body.(*body); ok {
		b.callCancel = c.cancel
	} else {
		c.cancel()
	}
}

// ranOut reports whether err is the retry's giving up, its attempts or
// budget spent, on the held response's error.
func ranOut(err error, held *StatusError) bool {
	var re *resilience.RetryError
	if !errors.As(err, &re) || re.Last != error(held) {
		return false
	}
	return re.Reason == resilience.ErrRetriesExhausted || re.Reason == resilience.ErrRetryBudgetExhausted
}

// causedError is an error that the call's deadline caused: it matches
// both.
type causedError struct{ cause, err error }

func (e *causedError) Error() string   { return e.cause.Error() + ": " + e.err.Error() }
func (e *causedError) Unwrap() []error { return []error{e.cause, e.err} }

// deadlineCause returns the transport's timeout error that ended ctx, or
// nil if ctx is live or ended for another reason.
func (t *Transport) deadlineCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	switch cause := context.Cause(ctx); cause {
	case error(t.callErr), error(t.attemptErr):
		return cause
	}
	return nil
}

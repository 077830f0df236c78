package retryablehttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

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
	if rawBody == nil {
		r.Body, r.GetBody, r.ContentLength = http.NoBody, noBody, 0
		return nil
	}
	get, length, err := bodyReader(rawBody)
	if err != nil {
		return err
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

// bodyReader returns a function that makes a fresh reader of rawBody, not
// nil, for every attempt, and the body's length, -1 when unknown (a
// ReaderFunc's). A reader of a kind SetBody does not know is read into
// memory.
func bodyReader(rawBody interface{}) (get func() (io.Reader, error), length int64, err error) {
	var data []byte
	switch b := rawBody.(type) {
	case ReaderFunc:
		return b, -1, nil
	case func() (io.Reader, error):
		return b, -1, nil
	case []byte:
		data = b
	case string:
		return func() (io.Reader, error) { return strings.NewReader(b), nil }, int64(len(b)), nil
	case *bytes.Buffer:
		data = b.Bytes()
	case io.Reader: // *bytes.Reader, *strings.Reader and any other
		if data, err = io.ReadAll(b); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, fmt.Errorf("cannot handle type %T", rawBody)
	}
	return func() (io.Reader, error) { return bytes.NewReader(data), nil }, int64(len(data)), nil
}

// noBody is the GetBody of an empty body.
func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

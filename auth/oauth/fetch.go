package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// DefaultFetchTimeout is the default of [Options.FetchTimeout].
const DefaultFetchTimeout = 30 * time.Second

// maxFetchBytes bounds the body of every answer of a metadata endpoint or
// an authorization server: discovery documents, registrations and token
// responses are small.
const maxFetchBytes = 1 << 20

// bounded carries the requests of discovery, registration and the token
// endpoint. Each must be answered in full, headers and body, within
// timeout, and with at most maxFetchBytes of body: the body is read here,
// under the request's deadline, so that a server that sends its headers
// and then stalls cannot hold a login or a refresh for longer. Requests to
// the MCP server itself (whose answers may be long streams) never go
// through it.
type bounded struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (b bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), b.timeout)
	defer cancel()
	resp, err := b.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, b.failed(ctx, req, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFetchBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, b.failed(ctx, req, err)
	}
	if len(body) > maxFetchBytes {
		return nil, &fetchError{url: where(req.URL), tooLarge: true}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// failed turns a failure caused by this request's own deadline into a
// *fetchError; other failures (the caller's context, the network) pass
// through.
func (b bounded) failed(ctx context.Context, req *http.Request, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Context().Err() == nil {
		return &fetchError{url: where(req.URL), timeout: b.timeout}
	}
	return err
}

// fetchError says that a metadata endpoint or an authorization server did
// not answer in full within the fetch timeout, or answered with too much.
// It names the URL it fetched (without query or credentials), never what
// was sent.
type fetchError struct {
	url      string
	timeout  time.Duration
	tooLarge bool
}

func (e *fetchError) Error() string {
	if e.tooLarge {
		return fmt.Sprintf("%s answered with more than %d bytes", e.url, maxFetchBytes)
	}
	return fmt.Sprintf("%s did not answer in full within %s (it stalled)", e.url, e.timeout)
}

// where is a URL for a message: scheme, host and path.
func where(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// fetcher returns the transport for a server's discovery, registration and
// token requests: the shared guarded transport, bounded.
func (c *Client) fetcher(srv *Server) (http.RoundTripper, error) {
	base, err := c.transport(srv)
	if err != nil {
		return nil, err
	}
	return bounded{base: base, timeout: c.opts.FetchTimeout}, nil
}

// fetchFailed returns the error for a fetch of what that err says stalled
// (KindUnavailable: a later attempt may succeed) or was too large
// (KindRefused), or nil when err holds no *fetchError.
func fetchFailed(server, what string, err error) *Error {
	var fe *fetchError
	switch {
	case !errors.As(err, &fe):
		return nil
	case fe.tooLarge:
		return refused(server, "cannot use "+what, fe)
	}
	return unavailable(server, "cannot fetch "+what, fe)
}

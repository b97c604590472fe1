package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// Default timeouts of [NewTransport].
const (
	DefaultConnectTimeout        = 5 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleConnTimeout       = 90 * time.Second
)

// ClientOptions configures [NewTransport] and [NewClient]. A nil
// *ClientOptions, and the zero value of every field, give the defaults.
type ClientOptions struct {
	// ConnectTimeout bounds resolving and connecting (connect_timeout).
	// Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// TLSHandshakeTimeout bounds the TLS handshake. Zero means
	// DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration

	// ResponseHeaderTimeout bounds the wait for a response's headers once
	// the request is written (request_timeout). A streamed body may take
	// longer: bound it with the request's context. Zero means
	// DefaultResponseHeaderTimeout.
	ResponseHeaderTimeout time.Duration

	// IdleConnTimeout is how long an idle pooled connection is kept. Zero
	// means DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration

	// MaxConnsPerHost bounds connections per host, dialling and idle
	// included. Zero means no limit.
	MaxConnsPerHost int

	// Proxy is the URL of an egress proxy (http or https). Every request
	// then goes through it, and the guard checks the proxy's address: the
	// proxy is the one that reaches the destination, and it must enforce
	// the network policy for names. IP-literal destinations are still
	// checked by the guard before the request is sent. Empty means no
	// proxy; proxy environment variables are never consulted.
	Proxy string

	// TLSConfig, if set, is cloned for TLS connections (for example to
	// trust a private CA). Nil means the system roots, TLS 1.2 or later.
	TLSConfig *tls.Config
}

func (o *ClientOptions) withDefaults() ClientOptions {
	var c ClientOptions
	if o != nil {
		c = *o
	}
	c.ConnectTimeout = orDefault(c.ConnectTimeout, DefaultConnectTimeout)
	c.TLSHandshakeTimeout = orDefault(c.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
	c.ResponseHeaderTimeout = orDefault(c.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	c.IdleConnTimeout = orDefault(c.IdleConnTimeout, DefaultIdleConnTimeout)
	return c
}

// orDefault returns d, or def when d is zero or negative: a timeout that
// is not positive takes its default.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// ErrRedirect is returned (wrapped in a *url.Error) for a response that
// redirects: redirects are never followed.
var ErrRedirect = errors.New("the server answered with a redirect, which is not followed; configure the final URL")

// NewTransport returns a round tripper that dials only through g, with the
// options' timeouts and proxy. It never retries a request that was written
// (HTTP/1.1 only, and the Idempotency-Key headers that would let net/http
// replay a POST on a broken connection are removed), and follows no
// redirects (that is the client's job; see [NewClient]).
func NewTransport(g *Guard, opts *ClientOptions) (http.RoundTripper, error) {
	if g == nil {
		return nil, errors.New("egress: a guard is required")
	}
	o := opts.withDefaults()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
			defer cancel()
			return g.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		IdleConnTimeout:       o.IdleConnTimeout,
		MaxConnsPerHost:       o.MaxConnsPerHost,
		MaxIdleConnsPerHost:   max(o.MaxConnsPerHost, http.DefaultMaxIdleConnsPerHost),
		ExpectContinueTimeout: 0,
		// HTTP/2 stays off: with one request per connection, what net/http
		// may retry on its own is exactly "nothing was written".
		ForceAttemptHTTP2: false,
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if o.TLSConfig != nil {
		tr.TLSClientConfig = o.TLSConfig.Clone()
		if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
			tr.TLSClientConfig.MinVersion = tls.VersionTLS12
		}
	}
	if o.Proxy != "" {
		u, err := url.Parse(o.Proxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("egress proxy must be an http or https URL")
		}
		tr.Proxy = http.ProxyURL(u)
	}
	return &guarded{base: tr, guard: g, proxied: o.Proxy != ""}, nil
}

// NewClient returns an HTTP client over [NewTransport] that follows no
// redirects: a redirect ends the request with [ErrRedirect]. It has no
// overall timeout, because a response may be a long stream; bound each
// request with its context.
func NewClient(g *Guard, opts *ClientOptions) (*http.Client, error) {
	tr, err := NewTransport(g, opts)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr, CheckRedirect: RefuseRedirect}, nil
}

// RefuseRedirect is an http.Client CheckRedirect function that follows no
// redirect.
func RefuseRedirect(*http.Request, []*http.Request) error { return ErrRedirect }

// guarded removes replay-enabling headers and, behind a proxy, checks
// IP-literal destinations (names are the proxy's to resolve and police).
type guarded struct {
	base    *http.Transport
	guard   *Guard
	proxied bool
}

func (t *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.proxied {
		if ip, err := netip.ParseAddr(req.URL.Hostname()); err == nil {
			if err := t.guard.Check(ip); err != nil {
				closeBody(req)
				return nil, err
			}
		}
	}
	if hasReplayHeader(req.Header) && !idempotentMethod(req.Method) {
		// net/http replays a request with one of these headers after a
		// connection failure, even when the server may have acted on it.
		r := req.Clone(req.Context())
		r.Header.Del("Idempotency-Key")
		r.Header.Del("X-Idempotency-Key")
		req = r
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the transport's idle connections.
func (t *guarded) CloseIdleConnections() { t.base.CloseIdleConnections() }

func hasReplayHeader(h http.Header) bool {
	_, a := h["Idempotency-Key"]
	_, b := h["X-Idempotency-Key"]
	return a || b
}

func idempotentMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

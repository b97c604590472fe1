package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/auth/secrets"
)

// Options configures a [Client]. Store is required; the zero value of every
// other field gives the documented default.
type Options struct {
	// Store keeps tokens and client registrations. Required.
	Store secrets.Store

	// Development lets every connection reach loopback addresses (the
	// configuration's development mode). Private ranges still need a
	// server's AllowPrivateNetworks.
	Development bool

	// HTTP sets the timeouts and the egress proxy of the connections to
	// metadata and authorization servers. Nil means egress defaults.
	HTTP *egress.ClientOptions

	// Resolver resolves host names for the egress guard. Nil means the
	// system resolver.
	Resolver egress.Resolver

	// Open shows the authorization URL to the person logging in (prints
	// it, opens a browser: see [Opener]). It gets only https URLs, or http
	// URLs to loopback, and must not pass them through a shell. Nil means
	// logins fail.
	Open func(ctx context.Context, authURL string) error

	// Consent asks the person whether a server may get more scopes
	// (step-up authorization). Nil means never: a call that needs more
	// scopes fails with KindInsufficientScope.
	Consent func(ctx context.Context, req *StepUp) (bool, error)

	// LoginTimeout bounds how long a login waits for the person. Zero
	// means ten minutes.
	LoginTimeout time.Duration

	// FetchTimeout bounds each request to a metadata endpoint or an
	// authorization server (discovery, registration, the token endpoint),
	// from sending it to the last byte of its answer. Zero means
	// DefaultFetchTimeout.
	FetchTimeout time.Duration

	// Now is the clock for token expiry. Nil means time.Now.
	Now func() time.Time

	// Refreshed, when set, is told each time the client renewed a
	// server's access token (refresh_token, or client_credentials issued
	// again), or tried to and could not: err says why. It must not block.
	Refreshed func(server string, err error)
}

// StepUp is what [Options.Consent] is asked to approve.
type StepUp struct {
	// Server is the server's id.
	Server string
	// Granted are the scopes the current token has.
	Granted []string
	// Added are the scopes the server asked for that the token lacks.
	Added []string
	// Requested is what the login will ask for: Granted and Added, with
	// the configured scopes.
	Requested []string
}

// Client is the host's OAuth client. It is safe for concurrent use; one
// Client should serve the whole process, so that refreshes and logins of one
// partition are serialised.
type Client struct {
	opts Options

	mu       sync.Mutex
	parts    map[string]*partState    // by Partition.Key()
	logins   map[string]chan struct{} // login locks by binding key
	bindings map[string]string        // binding key → issuer
	clients  map[transportKey]http.RoundTripper
	futile   map[string]bool // step-ups that did not satisfy the server
}

// New returns a client.
func New(opts *Options) (*Client, error) {
	if opts == nil || opts.Store == nil {
		return nil, errors.New("oauth: a secret store is required")
	}
	o := *opts
	if o.LoginTimeout <= 0 {
		o.LoginTimeout = 10 * time.Minute
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{
		opts:     o,
		parts:    map[string]*partState{},
		logins:   map[string]chan struct{}{},
		bindings: map[string]string{},
		clients:  map[transportKey]http.RoundTripper{},
		futile:   map[string]bool{},
	}, nil
}

// guard returns the egress guard for a server's connections.
func (c *Client) guard(srv *Server) *egress.Guard {
	return egress.New(&egress.Options{
		AllowLoopback: c.opts.Development,
		AllowPrivate:  srv.AllowPrivateNetworks,
		Resolver:      c.opts.Resolver,
	})
}

// transportKey tells the shared transports apart: by whether they may
// reach private networks, and by the certificate authorities they trust.
type transportKey struct {
	private bool
	roots   *x509.CertPool
}

// transport returns the shared guarded transport for a server's OAuth
// connections.
func (c *Client) transport(srv *Server) (http.RoundTripper, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := transportKey{private: srv.AllowPrivateNetworks, roots: srv.RootCAs}
	if t := c.clients[key]; t != nil {
		return t, nil
	}
	var o egress.ClientOptions
	if c.opts.HTTP != nil {
		o = *c.opts.HTTP
	}
	if srv.RootCAs != nil {
		o.TLSConfig = &tls.Config{RootCAs: srv.RootCAs, MinVersion: tls.VersionTLS12}
	}
	t, err := egress.NewTransport(c.guard(srv), &o)
	if err != nil {
		return nil, err
	}
	c.clients[key] = t
	return t, nil
}

// lockLogin serialises logins for one (tenant, user, server, resource). It
// returns the unlock function.
func (c *Client) lockLogin(ctx context.Context, key string) (func(), error) {
	c.mu.Lock()
	l := c.logins[key]
	if l == nil {
		l = make(chan struct{}, 1)
		c.logins[key] = l
	}
	c.mu.Unlock()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// partState is the in-memory state of one partition. lock (one slot) is
// held while the token is read, refreshed or replaced, which makes refresh
// single-flight: callers that find the token expired wait for the one
// refresh and then use its result.
type partState struct {
	p     Partition
	lock  chan struct{}
	rec   *record // nil until loaded
	dirty bool    // rec is newer than the store
}

func (c *Client) partition(p Partition) *partState {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := p.Key()
	ps := c.parts[k]
	if ps == nil {
		ps = &partState{p: p, lock: make(chan struct{}, 1)}
		c.parts[k] = ps
	}
	return ps
}

func (ps *partState) acquire(ctx context.Context) error {
	select {
	case ps.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ps *partState) release() { <-ps.lock }

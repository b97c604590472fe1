package airlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/upstream"
)

// AuthOptions configure how a host deals with remote servers' credentials.
// The zero value works: credentials live in an encrypted file store in the
// state directory, and a call that needs a person to log in ends
// auth_required.
type AuthOptions struct {
	// Store keeps OAuth tokens and client registrations, per credential
	// partition (tenant, user, server, resource, issuer). Nil means the
	// encrypted file store STATE/credentials, whose key comes from
	// $AIRLOCK_SECRET_KEY or a key file (see auth/secrets).
	Store secrets.Store
	// Open shows an authorization URL to the person (see oauth.Opener).
	// It is used only for step-up: a server asking for more scopes during
	// a call, when Consent agrees. Nil means no logins from within calls.
	Open func(ctx context.Context, authURL string) error
	// Consent asks the person whether a server may get more scopes than
	// were granted. Nil means never: the call ends auth_required and says
	// which scopes to log in for.
	Consent func(ctx context.Context, req *oauth.StepUp) (bool, error)
	// Resolver resolves host names for the egress guard. Nil means the
	// system resolver.
	Resolver egress.Resolver
}

// httpClient builds the HTTP client of a remote server's connection: every
// connection dialled through the egress guard (loopback only in development
// mode, private networks only when the server allows them), the
// configured timeouts and proxy, the partition's token on every request
// when the server uses OAuth, and no redirects followed.
func (h *Host) httpClient(srv *config.Server) (*http.Client, error) {
	return h.httpClientFor(srv, h.creds.who)
}

// httpClientFor is httpClient with the token of who.
func (h *Host) httpClientFor(srv *config.Server, who Principal) (*http.Client, error) {
	guard := egress.New(&egress.Options{
		AllowLoopback: h.cfg.Development,
		AllowPrivate:  srv.AllowPrivateNetworks,
		Resolver:      h.opts.Auth.Resolver,
	})
	roots, err := h.creds.roots(srv)
	if err != nil {
		return nil, err
	}
	copts := &egress.ClientOptions{
		ConnectTimeout:        srv.ConnectTimeout,
		ResponseHeaderTimeout: max(srv.RequestTimeout, srv.MaxCallDuration),
		Proxy:                 h.cfg.Egress.Proxy,
	}
	if roots != nil {
		copts.TLSConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	base, err := egress.NewTransport(guard, copts)
	if err != nil {
		return nil, err
	}
	rt := base
	if srv.OAuth != nil {
		client, err := h.creds.client()
		if err != nil {
			return nil, err
		}
		osrv, err := h.creds.server(srv)
		if err != nil {
			return nil, err
		}
		if rt, err = client.Transport(osrv, owner(who), base); err != nil {
			return nil, err
		}
	}
	return &http.Client{Transport: rt, CheckRedirect: egress.RefuseRedirect}, nil
}

// dialRemote connects to a remote server.
func (h *Host) dialRemote(ctx context.Context, s *server, uopts *upstream.Options) (*upstream.Conn, error) {
	client, err := h.httpClient(&s.cfg)
	if err != nil {
		return nil, &upstream.StartError{Server: s.cfg.ID, Msg: fmt.Sprintf("server %s: %v", s.cfg.ID, err), Err: err}
	}
	return upstream.DialHTTP(ctx, &s.cfg, client, uopts)
}

// authError reports whether err says a person must log in (or the server
// wants scopes nobody consented to), as an auth_required error.
func authError(server, tool string, err error) *Error {
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		return nil
	}
	switch oe.Kind {
	case oauth.KindAuthRequired, oauth.KindInsufficientScope:
		return newError(AuthRequired, server, tool, err, "%s", oe.Error())
	}
	return newError(ConnectionError, server, tool, err, "%s", oe.Error())
}

// refusedUnread reports whether the server refused a request before
// acting on it as a call: for its credentials (401, 403, which the OAuth
// transport turns into an oauth.Error), or for its session (HTTP 404, the
// session was gone). A 404 is taken at its word only where sending the
// call again is harmless (see sendCall).
func refusedUnread(err error) bool {
	var oe *oauth.Error
	var se *upstream.StatusError
	return errors.Is(err, mcp.ErrSessionMissing) || errors.As(err, &oe) || notDialed(err) ||
		errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden)
}

// notDialed reports whether err is a request that never reached the
// network: no connection could be made for it (the address refused it or
// could not be reached, the name did not resolve, the egress guard
// refused it), so nothing of it was sent.
func notDialed(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var refused *egress.RefusedError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns) || errors.As(err, &refused)
}

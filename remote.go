package airlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/secrets"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/catalog"
	"github.com/airlockhq/airlock/internal/upstream"
	storepkg "github.com/airlockhq/airlock/store"
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

// refusedUnread reports whether a failed call is known not to have been
// acted on: the server refused it for its session (HTTP 404, the session
// was gone) or for its credentials (401, 403), or it was never sent.
func refusedUnread(err error) bool {
	var oe *oauth.Error
	return errors.Is(err, mcp.ErrSessionMissing) || errors.As(err, &oe)
}

// connFor returns the live connection a call to srv goes out on. A server
// still starting (warm start) is waited for; one that needed a login is
// tried again, since someone may have logged in meanwhile.
func (h *Host) connFor(ctx context.Context, srv *server, tool *catalog.Tool) (*link, *Error) {
	l := srv.currentLink()
	if l == nil {
		select {
		case <-srv.ready:
		case <-ctx.Done():
			return nil, newError(Cancelled, tool.Server, tool.Name, ctx.Err(), "%s: cancelled while server %s was starting", tool.Name, tool.Server)
		case <-time.After(srv.cfg.StartTimeout()):
		}
		l = srv.currentLink()
	}
	if srv.getStatus().Status == StatusAuthRequired {
		return h.reconnect(ctx, srv, tool.Name)
	}
	if l == nil {
		return nil, newError(ConnectionError, tool.Server, tool.Name, nil, "server %s is not connected", tool.Server)
	}
	if f := l.conn.Fault(); f != nil {
		if f.Kind == upstream.FaultSessionExpired {
			// The server is there and only the session is gone: the
			// call waits for the new session rather than failing.
			if next, err := h.awaitReconnect(ctx, srv, l); err == nil {
				return next, nil
			}
		}
		return nil, newError(ConnectionError, tool.Server, tool.Name, f, "server %s is not available: %s", tool.Server, f.Msg)
	}
	return l, nil
}

// reconnect connects a server that needed a login, once at a time.
func (h *Host) reconnect(ctx context.Context, s *server, tool string) (*link, *Error) {
	s.reconnectMu.Lock()
	defer s.reconnectMu.Unlock()
	if st := s.getStatus(); st.Status != StatusAuthRequired {
		if l := s.currentLink(); l != nil && l.conn.Fault() == nil {
			return l, nil
		}
		return nil, newError(ConnectionError, s.cfg.ID, tool, st.Err, "server %s is not available", s.cfg.ID)
	}
	if h.life.Err() != nil {
		return nil, newError(Cancelled, s.cfg.ID, tool, h.life.Err(), "the host is closing")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
	defer cancel()
	began := time.Now()
	conn, tools, err := h.connect(ctx, s)
	if err != nil {
		// The status says what stands in the way now: another login, or
		// a failure that logging in will not mend.
		s.setStatus(func(st *ServerStatus) { st.Status, st.Err = statusOf(err), err })
		err.Tool = tool
		return nil, err
	}
	if old := s.current(); old != nil {
		old.Close()
	}
	s.use(conn)
	s.setTools(tools)
	st := s.setStatus(func(st *ServerStatus) {
		st.Status, st.Err, st.ProtocolVersion, st.Tools, st.LastOK = StatusReady, nil, conn.ProtocolVersion(), len(tools), time.Now()
	})
	h.audit(ctx, storepkg.Event{Event: storepkg.EventServerReady, Server: s.cfg.ID, DurationMS: time.Since(began).Milliseconds(),
		Fields: map[string]any{"protocol_version": st.ProtocolVersion, "tools": len(tools)}})
	s.watchers.Go(func() { h.supervise(h.life, s) })
	if s.cfg.HealthCheck.Interval > 0 {
		s.watchers.Go(func() { h.checkHealth(h.life, s) })
	}
	return s.currentLink(), nil
}

// awaitReconnect waits, at most the server's start timeout, for the
// supervisor to replace the connection old with a working one.
func (h *Host) awaitReconnect(ctx context.Context, s *server, old *link) (*link, error) {
	deadline := time.Now().Add(s.cfg.StartTimeout())
	for {
		if l := s.currentLink(); l != nil && l != old && l.conn.Fault() == nil {
			return l, nil
		}
		switch s.getStatus().Status {
		case StatusFailed, StatusAuthRequired, StatusStopped:
			return nil, errors.New("the server did not come back")
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the server did not come back in time")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// loginPending returns the server whose local tool names name would have
// (SERVER__TOOL) when that server still waits for a login, or nil.
func (s *Snapshot) loginPending(name string) *server {
	id, _, ok := strings.Cut(name, "__")
	if !ok {
		return nil
	}
	if srv := s.servers[id]; srv != nil && srv.getStatus().Status == StatusAuthRequired {
		return srv
	}
	return nil
}

package issues

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
)

// Name is the implementation name the server reports to clients.
const Name = "airlock-issues"

// Defaults for [Options].
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultSessionTimeout    = 30 * time.Minute
)

// Options configures a [Server]. A nil *Options, and the zero value of each
// field, give the documented defaults.
type Options struct {
	// Data is the SQLite database file, created if missing, or MemoryData
	// (the default) for a database that lives as long as the server.
	Data string

	// AllowedOrigins are the browser origins ("https://app.example.com")
	// allowed to call the MCP endpoint. A request with any other Origin is
	// refused with 403; a request without Origin (not a browser) is not
	// affected. Empty allows no browser origin.
	AllowedOrigins []string

	// Stateful keeps an MCP session per client (Mcp-Session-Id) for clients
	// that need server-to-client messages. The default is stateless: every
	// request stands alone and JSON responses are used, so that any replica
	// can serve any request. Either way, every request is authenticated on
	// its own; a session id is never a credential, and the SDK refuses a
	// session's requests from another principal.
	Stateful bool

	// SessionTimeout closes stateful sessions idle this long. Zero means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration

	// MaxBodyBytes bounds request bodies. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// HTTP server timeouts. Zero means the Default… constants. The write
	// timeout is lifted for the long-lived event streams of stateful
	// sessions.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration

	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once its context is done. Zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// Logger receives structured logs; never tokens. Nil discards them.
	Logger *slog.Logger

	// Version is the implementation version reported to clients. Empty
	// means "dev".
	Version string
}

// Server is the remote issue service: an MCP server over Streamable HTTP
// that is an OAuth 2.0 resource server. Create it with [New], serve it with
// [Server.Serve] (or mount [Server.Handler]), and [Server.Close] it.
type Server struct {
	verifier    *bearer.Verifier
	store       *store
	mcp         *mcp.Server
	handler     http.Handler
	logger      *slog.Logger
	origins     []string
	metadataURL string
	maxBody     int64
	opts        Options
}

// New returns a server whose tokens verifier checks. The verifier must
// have a tenant claim: every issue belongs to the tenant of the token that
// created it, and only that tenant sees it.
func New(ctx context.Context, verifier *bearer.Verifier, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if verifier == nil {
		return nil, errors.New("a token verifier is required")
	}
	if verifier.TenantClaim() == "" {
		return nil, errors.New("the token verifier needs a tenant claim")
	}
	if o.Data == "" {
		o.Data = MemoryData
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	o.ReadHeaderTimeout = orDefault(o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	o.ReadTimeout = orDefault(o.ReadTimeout, DefaultReadTimeout)
	o.WriteTimeout = orDefault(o.WriteTimeout, DefaultWriteTimeout)
	o.IdleTimeout = orDefault(o.IdleTimeout, DefaultIdleTimeout)
	o.ShutdownTimeout = orDefault(o.ShutdownTimeout, DefaultShutdownTimeout)
	o.SessionTimeout = orDefault(o.SessionTimeout, DefaultSessionTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	origins, err := normalizeOrigins(o.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	mdURL, err := bearer.MetadataURL(verifier.Resource())
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, o.Data)
	if err != nil {
		return nil, err
	}

	s := &Server{
		verifier:    verifier,
		store:       st,
		logger:      o.Logger,
		origins:     origins,
		metadataURL: mdURL,
		maxBody:     o.MaxBodyBytes,
		opts:        o,
	}
	s.mcp = mcp.NewServer(
		&mcp.Implementation{Name: Name, Title: "Airlock issues", Version: o.Version},
		&mcp.ServerOptions{
			Instructions: "Issues of your tenant, by project. Ids look like ISSUE-42. " +
				"create_issue needs a fresh idempotency_key per new issue.",
			Logger: slog.New(sdkLogHandler{o.Logger.Handler()}),
			// No logging capability: diagnostics go to the server's log,
			// never to clients.
			Capabilities: &mcp.ServerCapabilities{},
		},
	)
	if err := s.addTools(); err != nil {
		st.close()
		return nil, err
	}
	s.handler = s.buildHandler()
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// normalizeOrigins checks and lower-cases allowed origins: each must be
// scheme://host[:port] with http or https and nothing else.
func normalizeOrigins(in []string) ([]string, error) {
	var out []string
	for _, o := range in {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Host, "*") {
			return nil, fmt.Errorf("allowed origin %q must look like https://app.example.com (scheme, host and optional port; no wildcards)", o)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}

// mcpHandler is the SDK's Streamable HTTP handler, stateless with JSON
// responses unless the server is stateful.
func (s *Server) mcpHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                    !s.opts.Stateful,
		JSONResponse:                 !s.opts.Stateful,
		SessionTimeout:               s.opts.SessionTimeout,
		MaxRequestBodyBytes:          s.maxBody,
		PropagateRequestCancellation: true,
		Logger:                       slog.New(sdkLogHandler{s.logger.Handler()}),
		// DisableLocalhostProtection stays false: the SDK's DNS-rebinding
		// check remains on behind this server's own.
	})
	if !s.opts.Stateful {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			// A session's event stream stays open for as long as the
			// session; the session timeout bounds it instead. (The read
			// deadline would otherwise end the stream's context too.)
			rc := http.NewResponseController(w)
			rc.SetWriteDeadline(time.Time{})
			rc.SetReadDeadline(time.Time{})
		}
		h.ServeHTTP(w, r)
	})
}

// Serve serves HTTP on ln until ctx is done, then shuts down gracefully:
// it stops accepting connections and waits up to the shutdown timeout for
// requests in flight. It logs the bound address ("listening", addr=…). It
// does not close the Server.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.logger.Info("listening", "addr", ln.Addr().String(), "endpoint", Endpoint,
		"resource", s.verifier.Resource(), "issuer", s.verifier.Issuer(), "stateful", s.opts.Stateful)

	// Fetch the issuer's keys now so that a misconfiguration shows at
	// start; a failure is not fatal (the issuer may come up later) and
	// /readyz reports it.
	warm, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := s.verifier.Ready(warm); err != nil {
		s.logger.Warn("issuer keys not available yet", "error", err)
	}
	cancel()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.logger.Warn("shutdown timed out; closing connections", "error", err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close releases the store. Call it after Serve has returned.
func (s *Server) Close() error { return s.store.close() }

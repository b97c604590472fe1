package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/cors"

	"github.com/airlockhq/airlock/auth/bearer"
)

// Endpoint is the path of the MCP endpoint.
const Endpoint = "/mcp"

// sessionHeader carries a 2025-11-25 session's id.
const sessionHeader = "Mcp-Session-Id"

// Timeouts of the HTTP server: a request's headers must arrive within
// headerTimeout and its body within bodyTimeout; a keep-alive connection
// is closed after idleTimeout without a request. Responses have no write
// timeout: a call's answer streams back as long as the call runs.
const (
	headerTimeout = 10 * time.Second
	bodyTimeout   = 30 * time.Second
	idleTimeout   = 2 * time.Minute
	closeTimeout  = 5 * time.Second // after the drain, for connections to close
)

// Handler returns the gateway's HTTP handler:
//
//	/mcp      the MCP endpoint, both protocol eras
//	/healthz  200 while the process runs
//	/readyz   200 once the catalog is listed, 503 while draining
//
// Every request must name a loopback host in its Host header (the gateway
// has no inbound authentication, so a page that rebinds its own DNS name to
// 127.0.0.1 is refused). Requests to /mcp then pass the Origin allowlist
// (serve.allowed_origins; a request without Origin, from any client that is
// not a web page, passes), CORS for exactly those origins, and the body
// limit, and go to the SDK's Streamable HTTP handler: a request with a
// session id, or an initialize, to the stateful one (a 2025-11-25 session,
// ended after serve.session_idle_timeout without a request); anything else
// to the stateless one (a 2026-07-28 request, which carries its protocol
// version, client and capabilities with it). Sessions and 2026-07-28
// subscription streams together are at most serve.max_sessions. Both serve the same mcp.Server. Every
// call returns the same handler.
func (g *Gateway) Handler() http.Handler { return g.handler() }

func (g *Gateway) buildHandler() http.Handler {
	stateful := mcp.NewStreamableHTTPHandler(g.mcpServer, &mcp.StreamableHTTPOptions{
		Logger:              g.log,
		SessionTimeout:      g.opts.Serve.SessionIdleTimeout,
		MaxRequestBodyBytes: g.opts.MaxBodyBytes,
	})
	stateless := mcp.NewStreamableHTTPHandler(g.mcpServer, &mcp.StreamableHTTPOptions{
		Logger:              g.log,
		Stateless:           true,
		MaxRequestBodyBytes: g.opts.MaxBodyBytes,
		// The request is the call: a client that goes away cancels it.
		PropagateRequestCancellation: true,
	})
	var endpoint http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.route(w, r, stateful, stateless)
	})
	if origins := g.opts.Serve.AllowedOrigins; len(origins) > 0 {
		endpoint = cors.New(cors.Options{
			AllowedOrigins: origins,
			AllowedMethods: []string{http.MethodPost, http.MethodGet, http.MethodDelete},
			AllowedHeaders: []string{"Content-Type", "Accept", sessionHeader, "Mcp-Protocol-Version",
				"Mcp-Method", "Mcp-Name", "Last-Event-ID"},
			ExposedHeaders:   []string{sessionHeader},
			AllowCredentials: false,
			MaxAge:           600,
		}).Handler(endpoint)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", g.ready)
	mux.Handle(Endpoint, g.checkOrigin(endpoint))
	return g.checkHost(mux)
}

func (g *Gateway) mcpServer(*http.Request) *mcp.Server { return g.server }

func (g *Gateway) ready(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case g.snap.Load() == nil:
		http.Error(w, "starting", http.StatusServiceUnavailable)
	case g.calls.closing():
		http.Error(w, "draining", http.StatusServiceUnavailable)
	default:
		io.WriteString(w, "ready\n")
	}
}

// checkHost refuses a Host header that is not a loopback name.
func (g *Gateway) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearer.IsLoopbackHostPort(r.Host) {
			g.log.Warn("refused: the Host header is not a loopback name", "host", clip(r.Host), "remote", r.RemoteAddr)
			http.Error(w, "host not allowed: the gateway answers only requests for localhost, 127.0.0.1 or [::1]", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin refuses a request from a web page whose origin is not in
// serve.allowed_origins. A request without Origin is not from a web page.
func (g *Gateway) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vals := r.Header.Values("Origin"); len(vals) > 0 {
			if len(vals) != 1 || !slices.Contains(g.opts.Serve.AllowedOrigins, strings.ToLower(vals[0])) {
				g.log.Warn("refused: origin not allowed", "origin", clip(vals[0]), "remote", r.RemoteAddr)
				http.Error(w, "origin not allowed: list it in serve.allowed_origins to let this web page use the gateway", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// route sends a request to the handler of its era. A POST's body is read
// here, bounded in size and time, so that an initialize can be told from
// the rest.
func (g *Gateway) route(w http.ResponseWriter, r *http.Request, stateful, stateless http.Handler) {
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		if body, ok = g.readBody(w, r); !ok {
			return
		}
	}
	if r.Header.Get(sessionHeader) != "" {
		stateful.ServeHTTP(w, r)
		return
	}
	var req *jsonrpc.Request
	if mayOpen(body) {
		msg, _ := jsonrpc.DecodeMessage(body)
		req, _ = msg.(*jsonrpc.Request)
	}
	next := stateless
	switch {
	case req == nil:
	case req.Method == "initialize":
		next = stateful
		fallthrough
	case req.Method == "subscriptions/listen":
		// Both open something that lasts: a session, or a stream that
		// stays open until the client leaves. Together they are bounded.
		if !g.admit() {
			g.log.Warn("refused: too many sessions", "max_sessions", g.opts.Serve.MaxSessions, "remote", r.RemoteAddr)
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, req.ID, fmt.Sprintf(
				"too many sessions: the gateway holds serve.max_sessions (%d) sessions and subscriptions; end one (HTTP DELETE with its Mcp-Session-Id) or try again later",
				g.opts.Serve.MaxSessions))
			return
		}
		defer g.admitted()
	}
	next.ServeHTTP(w, r)
}

// mayOpen reports whether body may be an initialize or a
// subscriptions/listen request, the only ones route must tell from the
// rest, so that it decodes only those: the SDK decodes every request again,
// and a decode is most of what a call costs the gateway. A JSON string
// spells a method name either as it is or with a backslash escape, so a
// body that holds neither name and no backslash is neither request.
func mayOpen(body []byte) bool {
	return bytes.IndexByte(body, '\\') >= 0 ||
		bytes.Contains(body, []byte("initialize")) ||
		bytes.Contains(body, []byte("subscriptions/listen"))
}

// readBody reads a request body of at most MaxBodyBytes within bodyTimeout
// and puts it back for the handler that follows. It answers 413 for a body
// too large and 400 for one that cannot be read.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	max := g.opts.MaxBodyBytes
	tooLarge := fmt.Sprintf("request body exceeds %d bytes", max)
	if r.ContentLength > max {
		http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
		return nil, false
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(bodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "cannot read the request body", http.StatusBadRequest)
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// admit counts in an initialize, until it is answered, or a
// subscriptions/listen stream, while it lasts, if those and the sessions
// open are fewer than serve.max_sessions.
func (g *Gateway) admit() bool {
	g.sessionMu.Lock()
	defer g.sessionMu.Unlock()
	n := g.opening
	for ss := range g.server.Sessions() {
		if ss.ID() != "" { // a stateful session; stateless ones have none
			n++
		}
	}
	if n >= g.opts.Serve.MaxSessions {
		return false
	}
	g.opening++
	return true
}

func (g *Gateway) admitted() {
	g.sessionMu.Lock()
	g.opening--
	g.sessionMu.Unlock()
}

// writeError answers a request with a JSON-RPC error, encoded by the SDK.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, msg string) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// Serve serves Handler on ln until ctx ends, then drains: the listener
// closes, /readyz answers 503, new calls are refused, calls in flight get
// up to the drain timeout to finish (then they are cancelled), and every
// session ends.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	g.log.Info("listening", "addr", ln.Addr().String(), "endpoint", Endpoint)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	g.log.Info("draining")
	shut, cancel := context.WithCancel(context.Background())
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(shut) }()
	g.drain()
	for ss := range g.server.Sessions() {
		ss.Close()
	}
	select {
	case <-shutdown:
	case <-time.After(closeTimeout):
		cancel()
		srv.Close()
		<-shutdown
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	g.log.Info("stopped")
	return nil
}

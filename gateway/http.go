package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
//	/mcp                                        the MCP endpoint, both protocol eras
//	/healthz                                    200 while the process runs
//	/readyz                                     200 once the catalog is listed (and, with
//	                                            inbound authentication, the issuer's keys
//	                                            are held), 503 while draining
//	/.well-known/oauth-protected-resource[/…]   with inbound authentication: RFC 9728
//	                                            metadata (public)
//	/metrics                                    with Options.Metrics: Prometheus metrics
//	                                            (see Options.MetricsToken)
//	Options.PagesPrefix…                        with Options.Pages: the operator console
//
// Every request but a scrape with Options.MetricsToken must name in its Host header a loopback host or, with
// inbound authentication, the host of serve.auth.resource (a page that
// rebinds its own DNS name to 127.0.0.1 is refused). Requests to /mcp then
// pass the Origin allowlist (serve.allowed_origins; a request without
// Origin, from any client that is not a web page, passes, and so does one
// from the loopback origin the request is for: the gateway's own), CORS for
// exactly those origins, with inbound authentication the access token (Verifier's
// middleware: 401 with a challenge naming the metadata, 403
// insufficient_scope without serve.auth.scopes), and the body limit, and
// go to the SDK's Streamable HTTP handler: a request with a
// session id, or an initialize of an older protocol, to the stateful one (a
// 2025-11-25 session, ended after serve.session_idle_timeout without a
// request); anything else to the stateless one (a 2026-07-28 request, which
// carries its protocol version, client and capabilities with it, and which
// answers an initialize as the method it no longer is). Sessions and 2026-07-28
// subscription streams together are at most serve.max_sessions. Both serve
// the same mcp.Server. A session belongs to the principal that opened it:
// another principal's token with its id is refused (403), and nothing is
// sent. Every call returns the same handler.
func (g *Gateway) Handler() http.Handler { return g.handler() }

func (g *Gateway) buildHandler() http.Handler {
	// The Host check below is the DNS-rebinding protection; the SDK's own,
	// which knows only loopback names, would refuse the resource's host on
	// a loopback listener (behind a reverse proxy on the same machine).
	resourceServer := g.opts.Verifier != nil
	stateless := mcp.NewStreamableHTTPHandler(g.mcpServer, &mcp.StreamableHTTPOptions{
		Logger:                     g.log,
		Stateless:                  true,
		MaxRequestBodyBytes:        g.opts.MaxBodyBytes,
		DisableLocalhostProtection: resourceServer,
		// The request is the call: a client that goes away cancels it.
		PropagateRequestCancellation: true,
	})
	var endpoint http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.route(w, r, stateless)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", g.ready)
	hosts := bearer.HostCheck{Logger: g.log,
		Message: "host not allowed: the gateway answers only requests for localhost, 127.0.0.1 or [::1]"}
	if v := g.opts.Verifier; v != nil {
		// The resource server: its metadata for clients to find the
		// authorization server, and the token (then the required scopes)
		// checked before the body is read.
		var scopes []string
		if a := g.opts.Serve.Auth; a != nil {
			scopes = a.Scopes
		}
		md := auth.ProtectedResourceMetadataHandler(v.Metadata("Airlock", scopes))
		for _, p := range bearer.MetadataPaths(v.Resource(), Endpoint) {
			mux.Handle(p, md)
		}
		endpoint = v.Middleware(&bearer.MiddlewareOptions{Scopes: scopes, Required: scopes})(endpoint)
		host := resourceHost(v)
		hosts.Hosts = []string{host}
		hosts.Message = "host not allowed: the gateway answers only requests for " + host + " (serve.auth.resource), localhost, 127.0.0.1 or [::1]"
	}
	mux.Handle(Endpoint, bearer.OriginCheck{Allowed: g.opts.Serve.AllowedOrigins, Logger: g.log, SameLoopbackOrigin: true,
		Message: "origin not allowed: list it in serve.allowed_origins to let this web page use the gateway"}.Wrap(endpoint))
	if g.opts.Pages != nil && g.opts.PagesPrefix != "" {
		mux.Handle(g.opts.PagesPrefix, g.opts.Pages)
	}
	checked := hosts.Wrap(mux)
	switch m := g.opts.Metrics; {
	case m == nil:
	case g.opts.MetricsToken != "":
		// A scraper addresses the gateway by its IP, which no Host check
		// would let through; the token is what keeps others out.
		scrape := metricsToken(g.opts.MetricsToken, m)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == MetricsPath {
				scrape.ServeHTTP(w, r)
				return
			}
			checked.ServeHTTP(w, r)
		})
	case g.opts.Verifier != nil:
		mux.HandleFunc(MetricsPath, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "metrics need a token of their own when serve.auth is set: name the variable that holds it in serve.metrics_token_env", http.StatusForbidden)
		})
	default:
		mux.Handle("GET "+MetricsPath, m)
	}
	return checked
}

// MetricsPath is where the HTTP endpoint serves Options.Metrics.
const MetricsPath = "/metrics"

// metricsToken serves next to GET requests that carry token as their
// bearer token, and refuses every other.
func metricsToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: scrape /metrics with GET", http.StatusMethodNotAllowed)
			return
		}
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer") // the scheme is case-insensitive (RFC 9110 §11.1)
		sum := sha256.Sum256([]byte(strings.TrimLeft(got, " ")))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock metrics"`)
			http.Error(w, "a bearer token is required: send the one in the variable serve.metrics_token_env names", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (g *Gateway) mcpServer(*http.Request) *mcp.Server { return g.server }

func (g *Gateway) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case g.snap.Load() == nil:
		http.Error(w, "starting", http.StatusServiceUnavailable)
	case g.calls.closing():
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case !g.keysReady(r.Context()):
		http.Error(w, "issuer keys unavailable", http.StatusServiceUnavailable)
	default:
		io.WriteString(w, "ready\n")
	}
}

// keysReady reports whether access tokens can be checked: the issuer's
// keys are held, or can be fetched now. Without inbound authentication
// there is nothing to check.
func (g *Gateway) keysReady(ctx context.Context) bool {
	v := g.opts.Verifier
	if v == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := v.Ready(ctx); err != nil {
		g.log.Warn("not ready: the issuer's keys are unavailable", "error", err)
		return false
	}
	return true
}

// route sends a request to the handler of its era. A POST's body is read
// here, bounded in size and time, so that an initialize can be told from
// the rest.
func (g *Gateway) route(w http.ResponseWriter, r *http.Request, stateless http.Handler) {
	var body []byte
	if r.Method == http.MethodPost {
		// A POST's handler returns once its answers are written: a drain
		// waits for that before it ends the sessions they go out on.
		g.posts.enter()
		defer g.posts.leave()
		var ok bool
		if body, ok = g.readBody(w, r); !ok {
			return
		}
		if refusal, id := checkMessage(body); refusal != nil {
			writeRefusal(w, http.StatusBadRequest, id, refusal)
			return
		}
	}
	if r.Header.Get(sessionHeader) != "" {
		g.sessions.serve(w, r, body)
		return
	}
	if g.offersTasks() && mayTask(body) && g.serveTasks(w, r, body) {
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
	case req.Method == "initialize" && !statelessEra(req):
		next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.sessions.serve(w, r, body) })
		fallthrough
	case req.Method == "subscriptions/listen":
		// Both open something that lasts: a session, or a stream that
		// stays open until the client leaves. Together they are bounded.
		who := owner(r)
		if limit := g.admit(who); limit != "" {
			g.log.Warn("refused: too many sessions", "limit", limit, "remote", r.RemoteAddr)
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, req.ID, g.tooMany(limit))
			return
		}
		defer g.admitted(who)
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

// statelessEra reports whether req says, in its _meta, that it is of
// protocol version 2026-07-28 or later, as the SDK tells the eras apart.
func statelessEra(req *jsonrpc.Request) bool {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28"
}

// readBody reads a request body of at most MaxBodyBytes within bodyTimeout
// and puts it back for the handler that follows. It answers 413 for a body
// too large and 400 for one that cannot be read.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	max := g.opts.MaxBodyBytes
	tooLarge := func() {
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", max), http.StatusRequestEntityTooLarge)
	}
	if r.ContentLength > max {
		tooLarge()
		return nil, false
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(bodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			tooLarge()
		} else {
			http.Error(w, "cannot read the request body", http.StatusBadRequest)
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// admit counts in an initialize, until it is answered, or a
// subscriptions/listen stream, while it lasts, for who (owner), if those
// and the sessions open are fewer than serve.max_sessions, and, with
// serve.auth, those of who fewer than serve.max_sessions_per_user. It
// returns the limit that refused, "" when admitted. A session whose
// initialize is not answered yet is counted as opening, not twice.
func (g *Gateway) admit(who string) string {
	g.sessionMu.Lock()
	defer g.sessionMu.Unlock()
	all, theirs := g.sessions.held(who)
	if g.opening+all >= g.opts.Serve.MaxSessions {
		return "serve.max_sessions"
	}
	if g.opts.Serve.Auth != nil {
		if g.openingBy[who]+theirs >= g.opts.Serve.MaxSessionsPerUser {
			return "serve.max_sessions_per_user"
		}
		if g.openingBy == nil {
			g.openingBy = map[string]int{}
		}
		g.openingBy[who]++
	}
	g.opening++
	return ""
}

func (g *Gateway) admitted(who string) {
	g.sessionMu.Lock()
	defer g.sessionMu.Unlock()
	g.opening--
	if g.opts.Serve.Auth != nil {
		if g.openingBy[who]--; g.openingBy[who] <= 0 {
			delete(g.openingBy, who)
		}
	}
}

// tooMany is the refusal of a session or stream past limit (admit's).
func (g *Gateway) tooMany(limit string) string {
	if limit == "serve.max_sessions_per_user" {
		return fmt.Sprintf("too many sessions: you hold serve.max_sessions_per_user (%d) sessions and subscriptions at once; "+
			"end one of yours (HTTP DELETE with its Mcp-Session-Id, or close a subscriptions/listen stream) or try again later",
			g.opts.Serve.MaxSessionsPerUser)
	}
	return fmt.Sprintf("too many sessions: this replica holds serve.max_sessions (%d) sessions and subscriptions; try again later",
		g.opts.Serve.MaxSessions)
}

// writeError answers a request with a JSON-RPC error, encoded by the SDK.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, msg string) {
	writeRefusal(w, status, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg})
}

// writeRefusal answers with the JSON-RPC error e for id, with HTTP status.
func writeRefusal(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorResponse(id, e))
}

// Serve serves Handler on ln until ctx ends, then drains: the listener
// closes (a probe of /readyz then fails to connect, as a load balancer
// takes for not ready), new calls are refused, calls in flight get
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
	// A call that finished has its answer still to be written on its
	// request's stream; ending the sessions first would cut it off.
	g.posts.wait(closeTimeout)
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

// pending counts the requests whose handlers are running, so that a drain
// can wait for them to return.
type pending struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil when nobody waits
}

func (p *pending) enter() {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
}

func (p *pending) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// wait returns when no request is running, or after d.
func (p *pending) wait(d time.Duration) {
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
	case <-time.After(d):
	}
}

package bearer

import (
	"cmp"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rs/cors"
)

// The door of an MCP server over HTTP: the checks that come before any
// token is looked at, shared by Airlock's issue server and its gateway so
// that both refuse the same requests the same way.

// HostCheck refuses requests whose Host header names a host the server
// does not answer for: a web page whose DNS name was rebound to 127.0.0.1
// still sends its own name (DNS rebinding).
type HostCheck struct {
	// Hosts are the names or IP literals, besides loopback names, that a
	// Host header may give: the host of the server's resource, say. They
	// compare without the port and without regard to case.
	Hosts []string
	// LoopbackListenerOnly checks only requests that came in on a loopback
	// listener; on any other, the server's authentication guards it.
	LoopbackListenerOnly bool
	// Message is the body of the 403 answer. Empty means "host not
	// allowed".
	Message string
	// Logger receives a line for each refusal. Nil discards them.
	Logger *slog.Logger
}

// Wrap returns next behind the check.
func (c HostCheck) Wrap(next http.Handler) http.Handler {
	msg := cmp.Or(c.Message, "host not allowed")
	log := logger(c.Logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.LoopbackListenerOnly {
			la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			if !ok || la == nil || !IsLoopbackHostPort(la.String()) {
				next.ServeHTTP(w, r)
				return
			}
		}
		if !c.allowed(r.Host) {
			log.Warn("refused: the Host header names a host this server does not answer for", "host", clip(r.Host), "remote", r.RemoteAddr)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (c HostCheck) allowed(hostport string) bool {
	if IsLoopbackHostPort(hostport) {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return host != "" && slices.ContainsFunc(c.Hosts, func(h string) bool {
		return strings.EqualFold(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), host)
	})
}

// OriginCheck lets a web page's request through only from an allowed
// origin, and answers CORS for exactly those origins (bearer tokens, never
// cookies: no credentials; the session id and the challenge exposed). A
// request without Origin comes from a client that is not a web page and
// passes.
type OriginCheck struct {
	// Allowed are the origins, in lower case (scheme://host[:port]).
	// Empty allows none.
	Allowed []string
	// Message is the body of the 403 answer. Empty means "origin not
	// allowed".
	Message string
	// Logger receives a line for each refusal. Nil discards them.
	Logger *slog.Logger
	// SameLoopbackOrigin also lets in a request from the very origin it
	// was sent to when that is plain http to a loopback host (Origin
	// http://127.0.0.1:8080 on a request for Host 127.0.0.1:8080): only
	// the server listening there serves that origin, so a page of it is
	// the server's own. It needs the HostCheck in front, which keeps out a
	// page whose own name was rebound to a loopback address.
	SameLoopbackOrigin bool
}

// Wrap returns next behind the check and CORS.
func (c OriginCheck) Wrap(next http.Handler) http.Handler {
	msg := cmp.Or(c.Message, "origin not allowed")
	log := logger(c.Logger)
	if len(c.Allowed) > 0 {
		next = cors.New(cors.Options{
			AllowedOrigins: c.Allowed,
			AllowedMethods: []string{http.MethodPost, http.MethodGet, http.MethodDelete},
			AllowedHeaders: []string{"Authorization", "Content-Type", "Accept", "Mcp-Session-Id",
				"Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-ID"},
			ExposedHeaders:   []string{"Mcp-Session-Id", "WWW-Authenticate"},
			AllowCredentials: false,
			MaxAge:           600,
		}).Handler(next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vals := r.Header.Values("Origin"); len(vals) > 0 {
			if len(vals) != 1 || !slices.Contains(c.Allowed, strings.ToLower(vals[0])) && !c.sameLoopback(vals[0], r.Host) {
				log.Warn("refused: origin not allowed", "origin", clip(vals[0]), "remote", r.RemoteAddr)
				http.Error(w, msg, http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameLoopback reports whether origin is the plain http origin of a
// request for host, a loopback host (see SameLoopbackOrigin).
func (c OriginCheck) sameLoopback(origin, host string) bool {
	return c.SameLoopbackOrigin && host != "" && IsLoopbackHostPort(host) && strings.EqualFold(origin, "http://"+host)
}

// MetadataPaths are where a resource server whose MCP endpoint is at
// endpoint serves the protected resource metadata of resource: the root
// well-known path, the form suffixed with the resource's path (RFC 9728
// §3.1), and the form suffixed with the endpoint path, which MCP clients
// try when no resource_metadata is given.
func MetadataPaths(resource, endpoint string) []string {
	paths := []string{WellKnownPath, WellKnownPath + endpoint}
	if u, err := url.Parse(resource); err == nil {
		if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" && !slices.Contains(paths, WellKnownPath+p) {
			paths = append(paths, WellKnownPath+p)
		}
	}
	return paths
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// clip bounds a value a client chose before it is logged.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

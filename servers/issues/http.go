package issues

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/internal/schema"
)

// Endpoint is the path of the MCP endpoint.
const Endpoint = "/mcp"

// CodeInsufficientScope is the JSON-RPC error code of the body of a 403
// insufficient_scope answer to a single call; the HTTP status and the
// WWW-Authenticate header carry the standard signal, the body lets MCP
// clients report the refusal without dropping the connection.
const CodeInsufficientScope = -32003

// Handler returns the server's HTTP handler:
//
//	/mcp                                         the MCP endpoint
//	/.well-known/oauth-protected-resource[/…]    RFC 9728 metadata (public)
//	/healthz, /readyz                            liveness and readiness (public)
//
// Every request first passes the DNS-rebinding check (on a loopback
// listener the Host header must be a loopback name). Requests to /mcp then
// pass, in order: the Origin allowlist (403), CORS, the body limit (413),
// bearer authentication (401, or 503 when the issuer cannot be reached), the
// per-tool scope check (403 insufficient_scope; 400 for a request id longer
// than 128 bytes), and the SDK's handler, which applies its own
// DNS-rebinding check and protocol checks. Whatever answers, an error's
// message, data or body that repeats the request is bounded
// ([boundEchoes]).
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", s.serveReady)

	md := auth.ProtectedResourceMetadataHandler(s.verifier.Metadata("Airlock issues", Scopes))
	for _, p := range bearer.MetadataPaths(s.verifier.Resource(), Endpoint) {
		mux.Handle(p, md)
	}

	sdk := s.mcpHandler()
	chain := s.verifier.Middleware(&bearer.MiddlewareOptions{
		ResourceMetadataURL: s.metadataURL,
		Scopes:              []string{ScopeRead},
	})(s.scopeGate(sdk))
	chain = s.limitBody(chain)
	chain = bearer.OriginCheck{Allowed: s.origins, Logger: s.logger}.Wrap(chain)
	chain = boundEchoes(chain)
	mux.Handle(Endpoint, chain)

	// On a loopback listener the Host header must be a loopback name. The
	// SDK's handler makes the same check for /mcp; this makes it for every
	// path and before authentication.
	host := bearer.HostCheck{LoopbackListenerOnly: true, Logger: s.logger}
	return s.logRequests(host.Wrap(mux))
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.store.ping(ctx); err != nil {
		s.logger.Warn("not ready: store", "error", err)
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	if err := s.verifier.Ready(ctx); err != nil {
		s.logger.Warn("not ready: issuer keys", "error", err)
		http.Error(w, "issuer keys unavailable", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}

// limitBody bounds request bodies; the scope check reads the whole body.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.maxBody {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", s.maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		next.ServeHTTP(w, r)
	})
}

// scopeGate decides, before the SDK handles a POST, whether the token holds
// the scope of every tool the body calls. It reads the bounded body, decodes
// it strictly (no duplicate keys, no keys equal under case folding, valid
// UTF-8), so that the tool name seen here is the one the SDK will see, finds
// every tools/call and its params.name, and answers 403 insufficient_scope
// naming the missing scopes; otherwise it hands the SDK a fresh copy of the
// same body. Other methods (discovery, initialize, tools/list) need only a
// valid token.
func (s *Server) scopeGate(next http.Handler) http.Handler {
	challenge := bearer.Challenge{ResourceMetadata: s.metadataURL}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := bearer.PrincipalFrom(r.Context())
		info(r.Context()).setPrincipal(p)
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read the request body", http.StatusBadRequest)
			return
		}
		calls, err := toolCalls(body)
		if errors.Is(err, errLongID) {
			// An id is echoed whole in its answer: refuse it instead.
			writeRPCError(w, http.StatusBadRequest, nil, -32600, err.Error())
			return
		}
		if err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, -32700, shorten("the request is not strict JSON: "+err.Error()))
			return
		}
		var missing []string
		for _, c := range calls {
			info(r.Context()).setTool(c.name)
			if need := toolScopes[c.name]; need != "" && !p.HasScope(need) && !slices.Contains(missing, need) {
				missing = append(missing, need)
			}
		}
		if len(missing) > 0 {
			desc := "this call needs the scope " + strings.Join(missing, " ")
			var rpc []byte
			if len(calls) == 1 && calls[0].id != nil {
				rpc = rpcError(calls[0].id, CodeInsufficientScope, desc)
			}
			challenge.WriteInsufficientScope(w, missing, desc, "application/json", rpc)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// toolCall is one tools/call found in a request body.
type toolCall struct {
	id   json.RawMessage // nil for a notification
	name string
}

// errLongID refuses a message whose id is longer than maxEcho bytes.
var errLongID = fmt.Errorf("a request id is longer than %d bytes; use a shorter one", maxEcho)

// toolCalls decodes a JSON-RPC message or batch strictly and returns its
// tools/call requests. A message whose id (a string, or a number's text) is
// longer than maxEcho bytes is refused with errLongID. Anything else about
// the messages is left for the SDK to judge.
func toolCalls(body []byte) ([]toolCall, error) {
	v, err := schema.Decode(body, &schema.DecodeOptions{MaxBytes: len(body) + 1, CaseFold: true})
	if err != nil {
		return nil, err
	}
	msgs, ok := v.([]any)
	if !ok {
		msgs = []any{v}
	}
	var calls []toolCall
	for _, m := range msgs {
		obj, ok := m.(map[string]any)
		if !ok {
			continue
		}
		switch id := obj["id"].(type) {
		case string:
			if len(id) > maxEcho {
				return nil, errLongID
			}
		case json.Number:
			if len(id) > maxEcho {
				return nil, errLongID
			}
		}
		if obj["method"] != "tools/call" {
			continue
		}
		c := toolCall{}
		if params, ok := obj["params"].(map[string]any); ok {
			c.name, _ = params["name"].(string)
		}
		switch id := obj["id"].(type) {
		case json.Number:
			c.id = json.RawMessage(id.String())
		case string:
			c.id, _ = json.Marshal(id)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func rpcError(id json.RawMessage, code int, message string) []byte {
	type rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcErr          `json:"error"`
	}{"2.0", orNull(id), rpcErr{code, message}})
	return out
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(rpcError(id, code, message))
}

func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

// requestInfo collects what the access log reports about a request; inner
// handlers fill it in.
type requestInfo struct {
	mu              sync.Mutex
	tenant, subject string
	tools           []string
}

func (ri *requestInfo) setPrincipal(p *bearer.Principal) {
	if ri == nil || p == nil {
		return
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.tenant, ri.subject = p.Tenant, p.Subject
}

func (ri *requestInfo) setTool(name string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	if len(ri.tools) < 8 {
		ri.tools = append(ri.tools, clip(name))
	}
}

type requestInfoKey struct{}

func info(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri
}

// logRequests writes one structured line per request: no headers, no query
// string, no token; the session id only as a fingerprint.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &requestInfo{}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
		next.ServeHTTP(sw, r)
		attrs := []any{
			"method", r.Method,
			"path", r.URL.Path,
			"status", sw.status(),
			"duration_ms", time.Since(start).Milliseconds(),
			"remote", r.RemoteAddr,
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			attrs = append(attrs, "session", sessionFingerprint(id))
		}
		ri.mu.Lock()
		if ri.subject != "" {
			attrs = append(attrs, "tenant", ri.tenant, "sub", ri.subject)
		}
		if len(ri.tools) > 0 {
			attrs = append(attrs, "tools", strings.Join(ri.tools, ","))
		}
		ri.mu.Unlock()
		s.logger.Info("request", attrs...)
	})
}

// statusWriter records the status code. It passes Flush through (the SDK
// streams server-sent events) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.code == 0 {
		sw.code = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.code == 0 {
		sw.code = http.StatusOK
	}
	return sw.ResponseWriter.Write(b)
}

func (sw *statusWriter) Flush() {
	if f, ok := sw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

func (sw *statusWriter) status() int {
	if sw.code == 0 {
		return http.StatusOK
	}
	return sw.code
}

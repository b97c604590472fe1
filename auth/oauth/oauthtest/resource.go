package oauthtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/airlockhq/airlock/auth/bearer"
)

// Scopes a [ResourceServer] checks: "read" needs ScopeRead, "write" needs
// ScopeWrite as well, "admin" ScopeAdmin.
const (
	ScopeRead  = "mcp:read"
	ScopeWrite = "mcp:write"
	// ScopeAdmin is what the tool "admin" needs.
	ScopeAdmin = "mcp:admin"
)

// ResourceOptions configures a [ResourceServer]. Nil gives the defaults.
type ResourceOptions struct {
	// Issuer is the authorization server the resource metadata names.
	// Empty means the authorization server's own URL (set it to lie).
	Issuer string
	// Stateful serves sessions (the 2025-11-25 way) instead of the
	// stateless handler.
	Stateful bool
	// ChallengeScopes are the scopes its 401 challenge names; nil means
	// ScopeRead, empty means none.
	ChallengeScopes []string
	// ScopesSupported are the scopes_supported of its resource metadata;
	// nil means ScopeRead, ScopeWrite and ScopeAdmin, empty means none.
	ScopesSupported []string
	// Resources makes it offer one resource, NoteURI, that clients may
	// subscribe to; Touch tells them it changed.
	Resources bool
	// Legacy makes it a 2025-03-26 server: its MCP endpoint is on the
	// authorization server's own origin (the URL and the resource are the
	// authorization server's), and it publishes no resource metadata and
	// names none in its challenges.
	Legacy bool
}

// ResourceServer is a protected MCP server on loopback: the SDK's
// Streamable HTTP handler behind a bearer check with the authorization
// server's verifier, a per-tool scope gate answering 403
// insufficient_scope, and RFC 9728 metadata. Its tools "read" and "write"
// answer "read ok", "write ok" and "admin ok". It records the tokens it accepted.
type ResourceServer struct {
	// URL is the server's base URL and its resource; the MCP endpoint is
	// URL + "/mcp".
	URL string

	server *mcp.Server

	mu       sync.Mutex
	tokens   []string
	calls    map[string]int
	requests int
	refuse   bool // answer 401 to everything
}

// NewResourceServer starts a resource server that trusts as. It is closed
// when the test ends. A Legacy one is served by as itself.
func NewResourceServer(t testing.TB, as *Server, opts *ResourceOptions) *ResourceServer {
	t.Helper()
	var o ResourceOptions
	if opts != nil {
		o = *opts
	}
	if o.Issuer == "" {
		o.Issuer = as.URL
	}
	if o.ChallengeScopes == nil {
		o.ChallengeScopes = []string{ScopeRead}
	}
	if o.ScopesSupported == nil {
		o.ScopesSupported = []string{ScopeRead, ScopeWrite, ScopeAdmin}
	}
	rs := &ResourceServer{calls: map[string]int{}, URL: as.URL}
	mux := http.NewServeMux()
	var hs *httptest.Server
	if !o.Legacy {
		hs = httptest.NewUnstartedServer(mux)
		rs.URL = "http://" + hs.Listener.Addr().String()
	}
	challenge := bearer.Challenge{Scopes: o.ChallengeScopes}
	if !o.Legacy {
		challenge.ResourceMetadata, _ = bearer.MetadataURL(rs.URL)
		mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             rs.URL,
			AuthorizationServers: []string{o.Issuer},
			ScopesSupported:      o.ScopesSupported,
		}))
	}

	var sopts *mcp.ServerOptions
	if o.Resources {
		sopts = &mcp.ServerOptions{
			SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		}
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, sopts)
	rs.server = server
	if o.Resources {
		server.AddResource(&mcp.Resource{URI: NoteURI, Name: "note", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: NoteURI, MIMEType: "text/plain", Text: "note"}}}, nil
			})
	}
	for _, name := range []string{"read", "write", "admin"} {
		mcp.AddTool(server, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
				rs.mu.Lock()
				rs.calls[name]++
				rs.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil, nil
			})
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: !o.Stateful, JSONResponse: !o.Stateful})

	protected := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.requests++
		refuse := rs.refuse
		rs.mu.Unlock()
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || refuse {
			w.Header().Set("WWW-Authenticate", challenge.Header("invalid_token", "", nil))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		claims, err := as.Verify(r.Context(), token, rs.URL)
		if err != nil {
			w.Header().Set("WWW-Authenticate", challenge.Header("invalid_token", "token refused", nil))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rs.mu.Lock()
		rs.tokens = append(rs.tokens, token)
		rs.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" && msg.Params.Name == "admin" && !slices.Contains(claims.Scopes, ScopeAdmin) {
			challenge.WriteInsufficientScope(w, []string{ScopeRead, ScopeAdmin}, "", "", nil)
			return
		}
		if msg.Method == "tools/call" && msg.Params.Name == "write" && !slices.Contains(claims.Scopes, ScopeWrite) {
			challenge.WriteInsufficientScope(w, []string{ScopeRead, ScopeWrite}, "", "", nil)
			return
		}
		if msg.Method == "tools/call" && !slices.Contains(claims.Scopes, ScopeRead) {
			challenge.WriteInsufficientScope(w, []string{ScopeRead}, "", "", nil)
			return
		}
		handler.ServeHTTP(w, r)
	})
	if o.Legacy {
		as.mux.Handle("/mcp", protected)
		return rs
	}
	mux.Handle("/mcp", protected)
	// A plain protected endpoint for raw HTTP calls.
	mux.Handle("/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := as.Verify(r.Context(), token, rs.URL); err != nil {
			w.Header().Set("WWW-Authenticate", challenge.Header("invalid_token", "", nil))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		io.Copy(w, r.Body)
	}))
	hs.Start()
	t.Cleanup(hs.Close)
	rs.URL = hs.URL
	return rs
}

// NoteURI is the resource of a server with ResourceOptions.Resources.
const NoteURI = "note://protected/note"

// Touch tells the sessions subscribed to NoteURI that it changed.
func (rs *ResourceServer) Touch(ctx context.Context) error {
	return rs.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: NoteURI})
}

// EndSessions closes every session the server has, as a server that
// restarted would have lost them.
func (rs *ResourceServer) EndSessions() {
	for ss := range rs.server.Sessions() {
		ss.Close()
	}
}

// Seen returns the tokens the server accepted, in order.
func (rs *ResourceServer) Seen() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.tokens)
}

// Calls returns how many times the tool ran.
func (rs *ResourceServer) Calls(tool string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.calls[tool]
}

// SetRefuse makes the server answer 401 to every request (v true), as if
// it had stopped trusting every token, or return to normal.
func (rs *ResourceServer) SetRefuse(v bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.refuse = v
}

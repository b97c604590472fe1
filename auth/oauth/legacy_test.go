package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/auth/secrets"
)

// TestLegacyServer: a 2025-03-26 server publishes no protected resource
// metadata and its challenge names none; its origin is its authorization
// server, whose own metadata (here OpenID Connect discovery) is used.
func TestLegacyServer(t *testing.T) {
	e := newEnv(t, &envOptions{resource: &oauthtest.ResourceOptions{Legacy: true}})
	if e.rs.URL != e.as.URL {
		t.Fatalf("the legacy server is at %s, not on its authorization server's origin %s", e.rs.URL, e.as.URL)
	}
	st := e.login()
	if st.Issuer != e.as.URL {
		t.Errorf("issuer = %s, want the server's origin %s", st.Issuer, e.as.URL)
	}
	cs := e.openSession()
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call read = %q, %v", got, err)
	}
	if st := e.as.Stats(); st.CodeExchanges != 1 || st.MissingResource != 0 {
		t.Errorf("authorization server stats = %+v, want one code exchange, each request naming the resource", st)
	}

	// The fallback is the server's own origin: a resource elsewhere is
	// refused before anyone is sent to log in.
	elsewhere := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(elsewhere.Close)
	e.srv.Resource = elsewhere.URL
	_, err := e.client.Login(context.Background(), e.srv, e.who)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), "2025-03-26 fallback") {
		t.Errorf("Login for a resource off the server's origin = %v, want KindRefused naming the fallback", err)
	}
	if e.opens.Load() != 1 {
		t.Errorf("authorization URLs shown = %d, want 1", e.opens.Load())
	}
}

// TestLegacyDefaultEndpoints: a 2025-03-26 server whose origin publishes
// no metadata at all gets the specification's default endpoints on that
// origin: /authorize and /token (bearertest's own, which check PKCE, the
// redirect URI and the resource).
func TestLegacyDefaultEndpoints(t *testing.T) {
	iss := bearertest.New(t, &bearertest.Options{NoMetadata: true})
	resource := iss.URL
	v, err := bearer.NewVerifier(iss.URL, resource, &bearer.Options{JWKSURL: iss.JWKSURL})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "read", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read ok"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	iss.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := v.Verify(r.Context(), token); err != nil {
			// A 2025-03-26 challenge: no resource metadata.
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))

	redirect := freeRedirect(t)
	iss.AllowClient("airlock", redirect)
	store, err := secrets.OpenFileStore(t.TempDir(), &secrets.FileOptions{KeyFile: t.TempDir() + "/secret.key", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	client, err := oauth.New(&oauth.Options{
		Store:       store,
		Development: true,
		Open: func(ctx context.Context, authURL string) error {
			// The authorization endpoint approves at once and redirects
			// to the login's listener.
			resp, err := http.Get(authURL)
			if err != nil {
				return err
			}
			return resp.Body.Close()
		},
		LoginTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &oauth.Server{ID: "legacy", URL: iss.URL + "/mcp", Resource: resource, RedirectURI: redirect, ClientID: "airlock"}
	who := oauth.Owner{Tenant: "acme", User: "alice"}
	st, err := client.Login(context.Background(), srv, who)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if st.Issuer != iss.URL {
		t.Errorf("issuer = %s, want the server's origin %s", st.Issuer, iss.URL)
	}
	tr, err := client.Transport(srv, who, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := callWith(t, tr, srv.URL, "read"); err != nil || got != "read ok" {
		t.Fatalf("call read = %q, %v", got, err)
	}
	if issued, _ := iss.Grants(); issued != 1 {
		t.Errorf("tokens issued = %d, want 1", issued)
	}
}

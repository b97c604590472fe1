package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
)

// The gateway's resource as its clients name it. It is an identifier: the
// tests reach the gateway on loopback, and name this host only to check
// that the Host check lets it through.
const (
	gatewayResource = "https://airlock.test/mcp"
	gatewayHost     = "airlock.test"
	scopeTools      = "mcp:tools"
)

// startAuth serves the fixture's servers behind a gateway that is an OAuth
// resource server for tokens idp issues: tenant from the tenant claim,
// user from sub, the mcp:tools scope required.
func startAuth(t *testing.T, idp *bearertest.Issuer) *fixture {
	t.Helper()
	return startAuthServing(t, idp, config.Serve{})
}

// startAuthServing is startAuth with serve: otherwise as given.
func startAuthServing(t *testing.T, idp *bearertest.Issuer, serve config.Serve) *fixture {
	t.Helper()
	a := &config.ServeAuth{Issuer: idp.URL, Resource: gatewayResource, Scopes: []string{scopeTools}, TenantClaim: "tenant", UserClaim: "sub"}
	v, err := gateway.NewVerifier(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	serve.Auth = a
	return start(t, "", &gateway.Options{Serve: serve, Verifier: v})
}

// TestMaxSessionsPerUser: with serve.auth, one principal's sessions and
// subscription streams are bounded by serve.max_sessions_per_user, so that
// it cannot fill serve.max_sessions for everyone; another principal still
// gets in, and a session that ends makes room.
func TestMaxSessionsPerUser(t *testing.T) {
	idp := bearertest.New(t, nil)
	f := startAuthServing(t, idp, config.Serve{MaxSessions: 10, MaxSessionsPerUser: 2})
	mallory, bob := token(t, idp, "t9", "mallory"), token(t, idp, "t1", "bob")
	first := f.connectAs(t, session, mallory, nil)
	f.connectAs(t, session, mallory, nil)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	as := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	code, h, body := post(t, f, "", initialize, as(mallory))
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "serve.max_sessions_per_user (2)") {
		t.Errorf("a third session of one user: %d %q, want 503 naming serve.max_sessions_per_user", code, body)
	}
	listen := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	if code, _, body := post(t, f, stateless, listen, as(mallory)); code != http.StatusServiceUnavailable || !strings.Contains(body, "serve.max_sessions_per_user") {
		t.Errorf("a listen stream past the user's bound: %d %q, want 503", code, body)
	}
	if res, err := call(t, f.connectAs(t, session, bob, nil), "w__echo", `{"text":"bob"}`); err != nil || resultText(res) != "bob" {
		t.Errorf("another user's session: %+v, %v", res, err)
	}
	first.Close()
	waitFor(t, "room for mallory's session", func() bool {
		code, _, _ := post(t, f, "", initialize, as(mallory))
		return code == http.StatusOK
	})
}

// token mints an access token for the gateway, for tenant and user, with
// the scope it requires.
func token(t *testing.T, idp *bearertest.Issuer, tenant, user string) string {
	t.Helper()
	return idp.Mint(t, idp.Claims(gatewayResource, tenant, user, scopeTools), nil)
}

// bearerTransport sends every request with a bearer token.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// connectAs opens a client session of era with tok.
func (f *fixture) connectAs(t *testing.T, era, tok string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: bearerTransport{tok}}}
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect (%s): %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// listBody is a 2026-07-28 tools/list.
const listBody = `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// TestInboundAuthMatrix: every request needs a token the gateway accepts;
// each way a token can be wrong is refused before anything is read, with
// the challenge that tells the client what to do, and nothing reaches a
// server.
func TestInboundAuthMatrix(t *testing.T) {
	idp := bearertest.New(t, nil)
	f := startAuth(t, idp)
	md, _ := bearer.MetadataURL(gatewayResource)
	now := time.Now()
	claims := func(edit func(map[string]any)) string {
		c := idp.Claims(gatewayResource, "acme", "alice", scopeTools)
		if edit != nil {
			edit(c)
		}
		return idp.Mint(t, c, nil)
	}
	challenge := func(errCode, desc string) string {
		return `Bearer resource_metadata="` + md + `", scope="` + scopeTools + `", error="` + errCode + `", error_description="` + desc + `"`
	}
	auth := func(v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Authorization", v) } }
	bearerTok := func(tok string) func(*http.Request) { return auth("Bearer " + tok) }
	tests := []struct {
		name      string
		edit      func(*http.Request)
		status    int
		challenge string
		body      string // in the body
	}{
		{"good", bearerTok(claims(nil)), 200, "", `"w__echo"`},
		{"no token", nil, 401, `Bearer resource_metadata="` + md + `", scope="` + scopeTools + `"`, "a bearer token is required"},
		{"not a bearer token", auth("Basic YTpi"), 401, `Bearer resource_metadata="` + md + `", scope="` + scopeTools + `"`, "a bearer token is required"},
		{"malformed header", auth("Bearer a b"), 400, challenge("invalid_request", "the Bearer credential must be one token"), "one token"},
		{"not a JWT", bearerTok("not-a-token"), 401, challenge("invalid_token", "token is not a compact JWS"), "compact JWS"},
		{"expired", bearerTok(claims(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Minute).Unix() })), 401, challenge("invalid_token", "token has expired"), "expired"},
		{"wrong audience", bearerTok(claims(func(c map[string]any) { c["aud"] = "https://other.test/mcp" })), 401, challenge("invalid_token", "token audience does not include this resource"), "audience"},
		{"wrong issuer", bearerTok(claims(func(c map[string]any) { c["iss"] = "https://evil.test" })), 401, challenge("invalid_token", "token issuer is not accepted"), "issuer"},
		{"forged signature", bearerTok(idp.Mint(t, idp.Claims(gatewayResource, "acme", "alice", scopeTools), &bearertest.Header{Key: bearertest.NewRSAKey(t, "key-1")})),
			401, challenge("invalid_token", "token signature is invalid"), "signature"},
		{"no tenant claim", bearerTok(claims(func(c map[string]any) { delete(c, "tenant") })), 401, challenge("invalid_token", "token has no tenant claim"), "tenant"},
		{"a user Airlock cannot act for", bearerTok(claims(func(c map[string]any) { c["sub"] = "alice/../bob" })), 401,
			challenge("invalid_token", "token claim sub is not a user name Airlock can act for: it must be 1 to 128 letters, digits, ., _, @, + or -"), "not a user name"},
		{"a tenant Airlock cannot act for", bearerTok(claims(func(c map[string]any) { c["tenant"] = "acme corp" })), 401,
			challenge("invalid_token", "token claim tenant is not a tenant name Airlock can act for: it must be 1 to 128 letters, digits, ., _, @, + or -"), "not a tenant name"},
		{"missing scope", bearerTok(claims(func(c map[string]any) { c["scope"] = "mcp:other" })), 403,
			`Bearer resource_metadata="` + md + `", scope="` + scopeTools + `", error="insufficient_scope", error_description="the token lacks the scope ` + scopeTools + `"`, "lacks the scope"},
		{"no scope at all", bearerTok(claims(func(c map[string]any) { delete(c, "scope") })), 403,
			`Bearer resource_metadata="` + md + `", scope="` + scopeTools + `", error="insufficient_scope", error_description="the token lacks the scope ` + scopeTools + `"`, "lacks the scope"},
	}
	for _, tt := range tests {
		for _, body := range []string{listBody, callBody("w__echo", `{"text":"x"}`)} {
			code, h, got := post(t, f, stateless, body, tt.edit)
			want := tt.body
			if tt.status == 200 && strings.Contains(body, "tools/call") {
				want = `"text":"x"`
			}
			if code != tt.status || h.Get("WWW-Authenticate") != tt.challenge || !strings.Contains(got, want) {
				t.Errorf("%s: %d %q, WWW-Authenticate %q; want %d containing %q, %q", tt.name, code, got, h.Get("WWW-Authenticate"), tt.status, want, tt.challenge)
			}
		}
	}
	if got := marks(t, f.mark, "call "); len(got) != 1 {
		t.Errorf("server w saw %q, want the one good call", got)
	}

	// The token never reaches the log.
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, f.url, nil)
		if tt.edit != nil {
			tt.edit(req)
		}
		if tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && len(tok) > 20 && strings.Contains(f.log.String(), tok) {
			t.Errorf("%s: the log holds the token", tt.name)
		}
	}

	// The metadata tells clients where to get a token, at the root and
	// suffixed with the endpoint's path; health needs no token.
	for _, path := range []string{bearer.WellKnownPath, bearer.WellKnownPath + gateway.Endpoint} {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(f.url, gateway.Endpoint)+path, nil)
		code, _, body := do(t, req)
		var got struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
			t.Fatalf("%s: %d %q", path, code, body)
		}
		want := []string{gatewayResource, idp.URL, scopeTools}
		if diff := cmp.Diff(want, []string{got.Resource, strings.Join(got.AuthorizationServers, " "), strings.Join(got.ScopesSupported, " ")}); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(f.url, gateway.Endpoint)+path, nil)
		if code, _, body := do(t, req); code != 200 {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}

	// The Host header may name the resource's host, or loopback; nothing
	// else (DNS rebinding).
	good := bearerTok(claims(nil))
	for host, want := range map[string]int{gatewayHost: 200, gatewayHost + ":443": 200, "AIRLOCK.test": 200, "evil.test": 403, "airlock.test.evil.test": 403} {
		code, _, body := post(t, f, stateless, listBody, func(r *http.Request) { good(r); r.Host = host })
		if code != want || want == 403 && !strings.Contains(body, "host not allowed: the gateway answers only requests for airlock.test (serve.auth.resource)") {
			t.Errorf("Host %s: %d %q, want %d", host, code, body, want)
		}
	}

	// A list is for its caller only: principals may see different
	// catalogs.
	if _, _, body := post(t, f, stateless, listBody, good); !strings.Contains(body, `"cacheScope":"private"`) {
		t.Errorf("tools/list = %s, want cacheScope private", body)
	}
}

// TestSessionBoundToItsPrincipal: a 2025-11-25 session belongs to whoever
// opened it; another user's token with its id is refused, and nothing is
// sent.
func TestSessionBoundToItsPrincipal(t *testing.T) {
	idp := bearertest.New(t, nil)
	f := startAuth(t, idp)
	alice := f.connectAs(t, session, token(t, idp, "acme", "alice"), nil)
	if res, err := call(t, alice, "w__echo", `{"text":"mine"}`); err != nil || res.IsError {
		t.Fatalf("alice's call: %+v, %v", res, err)
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"w__echo","arguments":{"text":"stolen"}}}`
	for _, tt := range []struct {
		name, token string
		status      int
	}{
		{"another user of the tenant", token(t, idp, "acme", "bob"), http.StatusForbidden},
		{"the same user of another tenant", token(t, idp, "globex", "alice"), http.StatusForbidden},
	} {
		code, _, got := post(t, f, session, body, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+tt.token)
			r.Header.Set("Mcp-Session-Id", alice.ID())
		})
		if code != tt.status {
			t.Errorf("%s: %d %q, want %d", tt.name, code, got, tt.status)
		}
	}
	// Without a token the request never reaches the session.
	if code, _, _ := post(t, f, session, body, func(r *http.Request) { r.Header.Set("Mcp-Session-Id", alice.ID()) }); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if got := marks(t, f.mark, "call echo "); len(got) != 1 || strings.Contains(got[0], "stolen") {
		t.Errorf("server w saw %q, want alice's one call", got)
	}
	if res, err := call(t, alice, "w__echo", `{"text":"still mine"}`); err != nil || res.IsError {
		t.Errorf("alice's session after the attempts: %+v, %v", res, err)
	}
}

// TestSessionBoundAcrossReplicas: two replicas share their sessions
// through PostgreSQL. Another user's token with a session's id is refused
// by the replica that does not hold the session too, before it opens a
// copy of it, and nothing is sent; the owner's own request there is taken.
func TestSessionBoundAcrossReplicas(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	idp := bearertest.New(t, nil)
	a := &config.ServeAuth{Issuer: idp.URL, Resource: gatewayResource, Scopes: []string{scopeTools}, TenantClaim: "tenant", UserClaim: "sub"}
	key := make([]byte, 32)
	shared := fmt.Sprintf("store: {url: %q, audit_key: %q}\n", db, filepath.Join(t.TempDir(), "audit.key"))
	var replicas [2]*fixture
	for i := range replicas {
		v, err := gateway.NewVerifier(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = start(t, shared, &gateway.Options{Serve: config.Serve{Auth: a}, Verifier: v, StateKey: key})
	}
	first, other := replicas[0], replicas[1]
	alice := first.connectAs(t, session, token(t, idp, "acme", "alice"), nil)
	if res, err := call(t, alice, "w__echo", `{"text":"mine"}`); err != nil || res.IsError {
		t.Fatalf("alice's call: %+v, %v", res, err)
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"w__echo","arguments":{"text":"%s"}}}`
	as := func(tok string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("Mcp-Session-Id", alice.ID())
		}
	}
	if code, _, got := post(t, other, session, fmt.Sprintf(body, "stolen"), as(token(t, idp, "acme", "bob"))); code != http.StatusForbidden {
		t.Errorf("bob with alice's session on the other replica: %d %q, want 403", code, got)
	}
	if n := strings.Count(other.log.String(), "session taken from another replica"); n != 0 {
		t.Errorf("the other replica opened %d copies of alice's session for bob", n)
	}
	if got := marks(t, other.mark, "call echo "); len(got) != 0 {
		t.Errorf("the other replica's server w saw %q", got)
	}
	if code, _, got := post(t, other, session, fmt.Sprintf(body, "mine too"), as(token(t, idp, "acme", "alice"))); code != http.StatusOK || !strings.Contains(got, "mine too") {
		t.Errorf("alice's own request on the other replica: %d %q, want her call's answer", code, got)
	}
}

// TestApprovalAnswerBoundToItsCaller: the question a gateway asks one user
// cannot be answered by another: the signed request state names the
// caller, and the approval request is the caller's own.
func TestApprovalAnswerBoundToItsCaller(t *testing.T) {
	idp := bearertest.New(t, nil)
	f := startAuth(t, idp)
	opts := &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	}
	alice := f.connectAs(t, stateless, token(t, idp, "acme", "alice"), opts)
	mallory := f.connectAs(t, stateless, token(t, idp, "acme", "mallory"), opts)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "w__note", Arguments: map[string]any{"text": "alice's"}}
	params.InputResponses, params.RequestState = approveYes, askApproval(t, alice, params)
	res, err := mallory.CallTool(ctx, params)
	if err != nil || !res.IsError || status(res) != "approval_required" {
		t.Errorf("mallory answering alice's question: %+v, %v; want approval_required, nothing approved", res, err)
	}
	if got := marks(t, f.mark, "call note "); len(got) != 0 {
		t.Fatalf("the server saw %q", got)
	}
	res, err = alice.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Errorf("alice answering her own question: %+v, %v; want the call to run", res, err)
	}
	if got := marks(t, f.mark, "call note "); len(got) != 1 {
		t.Errorf("the server saw %q, want alice's one call", got)
	}
}

package bearer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
)

const (
	resource   = "https://mcp.example.com/mcp"
	readScope  = "mcp:issues.read"
	writeScope = "mcp:issues.write"
)

// clock is a settable clock that runs with real time plus an offset, so
// that tokens minted with real times stay meaningful.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func newVerifier(t *testing.T, iss *bearertest.Issuer, o *bearer.Options) *bearer.Verifier {
	t.Helper()
	if o == nil {
		o = &bearer.Options{}
	}
	if o.TenantClaim == "" {
		o.TenantClaim = "tenant"
	}
	v, err := bearer.NewVerifier(iss.URL, resource, o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// protected serves the verifier's middleware around a handler that needs
// the write scope for POST, writing a 403 challenge otherwise, and echoes
// the principal's subject and tenant.
func protected(t *testing.T, v *bearer.Verifier) *httptest.Server {
	t.Helper()
	md, err := bearer.MetadataURL(resource)
	if err != nil {
		t.Fatal(err)
	}
	ch := bearer.Challenge{ResourceMetadata: md, Scopes: []string{readScope}}
	h := v.Middleware(&bearer.MiddlewareOptions{Scopes: []string{readScope}})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := bearer.PrincipalFrom(r.Context())
		ti := auth.TokenInfoFromContext(r.Context())
		if p == nil || bearer.PrincipalFromTokenInfo(ti) != p {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "the token reached the handler", http.StatusInternalServerError)
			return
		}
		need := readScope
		if r.Method == http.MethodPost {
			need = writeScope
		}
		if !p.HasScope(need) {
			ch.WriteInsufficientScope(w, []string{need}, "", "", nil)
			return
		}
		io.WriteString(w, p.Tenant+"/"+p.Subject)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

type response struct {
	status    int
	challenge string
	body      string
}

func get(t *testing.T, url, method string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header.Get("WWW-Authenticate"), strings.TrimSpace(string(body))}
}

func TestClaimsMatrix(t *testing.T) {
	iss := bearertest.New(t, nil)
	var logs bytes.Buffer
	v := newVerifier(t, iss, &bearer.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	srv := protected(t, v)
	md, _ := bearer.MetadataURL(resource)
	now := time.Now()
	stranger := bearertest.NewRSAKey(t, "stranger")
	ecKey := bearertest.NewECKey(t, "ec-1")
	iss.SetKeys(iss.Key(), ecKey)

	good := func() map[string]any { return iss.Claims(resource, "acme", "alice", readScope) }
	with := func(edit func(c map[string]any)) map[string]any {
		c := good()
		edit(c)
		return c
	}
	challenge := func(errCode, desc string) string {
		return `Bearer resource_metadata="` + md + `", scope="` + readScope + `", error="` + errCode + `", error_description="` + desc + `"`
	}
	refused := func(desc string) response {
		return response{401, challenge("invalid_token", desc), desc}
	}

	tests := []struct {
		name   string
		token  string
		header []string // overrides the Authorization header when set
		method string
		want   response
	}{
		{name: "good", token: iss.Mint(t, good(), nil), want: response{200, "", "acme/alice"}},
		{name: "good ES256", token: iss.Mint(t, good(), &bearertest.Header{Key: ecKey}), want: response{200, "", "acme/alice"}},
		{name: "typ application/at+jwt", token: iss.Mint(t, good(), &bearertest.Header{Typ: "application/AT+JWT"}), want: response{200, "", "acme/alice"}},
		{name: "audience with trailing slash", token: iss.Mint(t, with(func(c map[string]any) { c["aud"] = resource + "/" }), nil), want: response{200, "", "acme/alice"}},
		{name: "audience list", token: iss.Mint(t, with(func(c map[string]any) { c["aud"] = []string{"https://other.example.com", resource} }), nil), want: response{200, "", "acme/alice"}},
		{name: "expired within skew", token: iss.Mint(t, with(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() }), nil), want: response{200, "", "acme/alice"}},
		{name: "no token", want: response{401, `Bearer resource_metadata="` + md + `", scope="` + readScope + `"`, "a bearer token is required"}},
		{name: "basic credentials", header: []string{"Authorization", "Basic YTpi"}, want: response{401, `Bearer resource_metadata="` + md + `", scope="` + readScope + `"`, "a bearer token is required"}},
		{name: "two authorization headers", header: []string{"Authorization", "Bearer a.b.c", "Authorization", "Bearer d.e.f"}, want: response{400, challenge("invalid_request", "send one Authorization header"), "send one Authorization header"}},
		{name: "not a JWS", token: "not-a-token", want: refused("token is not a compact JWS")},
		{name: "expired", token: iss.Mint(t, with(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Minute).Unix() }), nil), want: refused("token has expired")},
		{name: "not yet valid", token: iss.Mint(t, with(func(c map[string]any) { c["nbf"] = now.Add(10 * time.Minute).Unix() }), nil), want: refused("token is not yet valid")},
		{name: "issued in the future", token: iss.Mint(t, with(func(c map[string]any) { c["iat"] = now.Add(10 * time.Minute).Unix() }), nil), want: refused("token was issued in the future")},
		{name: "wrong issuer", token: iss.Mint(t, with(func(c map[string]any) { c["iss"] = "https://evil.example.com" }), nil), want: refused("token issuer is not accepted")},
		{name: "issuer with trailing slash", token: iss.Mint(t, with(func(c map[string]any) { c["iss"] = iss.URL + "/" }), nil), want: refused("token issuer is not accepted")},
		{name: "wrong audience", token: iss.Mint(t, with(func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }), nil), want: refused("token audience does not include this resource")},
		{name: "look-alike audience", token: iss.Mint(t, with(func(c map[string]any) { c["aud"] = resource + "2" }), nil), want: refused("token audience does not include this resource")},
		{name: "missing exp", token: iss.Mint(t, with(func(c map[string]any) { delete(c, "exp") }), nil), want: refused("token lacks the required claim exp")},
		{name: "missing sub", token: iss.Mint(t, with(func(c map[string]any) { delete(c, "sub") }), nil), want: refused("token lacks the required claim sub")},
		{name: "missing aud", token: iss.Mint(t, with(func(c map[string]any) { delete(c, "aud") }), nil), want: refused("token lacks the required claim aud")},
		{name: "missing tenant", token: iss.Mint(t, with(func(c map[string]any) { delete(c, "tenant") }), nil), want: refused("token has no tenant claim")},
		{name: "scope not a string", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = []string{readScope} }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope separated by a tab", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = readScope + "\t" + writeScope }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope separated by a newline", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = readScope + "\n" + writeScope }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope separated by two spaces", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = readScope + "  " + writeScope }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope with a leading space", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = " " + readScope }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope empty", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = "" }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope with a quote", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = readScope + ` a"b` }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "scope with a non-ASCII space", token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = readScope + "\u00a0" + writeScope }), nil), want: refused("token scope claim must be a space-separated string")},
		{name: "exp a numeric string", token: iss.Mint(t, with(func(c map[string]any) { c["exp"] = fmt.Sprint(now.Add(5 * time.Minute).Unix()) }), nil), want: refused("token exp, nbf and iat claims must be numbers")},
		{name: "nbf a numeric string", token: iss.Mint(t, with(func(c map[string]any) { c["nbf"] = fmt.Sprint(now.Unix()) }), nil), want: refused("token exp, nbf and iat claims must be numbers")},
		{name: "iat a numeric string", token: iss.Mint(t, with(func(c map[string]any) { c["iat"] = fmt.Sprint(now.Unix()) }), nil), want: refused("token exp, nbf and iat claims must be numbers")},
		{name: "exp null", token: iss.Mint(t, with(func(c map[string]any) { c["exp"] = nil }), nil), want: refused("token exp, nbf and iat claims must be numbers")},
		{name: "exp with a fraction", token: iss.Mint(t, with(func(c map[string]any) { c["exp"] = float64(now.Add(5*time.Minute).Unix()) + 0.5 }), nil), want: response{200, "", "acme/alice"}},
		{name: "alg none", token: iss.Mint(t, good(), &bearertest.Header{Alg: "none"}), want: refused("token signing algorithm is not allowed")},
		{name: "RS256 public key as HS256 secret", token: iss.Mint(t, good(), &bearertest.Header{Alg: "HS256", HMAC: iss.Key().PublicPEM()}), want: refused("token signing algorithm is not allowed")},
		{name: "RS256 key named for ES256", token: iss.Mint(t, good(), &bearertest.Header{Alg: "ES256", Key: ecKey, Kid: "key-1"}), want: refused("token signing algorithm is not allowed")},
		{name: "unknown kid", token: iss.Mint(t, good(), &bearertest.Header{Key: stranger}), want: refused("token signing key is not one of the issuer's keys")},
		{name: "forged with a known kid", token: iss.Mint(t, good(), &bearertest.Header{Key: stranger, Kid: "key-1"}), want: refused("token signature is invalid")},
		{name: "wrong typ", token: iss.Mint(t, good(), &bearertest.Header{Typ: "JWT"}), want: refused("token type must be at+jwt")},
		{name: "missing typ", token: iss.Mint(t, good(), &bearertest.Header{NoTyp: true}), want: refused("token type must be at+jwt")},
		{name: "critical header", token: iss.Mint(t, good(), &bearertest.Header{Extras: map[string]any{"crit": []string{"exp"}, "exp": 1}}), want: refused("token has critical header parameters this server does not understand")},
		{name: "nested token", token: iss.Mint(t, good(), &bearertest.Header{Extras: map[string]any{"cty": "JWT"}}), want: refused("nested tokens are not accepted")},
		{name: "missing scope", method: http.MethodPost, token: iss.Mint(t, good(), nil), want: response{403, `Bearer resource_metadata="` + md + `", scope="` + writeScope + `", error="insufficient_scope", error_description="the token lacks a scope this operation needs"`, "the token lacks a scope this operation needs"}},
		{name: "write scope", method: http.MethodPost, token: iss.Mint(t, with(func(c map[string]any) { c["scope"] = readScope + " " + writeScope }), nil), want: response{200, "", "acme/alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := tt.header
			if headers == nil && tt.token != "" {
				headers = []string{"Authorization", "Bearer " + tt.token}
			}
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			got := get(t, srv.URL, method, headers...)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(response{})); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// The tampered token: a good token whose claims were edited after
	// signing.
	t.Run("tampered claims", func(t *testing.T) {
		parts := strings.Split(iss.Mint(t, good(), nil), ".")
		evil := good()
		evil["sub"] = "mallory"
		other := strings.Split(iss.Mint(t, evil, nil), ".")
		got := get(t, srv.URL, http.MethodGet, "Authorization", "Bearer "+parts[0]+"."+other[1]+"."+parts[2])
		if want := refused("token signature is invalid"); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})

	for _, tt := range tests {
		if tt.token != "" && strings.Contains(logs.String(), tt.token) {
			t.Errorf("log contains the token of %q", tt.name)
		}
	}
}

func TestKeyRotationAndRefreshLimit(t *testing.T) {
	iss := bearertest.New(t, nil)
	var c clock
	v := newVerifier(t, iss, &bearer.Options{JWKSURL: iss.JWKSURL, MinRefreshInterval: time.Hour, Now: c.now})
	ctx := context.Background()
	claims := iss.Claims(resource, "acme", "alice", readScope)

	mustVerify := func(token string) {
		t.Helper()
		if _, err := v.Verify(ctx, token); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	mustVerify(iss.Mint(t, claims, nil))
	if got, want := iss.JWKSRequests(), int64(1); got != want {
		t.Fatalf("JWKS requests after the first token = %d, want %d", got, want)
	}

	// The issuer rotates: a token under the new key id causes one refresh.
	old := iss.Key()
	iss.Rotate(t, "key-2")
	mustVerify(iss.Mint(t, claims, nil))
	if got, want := iss.JWKSRequests(), int64(2); got != want {
		t.Fatalf("JWKS requests after rotation = %d, want %d", got, want)
	}

	// A flood of unknown key ids, in parallel, fetches nothing more.
	stranger := bearertest.NewRSAKey(t, "x")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			tok := iss.Mint(t, claims, &bearertest.Header{Key: stranger, Kid: "unknown-" + string(rune('a'+i%26)) + time.Now().String()})
			if _, err := v.Verify(ctx, tok); err == nil {
				t.Errorf("a token under an unknown key was accepted")
			}
		})
	}
	wg.Wait()
	if _, err := v.Verify(ctx, iss.Mint(t, claims, &bearertest.Header{Key: old})); err == nil {
		t.Error("a token under the retired key was accepted")
	}
	if got, want := iss.JWKSRequests(), int64(2); got != want {
		t.Fatalf("JWKS requests after a flood of unknown key ids = %d, want %d", got, want)
	}

	// Once the interval has passed, an unknown key id may refresh again.
	c.advance(time.Hour)
	iss.Rotate(t, "key-3")
	later := iss.Claims(resource, "acme", "alice")
	later["iat"], later["nbf"], later["exp"] = c.now().Unix(), c.now().Unix(), c.now().Add(time.Minute).Unix()
	mustVerify(iss.Mint(t, later, nil))
	if got, want := iss.JWKSRequests(), int64(3); got != want {
		t.Fatalf("JWKS requests after the interval = %d, want %d", got, want)
	}
}

func TestDiscovery(t *testing.T) {
	iss := bearertest.New(t, nil)
	v := newVerifier(t, iss, nil)
	if err := v.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if iss.MetadataRequests() == 0 || iss.JWKSRequests() != 1 {
		t.Errorf("metadata requests = %d, JWKS requests = %d; want some and 1", iss.MetadataRequests(), iss.JWKSRequests())
	}

	// Metadata that names another issuer is refused, and tokens cannot be
	// checked: 503, never acceptance.
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issuer":"`+iss.URL+`","jwks_uri":"`+iss.JWKSURL+`"}`)
	}))
	defer liar.Close()
	lv, err := bearer.NewVerifier(liar.URL, resource, &bearer.Options{TenantClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lv.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "names issuer") {
		t.Errorf("Ready with lying metadata = %v, want an issuer mismatch", err)
	}
	claims := iss.Claims(resource, "acme", "alice")
	claims["iss"] = liar.URL
	_, err = lv.Verify(context.Background(), iss.Mint(t, claims, nil))
	var e *bearer.Error
	if !errors.As(err, &e) || e.Kind != bearer.KindUnavailable {
		t.Errorf("Verify with lying metadata = %v, want KindUnavailable", err)
	}
	srv := protected(t, lv)
	if got := get(t, srv.URL, http.MethodGet, "Authorization", "Bearer "+iss.Mint(t, claims, nil)); got.status != http.StatusServiceUnavailable {
		t.Errorf("status = %d, want 503", got.status)
	}
}

func TestIntrospection(t *testing.T) {
	iss := bearertest.New(t, &bearertest.Options{ClientID: "rs", ClientSecret: "s3cret&="})
	var c clock
	v := newVerifier(t, iss, &bearer.Options{
		JWKSURL: iss.JWKSURL,
		Now:     c.now,
		Introspection: &bearer.Introspection{
			URL: iss.IntrospectionURL, ClientID: "rs", ClientSecret: "s3cret&=", CacheTTL: time.Minute,
		},
	})
	srv := protected(t, v)
	claims := iss.Claims(resource, "acme", "alice", readScope)
	claims["exp"] = time.Now().Add(2 * time.Minute).Unix()
	token := iss.Mint(t, claims, nil)
	auth := []string{"Authorization", "Bearer " + token}

	if got := get(t, srv.URL, http.MethodGet, auth...); got.status != 200 {
		t.Fatalf("active token: %+v", got)
	}
	get(t, srv.URL, http.MethodGet, auth...)
	if got, want := iss.IntrospectionRequests(), int64(1); got != want {
		t.Errorf("introspection requests for two uses = %d, want %d (cached)", got, want)
	}

	// Revoked: still accepted while the cached answer lasts, refused after.
	iss.Revoke(token)
	c.advance(time.Minute)
	got := get(t, srv.URL, http.MethodGet, auth...)
	if got.status != 401 || !strings.Contains(got.challenge, `error="invalid_token", error_description="token is not active"`) {
		t.Errorf("revoked token: %+v", got)
	}

	// A cached answer never outlives the token: a token expiring sooner
	// than the cache TTL is asked about again after it expired (and is
	// refused by exp then anyway).
	short := iss.Claims(resource, "acme", "bob", readScope)
	short["exp"] = c.now().Add(20 * time.Second).Unix()
	st := iss.Mint(t, short, nil)
	before := iss.IntrospectionRequests()
	get(t, srv.URL, http.MethodGet, "Authorization", "Bearer "+st)
	if iss.IntrospectionRequests() != before+1 {
		t.Fatalf("introspection not asked for a new token")
	}

	// Introspection down: fail closed with 503.
	down := newVerifier(t, iss, &bearer.Options{
		JWKSURL:       iss.JWKSURL,
		Introspection: &bearer.Introspection{URL: iss.IntrospectionURL, ClientID: "rs", ClientSecret: "wrong"},
	})
	if got := get(t, protected(t, down).URL, http.MethodGet, "Authorization", "Bearer "+iss.Mint(t, iss.Claims(resource, "acme", "alice"), nil)); got.status != 503 {
		t.Errorf("introspection refusing us: status %d, want 503", got.status)
	}
}

func TestIntrospectionCacheBoundedByExpiry(t *testing.T) {
	iss := bearertest.New(t, nil)
	var c clock
	v := newVerifier(t, iss, &bearer.Options{
		JWKSURL: iss.JWKSURL, Now: c.now, ClockSkew: time.Minute,
		Introspection: &bearer.Introspection{URL: iss.IntrospectionURL, CacheTTL: time.Hour},
	})
	claims := iss.Claims(resource, "acme", "alice")
	claims["exp"] = time.Now().Add(10 * time.Second).Unix()
	token := iss.Mint(t, claims, nil)
	ctx := context.Background()
	if _, err := v.Verify(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, token); err != nil {
		t.Fatal(err)
	}
	if got, want := iss.IntrospectionRequests(), int64(1); got != want {
		t.Errorf("introspection requests before exp = %d, want %d", got, want)
	}
	// Past exp but within the skew: the cached answer expired with the
	// token although the cache TTL is an hour, so the server is asked again.
	c.advance(20 * time.Second)
	if _, err := v.Verify(ctx, token); err != nil {
		t.Fatalf("Verify within the skew: %v", err)
	}
	if got, want := iss.IntrospectionRequests(), int64(2); got != want {
		t.Errorf("introspection requests = %d, want %d", got, want)
	}
}

func TestNewVerifierRefuses(t *testing.T) {
	tests := []struct {
		name, issuer, resource string
		opts                   bearer.Options
		want                   string
	}{
		{"plain http issuer", "http://auth.example.com", resource, bearer.Options{}, "plain http"},
		{"plain http resource", "https://auth.example.com", "http://mcp.example.com", bearer.Options{}, "plain http"},
		{"plain http JWKS", "https://auth.example.com", resource, bearer.Options{JWKSURL: "http://auth.example.com/jwks"}, "plain http"},
		{"plain http introspection", "https://auth.example.com", resource, bearer.Options{Introspection: &bearer.Introspection{URL: "http://auth.example.com/i"}}, "plain http"},
		{"issuer with query", "https://auth.example.com?x=1", resource, bearer.Options{}, "query"},
		{"issuer with user info", "https://u:p@auth.example.com", resource, bearer.Options{}, "user information"},
		{"resource with fragment", "https://auth.example.com", resource + "#x", bearer.Options{}, "fragment"},
		{"relative issuer", "/auth", resource, bearer.Options{}, "https"},
		{"no issuer", "", resource, bearer.Options{}, "issuer is required"},
		{"HS256", "https://auth.example.com", resource, bearer.Options{Algorithms: []string{"HS256"}}, "not accepted"},
		{"none", "https://auth.example.com", resource, bearer.Options{Algorithms: []string{"none"}}, "not accepted"},
		{"skew too large", "https://auth.example.com", resource, bearer.Options{ClockSkew: time.Hour}, "clock skew"},
		{"negative skew", "https://auth.example.com", resource, bearer.Options{ClockSkew: -time.Second}, "clock skew"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bearer.NewVerifier(tt.issuer, tt.resource, &tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewVerifier = %v, want an error containing %q", err, tt.want)
			}
		})
	}

	accepted := []struct {
		name, issuer string
		opts         bearer.Options
	}{
		{"https", "https://auth.example.com/tenant", bearer.Options{}},
		{"loopback http", "http://127.0.0.1:9000", bearer.Options{}},
		{"localhost http", "http://localhost:9000", bearer.Options{}},
		{"IPv6 loopback http", "http://[::1]:9000", bearer.Options{}},
		{"plain http allowed explicitly", "http://auth.internal", bearer.Options{AllowInsecureHTTP: true}},
	}
	for _, tt := range accepted {
		if _, err := bearer.NewVerifier(tt.issuer, resource, &tt.opts); err != nil {
			t.Errorf("%s: NewVerifier = %v, want nil", tt.name, err)
		}
	}
}

func TestSameResource(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://mcp.example.com", "https://mcp.example.com", true},
		{"https://mcp.example.com/", "https://mcp.example.com", true},
		{"https://mcp.example.com", "https://mcp.example.com/", true},
		{"https://mcp.example.com/mcp/", "https://mcp.example.com/mcp", true},
		{"https://mcp.example.com//", "https://mcp.example.com", false},
		{"https://MCP.example.com", "https://mcp.example.com", false},
		{"https://mcp.example.com:443", "https://mcp.example.com", false},
		{"http://mcp.example.com", "https://mcp.example.com", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp2", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com", false},
		{"", "", false},
		{"/", "", false},
	}
	for _, tt := range tests {
		if got := bearer.SameResource(tt.a, tt.b); got != tt.want {
			t.Errorf("SameResource(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestMetadataURL(t *testing.T) {
	tests := []struct{ resource, want string }{
		{"https://mcp.example.com", "https://mcp.example.com/.well-known/oauth-protected-resource"},
		{"https://mcp.example.com/", "https://mcp.example.com/.well-known/oauth-protected-resource"},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"},
		{"http://127.0.0.1:8080/a/b/", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/b"},
	}
	for _, tt := range tests {
		got, err := bearer.MetadataURL(tt.resource)
		if err != nil || got != tt.want {
			t.Errorf("MetadataURL(%q) = %q, %v; want %q", tt.resource, got, err, tt.want)
		}
	}
	if _, err := bearer.MetadataURL("mcp"); err == nil {
		t.Error("MetadataURL of a relative URL succeeded")
	}
}

func TestMetadata(t *testing.T) {
	iss := bearertest.New(t, nil)
	v := newVerifier(t, iss, nil)
	got := v.Metadata("Issues", []string{readScope, writeScope})
	want := &oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{iss.URL},
		ScopesSupported:        []string{readScope, writeScope},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Issues",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Metadata mismatch (-want +got):\n%s", diff)
	}
}

// TestTokenVerifier checks the adapter for the SDK's own middleware.
func TestTokenVerifier(t *testing.T) {
	iss := bearertest.New(t, nil)
	v := newVerifier(t, iss, nil)
	tv := v.TokenVerifier()
	ti, err := tv(context.Background(), iss.Mint(t, iss.Claims(resource, "acme", "alice", readScope), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := bearer.PrincipalFromTokenInfo(ti)
	if p == nil || p.Subject != "alice" || p.Tenant != "acme" || p.ClientID != "test-client" || !p.HasScope(readScope) {
		t.Errorf("principal = %+v", p)
	}
	if ti.UserID != p.UserID() || ti.Expiration.IsZero() {
		t.Errorf("token info = %+v", ti)
	}
	_, err = tv(context.Background(), "x.y.z", nil)
	if !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("bad token error = %v, want one wrapping auth.ErrInvalidToken", err)
	}
}

// FuzzVerify feeds arbitrary tokens to the verifier: it must never panic,
// and whatever it accepts must carry exactly the header and claims the
// issuer signed.
func FuzzVerify(f *testing.F) {
	iss := bearertest.New(f, nil)
	v, err := bearer.NewVerifier(iss.URL, resource, &bearer.Options{JWKSURL: iss.JWKSURL, TenantClaim: "tenant"})
	if err != nil {
		f.Fatal(err)
	}
	good := iss.Mint(f, iss.Claims(resource, "acme", "alice", readScope), nil)
	f.Add(good)
	f.Add("")
	f.Add("a.b.c")
	f.Add(iss.Mint(f, iss.Claims(resource, "acme", "alice"), &bearertest.Header{Alg: "none"}))
	f.Add(iss.Mint(f, iss.Claims(resource, "acme", "alice"), &bearertest.Header{Alg: "HS256", HMAC: iss.Key().PublicPEM()}))
	f.Add(strings.Replace(good, ".", "..", 1))
	goodParts := decodeParts(good)
	f.Fuzz(func(t *testing.T, token string) {
		p, err := v.Verify(context.Background(), token)
		if err != nil {
			var e *bearer.Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify error %T is not a *bearer.Error", err)
			}
			return
		}
		if got := decodeParts(token); got[0] != goodParts[0] || got[1] != goodParts[1] || p.Subject != "alice" {
			t.Fatalf("accepted a token that the issuer did not sign: %q", token)
		}
	})
}

func decodeParts(token string) [2]string {
	parts := strings.Split(token, ".")
	var out [2]string
	for i := 0; i < 2 && i < len(parts); i++ {
		b, _ := base64.RawURLEncoding.DecodeString(parts[i])
		out[i] = string(b)
	}
	return out
}

func TestParseScope(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"mcp:read mcp:write", []string{"mcp:read", "mcp:write"}},
		{"a!#[]^~ b", []string{"a!#[]^~", "b"}},
		{"", nil},
		{" a", nil},
		{"a ", nil},
		{"a  b", nil},
		{"a\tb", nil},
		{"a\nb", nil},
		{"a\rb", nil},
		{`a"b`, nil},
		{`a\b`, nil},
		{"a\x7fb", nil},
		{"a\u00a0b", nil},
		{"caf\u00e9", nil},
	}
	for _, tt := range tests {
		got, ok := bearer.ParseScope(tt.in)
		if ok != (tt.want != nil) || !cmp.Equal(got, tt.want) {
			t.Errorf("ParseScope(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

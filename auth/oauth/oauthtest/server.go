// Package oauthtest runs a real OAuth 2.1 / OpenID Connect authorization
// server for tests on a loopback httptest server: the OpenID provider of
// github.com/zitadel/oidc/v3 (authorization endpoint, PKCE S256
// verification, the authorization code and refresh token grants, JWT access
// tokens, discovery, keys) over an in-memory storage that binds each grant
// to the RFC 8707 resource the client named, rotates refresh tokens (a spent
// refresh token is refused) and knows one public client and a few users.
// A small login page stands in for the provider's user interface;
// [Server.Authorize] plays the person in front of the browser.
//
// The provider signs access tokens with header typ "JWT", not RFC 9068's
// "at+jwt", and does not send the RFC 9207 iss parameter; [Server.Verify]
// checks its tokens for resource servers in tests.
//
// Only tests import this package.
package oauthtest

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/airlockhq/airlock/auth/bearer"
)

// Options configures a [Server]. Nil gives the defaults.
type Options struct {
	// ClientID is the public client's id. Empty means "airlock".
	ClientID string
	// RedirectURIs are the client's registered redirect URIs.
	RedirectURIs []string
	// NoPKCE makes the server advertise no code challenge method.
	NoPKCE bool
	// AccessTokenTTL is the lifetime of access tokens. Zero means five
	// minutes.
	AccessTokenTTL time.Duration
	// Tenant, if set, goes into access tokens as the "tenant" claim.
	Tenant string
	// Withhold are scopes the server never grants, however often they
	// are asked for.
	Withhold []string
	// Service, if set, is a confidential client that obtains tokens
	// with the client credentials grant.
	Service *ServiceClient
	// NoOfflineAccess leaves offline_access out of the scopes the
	// server's metadata lists as supported.
	NoOfflineAccess bool
	// OptionalResource lets authorization and token requests name no
	// resource, as an OpenID Connect sign-in does: its tokens are for the
	// client.
	OptionalResource bool
	// People are users the login page accepts besides [User], each with
	// a tenant of their own (in place of Tenant) for the "tenant" claim.
	People []Person
	// TenantInUserinfoOnly leaves the "tenant" claim out of ID tokens: the
	// userinfo endpoint still answers it.
	TenantInUserinfoOnly bool
}

// A Person is a user the login page accepts.
type Person struct {
	Name, Password, Tenant string
}

// ServiceClient is a client registered for the client credentials grant
// (a CI job, a daemon). It proves who it is with Secret (HTTP Basic or the
// form) or, when PublicKey is set, with an RFC 7523 assertion signed by
// the matching private key, which the token endpoint verifies (signature,
// issuer and subject, audience the issuer, expiry).
type ServiceClient struct {
	ID        string
	Secret    string
	PublicKey crypto.PublicKey
}

// Server is a running authorization server.
type Server struct {
	// URL is the issuer (the server's base URL).
	URL string

	provider *op.Provider
	storage  *storage
	verifier *op.AccessTokenVerifier
	mux      *http.ServeMux
}

// Users and passwords the login page accepts.
const (
	User     = "alice"
	Password = "correct horse battery staple"
)

// New starts a server on loopback. It is closed when the test ends.
func New(t testing.TB, opts *Options) *Server {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ClientID == "" {
		o.ClientID = "airlock"
	}
	if o.AccessTokenTTL == 0 {
		o.AccessTokenTTL = 5 * time.Minute
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	st := &storage{
		key: key, keyID: "k1", clientID: o.ClientID, redirect: o.RedirectURIs, tenant: o.Tenant, withhold: o.Withhold, service: o.Service,
		users: map[string]string{User: Password}, tenants: map[string]string{}, ttl: o.AccessTokenTTL,
		optionalResource: o.OptionalResource, userinfoOnly: o.TenantInUserinfoOnly,
		requests: map[string]*authRequest{}, codes: map[string]string{},
		refresh: map[string]*refreshGrant{}, revokedR: map[string]bool{}, revoked: map[string]bool{},
	}
	for _, p := range o.People {
		st.users[p.Name], st.tenants[p.Name] = p.Password, p.Tenant
	}
	mux := http.NewServeMux()
	s := &Server{storage: st, mux: mux}
	hs := httptest.NewUnstartedServer(mux)
	s.URL = "http://" + hs.Listener.Addr().String()

	var cryptoKey [32]byte
	rand.Read(cryptoKey[:])
	supported := []string{oidc.ScopeOpenID, oidc.ScopeOfflineAccess, "mcp:read", "mcp:write"}
	if o.NoOfflineAccess {
		supported = slices.DeleteFunc(supported, func(s string) bool { return s == oidc.ScopeOfflineAccess })
	}
	s.provider, err = op.NewProvider(&op.Config{
		CryptoKey:               cryptoKey,
		CodeMethodS256:          !o.NoPKCE,
		GrantTypeRefreshToken:   true,
		AuthMethodPost:          true,
		AuthMethodPrivateKeyJWT: true,
		SupportedScopes:         supported,
	}, st, op.StaticIssuer(s.URL), op.WithAllowInsecure(), op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	s.verifier = op.NewAccessTokenVerifier(s.URL, &op.OpenIDKeySet{Storage: st})
	st.assertions = op.NewJWTProfileVerifier(st, s.URL, time.Hour, time.Second)
	mux.HandleFunc("/login", s.login)
	mux.Handle("/", withResource(s.provider))
	hs.Start()
	t.Cleanup(hs.Close)
	return s
}

// withResource hands the request's parameters to the storage through the
// context: the provider parses the parameters it knows and ignores the
// rest (the resource; a client assertion, which it does not check for the
// client credentials grant).
func withResource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		ctx := context.WithValue(r.Context(), formKey{}, r.Form)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// login is the provider's login user interface: a form, then a redirect
// back to the provider's callback.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("id")
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post"><input type="hidden" name="id" value="%s">`+
			`<input name="username"><input name="password" type="password"></form>`, html.EscapeString(id))
		return
	}
	user := r.FormValue("username")
	if pw, ok := s.storage.users[user]; !ok || pw != r.FormValue("password") {
		http.Error(w, "wrong user name or password", http.StatusForbidden)
		return
	}
	if err := s.storage.complete(id, user); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(s.provider)(op.ContextWithIssuer(r.Context(), s.URL), id), http.StatusFound)
}

// Authorize plays the person in the browser: it opens authURL, logs in as
// user with password, and follows the provider's redirects until one leaves
// the server. It returns that redirect's target (the client's redirect URI
// with the code, or with an error), without visiting it.
func (s *Server) Authorize(ctx context.Context, authURL, user, password string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next := authURL
	for range 10 {
		u, err := url.Parse(next)
		if err != nil {
			return "", err
		}
		if u.Scheme+"://"+u.Host != s.URL {
			return next, nil
		}
		var req *http.Request
		if u.Path == "/login" {
			form := url.Values{"id": {u.Query().Get("id")}, "username": {user}, "password": {password}}
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, next, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 != 3 || loc == "" {
			return "", fmt.Errorf("authorization server answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		l, err := u.Parse(loc)
		if err != nil {
			return "", err
		}
		next = l.String()
	}
	return "", errors.New("too many redirects")
}

// Requested returns the scopes of every authorization request and client
// credentials token request so far, in order, as the client sent them
// (nil for a request that named none).
func (s *Server) Requested() [][]string {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	return slices.Clone(s.storage.requested)
}

// Stats returns what the server has done so far.
func (s *Server) Stats() Stats {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	return s.storage.stats
}

// SetAccessTokenTTL changes the lifetime of access tokens issued from now on.
func (s *Server) SetAccessTokenTTL(d time.Duration) {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	s.storage.ttl = d
}

// RevokeAccessTokens makes every access token issued so far fail
// [Server.Verify], as if the authorization server had revoked them.
func (s *Server) RevokeAccessTokens() {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	for _, id := range s.storage.issued {
		s.storage.revoked[id] = true
	}
}

// RevokeGrants revokes every refresh token issued so far, as an
// authorization server does when a person withdraws a client's access: a
// refresh with one of them is answered invalid_grant (and counted in
// [Stats].RevokedRefreshTokens).
func (s *Server) RevokeGrants() {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	for rt := range s.storage.refresh {
		s.storage.revokedR[rt] = true
	}
	clear(s.storage.refresh)
}

// Claims are the checked claims of an access token.
type Claims struct {
	Subject  string
	ClientID string
	Audience []string
	Scopes   []string
	Tenant   string
	Expiry   time.Time
}

// Verify checks an access token the way a resource server for resource
// would: signature, issuer, expiry, audience (under [bearer.SameResource])
// and revocation.
func (s *Server) Verify(ctx context.Context, token, resource string) (*Claims, error) {
	c, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, token, s.verifier)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return bearer.SameResource(a, resource) }) {
		return nil, errors.New("token audience does not include this resource")
	}
	s.storage.mu.Lock()
	revoked := s.storage.revoked[c.JWTID]
	s.storage.mu.Unlock()
	if revoked {
		return nil, errors.New("token is revoked")
	}
	tenant, _ := c.Claims["tenant"].(string)
	return &Claims{
		Subject: c.Subject, ClientID: c.ClientID, Audience: c.Audience, Scopes: c.Scopes,
		Tenant: tenant, Expiry: c.Expiration.AsTime(),
	}, nil
}

package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
)

const (
	serviceID     = "ci-runner"
	serviceSecret = "a-client-secret-only-the-token-endpoint-sees"
)

// serviceEnv is a world with a service client registered at the
// authorization server and the server configured for the client
// credentials grant, with nobody to log in: a person who is asked fails
// the test.
func serviceEnv(t *testing.T, svc *oauthtest.ServiceClient, configure func(s *oauth.Server), o *envOptions) *env {
	t.Helper()
	if o == nil {
		o = &envOptions{}
	}
	if o.as == nil {
		o.as = &oauthtest.Options{}
	}
	o.as.Service = svc
	e := newEnv(t, o)
	e.user.Store(func(context.Context, string) error {
		t.Error("a person was asked to log in for a client credentials server")
		return errors.New("nobody is here")
	})
	e.srv.Grant = oauth.GrantClientCredentials
	e.srv.ClientID = serviceID
	e.srv.Scopes = nil
	configure(e.srv)
	return e
}

func withSecret(secret string) func(*oauth.Server) {
	return func(s *oauth.Server) { s.ClientSecret = secret }
}

func withKey(key crypto.Signer) func(*oauth.Server) {
	return func(s *oauth.Server) { s.PrivateKey = key }
}

// TestClientCredentialsSecret: a headless client's calls get a token
// issued with its secret (HTTP Basic) at the first call, for the resource
// and the scopes the server names; an expired token is issued again, with
// nobody logging in.
func TestClientCredentialsSecret(t *testing.T) {
	e := serviceEnv(t, &oauthtest.ServiceClient{ID: serviceID, Secret: serviceSecret}, withSecret(serviceSecret), nil)
	ctx := context.Background()

	cs := e.openSession()
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call read = %q, %v", got, err)
	}
	tokens := e.rs.Seen()
	claims, err := e.as.Verify(ctx, tokens[0], e.rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Subject != serviceID || !cmp.Equal(claims.Audience, []string{e.rs.URL}) {
		t.Errorf("token subject %q, audience %q; want %q and the resource", claims.Subject, claims.Audience, serviceID)
	}
	if diff := cmp.Diff([][]string{{scopeRead}}, e.as.Requested()); diff != "" {
		t.Errorf("scopes requested (-want +got):\n%s", diff)
	}
	st, err := e.client.Status(ctx, e.srv, e.who)
	if err != nil || !st.LoggedIn || !st.Refreshable || st.Registration != "preregistered" || !cmp.Equal(st.Scopes, []string{scopeRead}) {
		t.Errorf("Status = %+v, %v; want logged in, renewable without a person, scopes %s", st, err, scopeRead)
	}

	// Past the token's expiry, the next call's token is issued again.
	e.as.SetAccessTokenTTL(time.Hour)
	e.clock.advance(10 * time.Minute)
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call after expiry = %q, %v", got, err)
	}
	if got := e.as.Stats(); got.ClientCredentials != 2 || got.CodeExchanges != 0 || got.MissingResource != 0 {
		t.Errorf("authorization server stats = %+v, want two client credentials tokens, each for the resource", got)
	}
	if tokens := e.rs.Seen(); tokens[0] == tokens[len(tokens)-1] {
		t.Error("the call after expiry used the expired token")
	}

	// Tokens are kept per partition: another user's calls get their own.
	// Not having one yet needs nobody: the first call obtains it.
	if st, err := e.client.Status(ctx, e.srv, oauth.Owner{Tenant: "acme", User: "bob"}); err != nil || st.LoggedIn || !st.Refreshable {
		t.Errorf("bob's status = %+v, %v; want no token of his own yet, and one to be had without a person", st, err)
	}
	scanForSecret(t, e.storeDir, serviceSecret)
	scanForSecret(t, e.storeDir, tokens[0])
}

// TestClientCredentialsLogin: airlock auth login on a client credentials
// server asks nobody and obtains a token at once; a wrong secret is
// refused by the token endpoint with an error that says what to check and
// never quotes the secret.
func TestClientCredentialsLogin(t *testing.T) {
	e := serviceEnv(t, &oauthtest.ServiceClient{ID: serviceID, Secret: serviceSecret}, withSecret(serviceSecret), nil)
	st, err := e.client.Login(context.Background(), e.srv, e.who)
	if err != nil || !st.LoggedIn || st.Issuer != e.as.URL {
		t.Fatalf("Login = %+v, %v; want a token from %s", st, err, e.as.URL)
	}

	wrong := *e.srv
	wrong.ID, wrong.ClientSecret = "other", "not-the-secret-of-this-client"
	_, err = e.client.Login(context.Background(), &wrong, e.who)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), "refused the client credentials") {
		t.Fatalf("Login with a wrong secret = %v, want KindRefused", err)
	}
	if strings.Contains(err.Error(), wrong.ClientSecret) || strings.Contains(err.Error(), serviceSecret) {
		t.Errorf("the error quotes a secret: %v", err)
	}
	if got := e.as.Stats(); got.RefusedClients != 1 || got.ClientCredentials != 1 {
		t.Errorf("authorization server stats = %+v, want one refused client and one token", got)
	}
}

// TestClientCredentialsPrivateKeyJWT: with a private key, the client
// proves who it is with an RFC 7523 assertion whose signature the token
// endpoint verifies against the client's registered public key; an
// assertion signed with another key is refused there, and a key whose
// algorithm the authorization server does not list is refused before
// anything is sent.
func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	key := rsaKey(t)
	e := serviceEnv(t, &oauthtest.ServiceClient{ID: serviceID, PublicKey: key.Public()}, withKey(key), nil)
	cs := e.openSession()
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call read = %q, %v", got, err)
	}
	// Past the token's expiry (on the host's clock), a new assertion, dated
	// by the real clock the authorization server checks it with, gets
	// another token.
	e.as.SetAccessTokenTTL(time.Hour)
	e.clock.advance(10 * time.Minute)
	if got, err := call(cs, "read"); err != nil || got != "read ok" {
		t.Fatalf("call after expiry = %q, %v", got, err)
	}
	if got := e.as.Stats(); got.Assertions != 2 || got.ClientCredentials != 2 {
		t.Errorf("authorization server stats = %+v, want two verified assertions and two tokens", got)
	}

	other := *e.srv
	other.ID, other.PrivateKey = "other", rsaKey(t)
	_, err := e.client.Login(context.Background(), &other, e.who)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), "refused the client credentials") {
		t.Fatalf("Login with another key = %v, want KindRefused", err)
	}
	if got := e.as.Stats(); got.RefusedClients != 1 {
		t.Errorf("refused clients = %d, want 1 (the assertion's signature did not verify)", got.RefusedClients)
	}

	// The provider lists RS256 only for token endpoint assertions.
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other.ID, other.PrivateKey = "ec", ec
	_, err = e.client.Login(context.Background(), &other, e.who)
	if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), "does not take assertions signed with ES256") {
		t.Fatalf("Login with an ES256 key = %v, want KindRefused naming the algorithm", err)
	}
	if got := e.as.Stats(); got.RefusedClients != 1 || got.ClientCredentials != 2 {
		t.Errorf("authorization server stats = %+v: an assertion it does not take was sent", got)
	}
}

// TestClientCredentialsStepUp: a client credentials server that wants
// more scopes gets a token issued for the union, without a person, when
// the configuration leaves the scopes to the server; configured scopes
// bound what the client asks for.
func TestClientCredentialsStepUp(t *testing.T) {
	e := serviceEnv(t, &oauthtest.ServiceClient{ID: serviceID, Secret: serviceSecret}, withSecret(serviceSecret),
		&envOptions{consent: func(context.Context, *oauth.StepUp) (bool, error) { return false, nil }})
	cs := e.openSession()
	if got, err := call(cs, "write"); err != nil || got != "write ok" {
		t.Fatalf("call write = %q, %v", got, err)
	}
	if diff := cmp.Diff([][]string{{scopeRead}, {scopeRead, scopeWrite}}, e.as.Requested(), sortScopes); diff != "" {
		t.Errorf("scopes requested (-want +got):\n%s", diff)
	}
	if e.consents.Load() != 0 {
		t.Errorf("a person was asked %d times", e.consents.Load())
	}

	bounded := *e.srv
	bounded.ID, bounded.Scopes = "bounded", []string{scopeRead}
	tr, err := e.client.Transport(&bounded, e.who, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = callWith(t, tr, e.srv.URL, "write")
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindInsufficientScope || !strings.Contains(err.Error(), "configured scopes") {
		t.Errorf("write with configured scopes = %v, want KindInsufficientScope naming them", err)
	}
}

// TestClientCredentialsDiscovery: what an authorization server's metadata
// must say before a client's secret or assertion is sent to it. PKCE is
// not among it: the grant has no authorization request to protect.
func TestClientCredentialsDiscovery(t *testing.T) {
	tests := []struct {
		name string
		edit func(self string, doc map[string]any)
		want string // "" when a token is issued
	}{
		{"no PKCE advertised", func(self string, doc map[string]any) {
			doc["issuer"] = self
			delete(doc, "code_challenge_methods_supported")
		}, ""},
		{"no client_credentials grant", func(self string, doc map[string]any) {
			doc["issuer"] = self
			doc["grant_types_supported"] = []string{"authorization_code", "refresh_token"}
		}, "does not offer the client_credentials grant"},
		{"no client secret", func(self string, doc map[string]any) {
			doc["issuer"] = self
			doc["token_endpoint_auth_methods_supported"] = []string{"private_key_jwt"}
		}, "takes no client secret"},
		{"plain http token endpoint", func(self string, doc map[string]any) {
			doc["issuer"] = self
			doc["token_endpoint"] = "http://tokens.example.test/token"
		}, "is not https"},
		{"issuer mismatch", func(self string, doc map[string]any) {}, "does not match issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := serviceEnv(t, &oauthtest.ServiceClient{ID: serviceID, Secret: serviceSecret}, withSecret(serviceSecret),
				&envOptions{metadata: tt.edit})
			_, err := e.client.Login(context.Background(), e.srv, e.who)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Login = %v, want a token", err)
				}
				return
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Login = %v, want KindRefused containing %q", err, tt.want)
			}
			if got := e.as.Stats(); got.ClientCredentials != 0 || got.RefusedClients != 0 {
				t.Errorf("authorization server stats = %+v: the credentials were sent", got)
			}
		})
	}
}

// TestGrantChange: when the configuration moves a server from a person's
// login to the client credentials grant, the person's token does not serve
// the client's calls, and the other way round.
func TestGrantChange(t *testing.T) {
	e := serviceEnv(t, &oauthtest.ServiceClient{ID: serviceID, Secret: serviceSecret}, withSecret(serviceSecret), nil)
	person := *e.srv
	person.Grant, person.ClientID, person.ClientSecret, person.Scopes = "", "airlock", "", []string{scopeRead}
	e.user.Store(e.playUser(oauthtest.User, oauthtest.Password, nil))
	if _, err := e.client.Login(context.Background(), &person, e.who); err != nil {
		t.Fatal(err)
	}

	cs := e.openSession()
	if _, err := call(cs, "read"); err != nil {
		t.Fatal(err)
	}
	tokens := e.rs.Seen()
	claims, err := e.as.Verify(context.Background(), tokens[len(tokens)-1], e.rs.URL)
	if err != nil || claims.Subject != serviceID {
		t.Fatalf("the client credentials server's call carried a token for %q (%v), want one for %s", claims.Subject, err, serviceID)
	}

	tr, err := e.client.Transport(&person, e.who, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := callWith(t, tr, person.URL, "read"); !errors.Is(err, oauth.ErrAuthRequired) || !strings.Contains(err.Error(), "another grant") {
		t.Errorf("the person's call after the client's token replaced theirs = %v, want auth required", err)
	}
}

// TestParsePrivateKey: the forms a key file may take, and what is refused,
// without quoting the file.
func TestParsePrivateKey(t *testing.T) {
	rk := rsaKey(t)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(rk)
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	tests := []struct {
		name string
		pem  []byte
		want string // "" for a key
	}{
		{"PKCS #8 RSA", pemBlock("PRIVATE KEY", pkcs8), ""},
		{"PKCS #1 RSA", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk)), ""},
		{"SEC 1 P-384", pemBlock("EC PRIVATE KEY", sec1), ""},
		{"not PEM", []byte("secret-looking-bytes"), "no PEM block"},
		{"a certificate", pemBlock("CERTIFICATE", []byte("x")), `"CERTIFICATE", not a private key`},
		{"encrypted", pemBlock("ENCRYPTED PRIVATE KEY", []byte("x")), "encrypted"},
		{"garbage", pemBlock("PRIVATE KEY", []byte("secret-looking-bytes")), "cannot be parsed"},
		{"RSA 1024", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small)), "at least 2048"},
	}
	for _, tt := range tests {
		_, err := oauth.ParsePrivateKey(tt.pem)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "secret-looking"):
			t.Errorf("%s: the error quotes the file: %v", tt.name, err)
		}
	}
}

// callWith calls tool at endpoint on a session of its own over tr.
func callWith(t *testing.T, tr http.RoundTripper, endpoint, tool string) (string, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	return call(cs, tool)
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

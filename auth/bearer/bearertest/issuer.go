// Package bearertest is a small, real OAuth authorization server for tests:
// it publishes RFC 8414 metadata and a JWKS on a loopback httptest server,
// mints RFC 9068 access tokens signed with keys generated at start, rotates
// keys, revokes tokens and answers RFC 7662 introspection. For clients that
// log in, it runs the authorization code flow with PKCE S256 and the RFC
// 8707 resource, and rotates refresh tokens (login.go); for services, the
// client credentials grant with a secret or RFC 7523 assertions
// (service.go).
//
// Tokens are built and signed here with the standard library only (not with
// the JWT library the verifier uses), so that tests of the verifier do not
// share its encoder. Only tests import this package.
package bearertest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Options configures an [Issuer]. Nil gives the defaults.
type Options struct {
	// ClientID and ClientSecret, when set, are required (HTTP Basic) at the
	// introspection endpoint.
	ClientID, ClientSecret string
	// NoMetadata makes it a 2025-03-26 authorization server: it publishes
	// no metadata document (clients fall back to /authorize and /token on
	// its origin) and sends no RFC 9207 iss in its redirects.
	NoMetadata bool
}

// Issuer is a running test authorization server. Its methods are safe for
// concurrent use.
type Issuer struct {
	// URL is the issuer identifier (the server's base URL).
	URL string
	// JWKSURL and IntrospectionURL are its endpoints.
	JWKSURL, IntrospectionURL string

	srv  *httptest.Server
	mux  *http.ServeMux
	opts Options

	mu      sync.Mutex
	keys    []*Key // published; keys[0] signs by default
	minted  map[string]time.Time
	revoked map[string]bool

	jwksHits, introspectHits, metadataHits atomic.Int64

	logins logins // the authorization code flow (login.go)
}

// Key is a signing key of the issuer.
type Key struct {
	ID  string
	Alg string // RS256 or ES256
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

// New starts an issuer on loopback with one RS256 key, "key-1". It is
// closed when the test ends.
func New(t testing.TB, opts *Options) *Issuer {
	t.Helper()
	iss := &Issuer{minted: map[string]time.Time{}, revoked: map[string]bool{}}
	if opts != nil {
		iss.opts = *opts
	}
	iss.keys = []*Key{NewRSAKey(t, "key-1")}
	mux := http.NewServeMux()
	iss.mux = mux
	if !iss.opts.NoMetadata {
		mux.HandleFunc("GET /.well-known/oauth-authorization-server", iss.serveMetadata)
	}
	mux.HandleFunc("GET /jwks", iss.serveJWKS)
	mux.HandleFunc("POST /introspect", iss.serveIntrospect)
	mux.HandleFunc("GET /authorize", iss.serveAuthorize)
	mux.HandleFunc("POST /token", iss.serveToken)
	// The URLs are set before the server starts: handlers read them, and
	// a request that follows New over the network is no happens-before
	// edge the race detector can see.
	iss.srv = httptest.NewUnstartedServer(mux)
	iss.URL = "http://" + iss.srv.Listener.Addr().String()
	iss.JWKSURL = iss.URL + "/jwks"
	iss.IntrospectionURL = iss.URL + "/introspect"
	iss.srv.Start()
	t.Cleanup(iss.srv.Close)
	return iss
}

// NewRSAKey generates an RS256 signing key.
func NewRSAKey(t testing.TB, id string) *Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: id, Alg: "RS256", rsa: k}
}

// NewECKey generates an ES256 signing key.
func NewECKey(t testing.TB, id string) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: id, Alg: "ES256", ec: k}
}

// PublicPEM returns the key's public half as PEM (PKIX), the form an
// attacker would use as an HMAC secret in an algorithm-confusion attack.
func (k *Key) PublicPEM() []byte {
	var pub any = &k.rsa.PublicKey
	if k.ec != nil {
		pub = &k.ec.PublicKey
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Key returns the current signing key.
func (iss *Issuer) Key() *Key {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return iss.keys[0]
}

// SetKeys replaces the published keys; keys[0] signs from now on.
func (iss *Issuer) SetKeys(keys ...*Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys = keys
}

// Rotate replaces the published keys with one new RS256 key named id and
// returns it.
func (iss *Issuer) Rotate(t testing.TB, id string) *Key {
	k := NewRSAKey(t, id)
	iss.SetKeys(k)
	return k
}

// JWKSRequests, IntrospectionRequests and MetadataRequests count requests
// served.
func (iss *Issuer) JWKSRequests() int64          { return iss.jwksHits.Load() }
func (iss *Issuer) IntrospectionRequests() int64 { return iss.introspectHits.Load() }
func (iss *Issuer) MetadataRequests() int64      { return iss.metadataHits.Load() }

// Claims returns the claims of a good access token for resource: issuer,
// subject, audience, client id, tenant, scopes, and times valid for five
// minutes.
func (iss *Issuer) Claims(resource, tenant, subject string, scopes ...string) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss":       iss.URL,
		"sub":       subject,
		"aud":       resource,
		"client_id": "test-client",
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"exp":       now.Add(5 * time.Minute).Unix(),
		"jti":       randomID(),
		"tenant":    tenant,
	}
	if len(scopes) > 0 {
		s := scopes[0]
		for _, x := range scopes[1:] {
			s += " " + x
		}
		c["scope"] = s
	}
	return c
}

// Header overrides parts of a minted token's protected header. Zero
// values mean the defaults: typ at+jwt, the signing key's alg and kid.
type Header struct {
	Typ    string
	Alg    string // "none" leaves the signature empty; "HS256" signs with HMAC
	Kid    string
	NoKid  bool
	NoTyp  bool
	Key    *Key   // sign with this key instead of the current one
	HMAC   []byte // the HMAC secret for Alg HS256
	Extras map[string]any
}

// Mint signs claims as an access token. h may be nil.
func (iss *Issuer) Mint(t testing.TB, claims map[string]any, h *Header) string {
	t.Helper()
	token, err := iss.mint(claims, h)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func (iss *Issuer) mint(claims map[string]any, h *Header) (string, error) {
	if h == nil {
		h = &Header{}
	}
	key := h.Key
	if key == nil {
		key = iss.Key()
	}
	hdr := map[string]any{"typ": "at+jwt", "alg": key.Alg, "kid": key.ID}
	if h.Typ != "" {
		hdr["typ"] = h.Typ
	}
	if h.NoTyp {
		delete(hdr, "typ")
	}
	if h.Alg != "" {
		hdr["alg"] = h.Alg
	}
	if h.Kid != "" {
		hdr["kid"] = h.Kid
	}
	if h.NoKid {
		delete(hdr, "kid")
	}
	for k, v := range h.Extras {
		hdr[k] = v
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return "", err
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	var sig []byte
	switch alg := hdr["alg"]; alg {
	case "none":
	case "HS256":
		m := hmac.New(sha256.New, h.HMAC)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case "RS256":
		d := sha256.Sum256([]byte(input))
		if sig, err = rsa.SignPKCS1v15(rand.Reader, key.rsa, crypto.SHA256, d[:]); err != nil {
			return "", err
		}
	case "ES256":
		d := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(rand.Reader, key.ec, d[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	default:
		return "", fmt.Errorf("bearertest: cannot sign with alg %v", alg)
	}
	token := input + "." + base64.RawURLEncoding.EncodeToString(sig)
	iss.mu.Lock()
	exp, _ := claims["exp"].(int64)
	iss.minted[token] = time.Unix(exp, 0)
	iss.mu.Unlock()
	return token, nil
}

// Revoke makes the introspection endpoint report token inactive.
func (iss *Issuer) Revoke(token string) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.revoked[token] = true
}

func (iss *Issuer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	iss.metadataHits.Add(1)
	grants, methods := []string{"authorization_code", "refresh_token"}, []string{"none"}
	iss.logins.mu.Lock()
	if len(iss.logins.services) > 0 {
		grants = append(grants, "client_credentials")
		methods = append(methods, "client_secret_basic", "private_key_jwt")
	}
	iss.logins.mu.Unlock()
	writeJSON(w, map[string]any{
		"issuer":                                           iss.URL,
		"authorization_endpoint":                           iss.URL + "/authorize",
		"token_endpoint":                                   iss.URL + "/token",
		"jwks_uri":                                         iss.JWKSURL,
		"introspection_endpoint":                           iss.IntrospectionURL,
		"response_types_supported":                         []string{"code"},
		"grant_types_supported":                            grants,
		"code_challenge_methods_supported":                 []string{"S256"},
		"token_endpoint_auth_methods_supported":            methods,
		"token_endpoint_auth_signing_alg_values_supported": []string{"RS256", "ES256"},
		"authorization_response_iss_parameter_supported":   true,
	})
}

func (iss *Issuer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	iss.jwksHits.Add(1)
	iss.mu.Lock()
	keys := iss.keys
	iss.mu.Unlock()
	var jwks []map[string]any
	for _, k := range keys {
		jwks = append(jwks, k.jwk())
	}
	writeJSON(w, map[string]any{"keys": jwks})
}

func (k *Key) jwk() map[string]any {
	b := base64.RawURLEncoding.EncodeToString
	if k.ec != nil {
		return map[string]any{
			"kty": "EC", "crv": "P-256", "kid": k.ID, "use": "sig", "alg": k.Alg,
			"x": b(k.ec.X.FillBytes(make([]byte, 32))), "y": b(k.ec.Y.FillBytes(make([]byte, 32))),
		}
	}
	return map[string]any{
		"kty": "RSA", "kid": k.ID, "use": "sig", "alg": k.Alg,
		"n": b(k.rsa.N.Bytes()), "e": b(big.NewInt(int64(k.rsa.E)).Bytes()),
	}
}

func (iss *Issuer) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	iss.introspectHits.Add(1)
	if iss.opts.ClientID != "" {
		// RFC 6749 §2.3.1: the id and secret are form-encoded before Basic.
		id, secret, ok := r.BasicAuth()
		id, err1 := url.QueryUnescape(id)
		secret, err2 := url.QueryUnescape(secret)
		if !ok || err1 != nil || err2 != nil || id != iss.opts.ClientID || secret != iss.opts.ClientSecret {
			w.Header().Set("WWW-Authenticate", `Basic realm="introspection"`)
			http.Error(w, "client authentication failed", http.StatusUnauthorized)
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	token := r.PostForm.Get("token")
	iss.mu.Lock()
	exp, known := iss.minted[token]
	revoked := iss.revoked[token]
	iss.mu.Unlock()
	writeJSON(w, map[string]any{"active": known && !revoked && time.Now().Before(exp)})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Transport returns a RoundTripper that adds `Authorization: Bearer token`
// to every request and otherwise behaves like base (nil means
// http.DefaultTransport).
func Transport(token string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return base.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// String describes the issuer for test logs.
// Handle serves h at pattern on the issuer's own origin: a 2025-03-26
// MCP server, whose origin is its authorization server.
func (iss *Issuer) Handle(pattern string, h http.Handler) { iss.mux.Handle(pattern, h) }

func (iss *Issuer) String() string { return fmt.Sprintf("test issuer %s", iss.URL) }

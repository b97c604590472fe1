package oauth

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/airlockhq/airlock/auth/bearer"
)

// Owner is who a credential belongs to: the tenancy the host acts for.
type Owner struct {
	Tenant string
	User   string
}

// Partition identifies one set of credentials: one person's tokens for one
// server's resource from one authorization server. Credentials are never
// shared across partitions.
type Partition struct {
	Tenant   string
	User     string
	Server   string
	Resource string
	Issuer   string
}

// Key returns the partition's storage key: a hash of its fields, so that
// the store sees no identities.
func (p Partition) Key() string {
	return hashKey("partition-v1", p.Tenant, p.User, p.Server, p.Resource, p.Issuer)
}

// bindingKey names the record that says which issuer a (tenant, user,
// server, resource) logged in with; the issuer is learned at login.
func bindingKey(who Owner, srv *Server) string {
	return "oauth/binding/" + hashKey("binding-v1", who.Tenant, who.User, srv.ID, srv.Resource)
}

func hashKey(domain string, fields ...string) string {
	h := sha256.New()
	h.Write([]byte(domain))
	for _, f := range fields {
		// Length-prefixed, so that no two field lists hash alike.
		fmt.Fprintf(h, "\x00%d:%s", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func tokenKey(p Partition) string  { return "oauth/" + p.Key() + "/token" }
func clientKey(p Partition) string { return "oauth/" + p.Key() + "/client" }

// Server is what the OAuth client needs to know about one remote server.
// The URLs are expected to have passed the configuration's checks
// (egress.ValidateURL); [Server.validate] checks what this package relies
// on.
type Server struct {
	// ID is the server's configured id.
	ID string
	// URL is the MCP endpoint.
	URL string
	// Resource is the OAuth resource (RFC 8707) of the server; it is never
	// derived from URL.
	Resource string
	// Scopes are requested for the server's tokens. When empty, the
	// server says which (the MCP specification's scope selection): the
	// scope of its 401 challenge, else its resource metadata's
	// scopes_supported, else none is requested.
	Scopes []string
	// Grant is how tokens are obtained: GrantAuthorizationCode (the
	// default when empty: a person logs in) or GrantClientCredentials.
	Grant Grant
	// RedirectURI is the loopback redirect URI the login listens on:
	// http, an IP literal loopback host and an explicit port.
	RedirectURI string
	// ClientID is a pre-registered client id.
	ClientID string
	// ClientSecret is the pre-registered client's secret, or "" for a
	// public client. It is sent to the token endpoint only.
	ClientSecret string
	// PrivateKey, with the client credentials grant instead of
	// ClientSecret, signs the client's assertions (private_key_jwt, RFC
	// 7523): an RSA, ECDSA (P-256, P-384, P-521) or Ed25519 key. Only
	// signatures leave the host.
	PrivateKey crypto.Signer
	// ClientMetadataURL is the https URL of this client's metadata
	// document, used as the client id where the authorization server
	// supports client ID metadata documents (preferred).
	ClientMetadataURL string
	// DynamicRegistration allows RFC 7591 registration when neither of
	// the above applies.
	DynamicRegistration bool
	// AllowPrivateNetworks lets this server's connections (including its
	// authorization server's) reach private addresses.
	AllowPrivateNetworks bool
	// RootCAs are the certificate authorities its connections trust; nil
	// means the system's.
	RootCAs *x509.CertPool
}

// Grant is how a server's tokens are obtained.
type Grant string

// The grants a [Server] may use.
const (
	// GrantAuthorizationCode: a person logs in ([Client.Login]); tokens
	// are refreshed with the refresh token.
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials: the client's own credentials (RFC 6749
	// §4.4), with nobody logging in; a token is issued when one is
	// needed and issued again when it expires.
	GrantClientCredentials Grant = "client_credentials"
)

// clientCredentials reports whether s uses the client credentials grant.
func (s *Server) clientCredentials() bool { return s.Grant == GrantClientCredentials }

// recordGrant is the Grant of the records of s's tokens.
func (s *Server) recordGrant() string {
	if s.clientCredentials() {
		return string(GrantClientCredentials)
	}
	return ""
}

func (s *Server) validate() error {
	switch {
	case s == nil:
		return errors.New("no server")
	case s.ID == "":
		return errors.New("the server has no id")
	case s.URL == "" || s.Resource == "":
		return fmt.Errorf("server %s needs url and resource", s.ID)
	case s.Grant != "" && s.Grant != GrantAuthorizationCode && s.Grant != GrantClientCredentials:
		return fmt.Errorf("server %s: grant %q is not one airlock uses", s.ID, printable(string(s.Grant), 32))
	case s.clientCredentials() && s.ClientID == "":
		return fmt.Errorf("server %s needs oauth.client_id for the client credentials grant", s.ID)
	case s.clientCredentials() && (s.ClientSecret == "") == (s.PrivateKey == nil):
		return fmt.Errorf("server %s needs exactly one of oauth.client_secret_env and oauth.private_key_file for the client credentials grant", s.ID)
	case !s.clientCredentials() && s.ClientID == "" && s.ClientMetadataURL == "" && !s.DynamicRegistration:
		return fmt.Errorf("server %s needs oauth.client_id, oauth.client_metadata_url or oauth.dynamic_registration", s.ID)
	}
	for _, sc := range s.Scopes {
		if !bearer.IsScopeToken(sc) {
			return fmt.Errorf("server %s: scope %q is not a valid OAuth scope", s.ID, sc)
		}
	}
	for _, raw := range []string{s.URL, s.Resource} {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("server %s: %q is not an absolute http(s) URL", s.ID, raw)
		}
	}
	if s.PrivateKey != nil {
		if _, err := signingAlg(s.PrivateKey); err != nil {
			return fmt.Errorf("server %s: oauth.private_key_file: %w", s.ID, err)
		}
	}
	if s.clientCredentials() {
		return nil // nobody logs in: there is no redirect
	}
	if _, err := redirectAddr(s.RedirectURI); err != nil {
		return fmt.Errorf("server %s: %w", s.ID, err)
	}
	return nil
}

// redirectAddr returns the loopback address to listen on for a redirect
// URI (RFC 8252 §7.3: an IP literal, so that the name cannot lead
// elsewhere, and a fixed port, so that it matches the registration).
func redirectAddr(raw string) (netip.AddrPort, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return netip.AddrPort{}, fmt.Errorf("redirect_uri must be http://127.0.0.1:PORT/PATH (a loopback address and a port), without a query")
	}
	ap, err := netip.ParseAddrPort(u.Host)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("redirect_uri must be http://127.0.0.1:PORT/PATH (a loopback IP address and an explicit port)")
	}
	return ap, nil
}

// union returns the scopes of a followed by those of b not in a.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sameOrigin reports whether a request URL goes to the server's origin.
func sameOrigin(endpoint *url.URL, u *url.URL) bool {
	return strings.EqualFold(endpoint.Scheme, u.Scheme) && strings.EqualFold(hostPort(endpoint), hostPort(u))
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

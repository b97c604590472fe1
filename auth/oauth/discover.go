package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/internal/schema"
)

const maxMetadataBytes = 1 << 20

// discovery is what a login learned about a server and its authorization
// server.
type discovery struct {
	prmURL string // "" for the 2025-03-26 fallback
	prm    *oauthex.ProtectedResourceMetadata
	asm    *oauthex.AuthServerMeta
}

// discover finds and checks the server's protected resource metadata and
// its authorization server's metadata. pin must be the login's, so that the
// SDK later sees the very documents checked here.
//
// A server that publishes no protected resource metadata at all (its
// challenge names none, and every well-known URL answers 404) is a
// 2025-03-26 server: its origin is its authorization server, whose
// metadata is used where it publishes some, and whose endpoints are
// otherwise the specification's defaults (/authorize, /token, /register
// on that origin). The SDK falls back the same way, from the same
// documents; PKCE S256 is sent all the same, and every endpoint must pass
// the egress guard.
func (c *Client) discover(ctx context.Context, pin *pinned, g *egress.Guard, srv *Server, challengeURL string) (*discovery, error) {
	d, legacy, err := resourceMetadata(ctx, pin, srv, challengeURL)
	if err != nil {
		return nil, err
	}
	if d.asm, err = authServerMetadata(ctx, pin, srv, d.prm.AuthorizationServers[0], legacy); err != nil {
		return nil, err
	}
	if err := checkEndpoints(ctx, g, srv, d.asm); err != nil {
		return nil, err
	}
	return d, nil
}

// resourceMetadata finds the server's protected resource metadata (RFC
// 9728): at the URL its challenge named, else at the well-known URLs of
// its resource and its URL. legacy reports a 2025-03-26 server, which
// publishes none anywhere and named none: its origin is then its
// authorization server.
func resourceMetadata(ctx context.Context, pin *pinned, srv *Server, challengeURL string) (d *discovery, legacy bool, err error) {
	hc := pin.client()
	var candidates []string
	add := func(u string, err error) {
		if err == nil && u != "" && !slices.Contains(candidates, u) {
			candidates = append(candidates, u)
		}
	}
	if challengeURL != "" {
		if u, err := url.Parse(challengeURL); err == nil && protected(u) && u.Host != "" {
			add(challengeURL, nil)
		}
	}
	add(bearer.MetadataURL(srv.Resource))
	add(bearer.MetadataURL(srv.URL))
	if u, err := url.Parse(srv.Resource); err == nil {
		add(u.Scheme+"://"+u.Host+bearer.WellKnownPath, nil)
	}

	d = &discovery{}
	var firstErr error
	for _, mu := range candidates {
		prm, err := fetchResourceMetadata(ctx, hc, mu)
		if e := fetchFailed(srv.ID, "the protected resource metadata", err); e != nil {
			// A server that stalls is not asked again at the next
			// candidate: the login would only wait that much longer.
			return nil, false, e
		}
		if err == nil && !bearer.SameResource(prm.Resource, srv.Resource) {
			err = fmt.Errorf("%s describes resource %q, not %q", mu, prm.Resource, srv.Resource)
		}
		if err == nil && len(prm.AuthorizationServers) == 0 {
			err = fmt.Errorf("%s names no authorization server", mu)
		}
		if err != nil {
			if firstErr == nil && !errors.Is(err, errNotFound) {
				firstErr = err
			}
			continue
		}
		d.prmURL, d.prm = mu, prm
		return d, false, nil
	}
	// A server whose challenge named metadata that is not there is
	// broken, not old.
	if firstErr != nil || challengeURL != "" {
		return nil, false, refused(srv.ID, "no protected resource metadata (RFC 9728) names the resource "+srv.Resource, firstErr)
	}
	if d.prm, err = legacyResourceMetadata(srv); err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// authServerMetadata fetches the metadata of the authorization server
// issuer (RFC 8414 or OpenID Connect discovery) and checks that it
// supports what the server's grant needs. A legacy server's
// authorization server may publish none: the 2025-03-26 default
// endpoints stand in.
func authServerMetadata(ctx context.Context, pin *pinned, srv *Server, issuer string, legacy bool) (*oauthex.AuthServerMeta, error) {
	getMetadata := auth.GetAuthServerMetadata
	if srv.clientCredentials() {
		// The SDK's fetch refuses metadata without PKCE, which the
		// client credentials grant does not use.
		getMetadata = fetchAuthServerMetadata
	}
	asm, err := getMetadata(ctx, issuer, pin.client())
	if err != nil {
		// The SDK keeps only the text of the errors it meets.
		if e := fetchFailed(srv.ID, "the authorization server's metadata", pin.failure()); e != nil {
			return nil, e
		}
		return nil, refused(srv.ID, "the authorization server's metadata is not acceptable", err)
	}
	switch {
	case asm == nil && legacy:
		// The 2025-03-26 default endpoints, as the SDK builds them.
		asm = &oauthex.AuthServerMeta{
			Issuer:                issuer,
			AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint:         issuer + "/token",
			RegistrationEndpoint:  issuer + "/register",
		}
	case asm == nil:
		// The SDK would fall back to guessed endpoints, without any proof
		// of PKCE support; a server that publishes resource metadata
		// names an authorization server that must publish its own.
		return nil, refused(srv.ID, "the authorization server "+issuer+" publishes no metadata (RFC 8414 or OpenID Connect discovery)", nil)
	case srv.clientCredentials():
		if err := checkClientCredentialsSupport(srv, asm); err != nil {
			return nil, err
		}
	case !slices.Contains(asm.CodeChallengeMethodsSupported, "S256"):
		return nil, refused(srv.ID, "the authorization server "+asm.Issuer+" does not advertise PKCE with S256 (code_challenge_methods_supported)", nil)
	}
	if asm.TokenEndpoint == "" || (asm.AuthorizationEndpoint == "" && !srv.clientCredentials()) {
		return nil, refused(srv.ID, "the authorization server's metadata lacks an authorization or token endpoint", nil)
	}
	return asm, nil
}

// checkEndpoints refuses endpoints the host would never be allowed to
// reach, before a person is sent to log in; the connection is checked
// again when made.
func checkEndpoints(ctx context.Context, g *egress.Guard, srv *Server, asm *oauthex.AuthServerMeta) error {
	endpoints := []string{asm.TokenEndpoint}
	if srv.DynamicRegistration && asm.RegistrationEndpoint != "" && !srv.clientCredentials() {
		endpoints = append(endpoints, asm.RegistrationEndpoint)
	}
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil || u.Hostname() == "" || u.User != nil {
			return refused(srv.ID, "the authorization server's metadata has an invalid endpoint", nil)
		}
		if u.Scheme != "https" && (u.Scheme != "http" || !egress.IsLoopbackHost(u.Hostname())) {
			// Codes, secrets and assertions would cross the network
			// unprotected.
			return refused(srv.ID, "the authorization server's endpoint "+where(u)+" is not https", nil)
		}
		if err := g.CheckHost(ctx, u.Hostname()); err != nil {
			return refused(srv.ID, "the authorization server's endpoint "+e+" is not reachable under the egress policy", err)
		}
	}
	return nil
}

var errNotFound = errors.New("not found")

// protected reports whether u is https, or plain http to a loopback
// address, as every URL whose answer decides where credentials go must be
// (RFC 8414 §2, RFC 9728 §3): the SDK holds an authorization server's
// metadata to the same rule.
func protected(u *url.URL) bool {
	return u.Scheme == "https" || (u.Scheme == "http" && egress.IsLoopbackHost(u.Hostname()))
}

// legacyResourceMetadata stands in for the protected resource metadata of
// a 2025-03-26 server, which publishes none: its authorization server is
// the origin of its MCP endpoint. The SDK takes the origin of the
// resource; the two must agree, so that the endpoints checked here are
// the ones it uses.
func legacyResourceMetadata(srv *Server) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(srv.URL)
	if err != nil {
		return nil, refused(srv.ID, "the server's URL cannot be parsed", err)
	}
	origin := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	r, err := url.Parse(srv.Resource)
	if err != nil || !strings.EqualFold((&url.URL{Scheme: r.Scheme, Host: r.Host}).String(), origin) {
		return nil, refused(srv.ID, "no protected resource metadata (RFC 9728) names the resource "+srv.Resource+
			", and the 2025-03-26 fallback (the server's origin as its authorization server) needs the resource on the server's origin, "+origin, nil)
	}
	return &oauthex.ProtectedResourceMetadata{Resource: srv.Resource, AuthorizationServers: []string{origin}}, nil
}

// fetchResourceMetadata fetches and strictly decodes RFC 9728 metadata.
func fetchResourceMetadata(ctx context.Context, hc *http.Client, metadataURL string) (*oauthex.ProtectedResourceMetadata, error) {
	var prm oauthex.ProtectedResourceMetadata
	if err := fetchMetadata(ctx, hc, metadataURL, &prm, http.StatusNotFound); err != nil {
		return nil, err
	}
	return &prm, nil
}

// fetchAuthServerMetadata fetches and strictly decodes the metadata of the
// authorization server issuer from the URLs the SDK tries (RFC 8414, then
// OpenID Connect discovery), checking its issuer as the SDK does but not
// requiring PKCE. It returns nil when every URL answers 4xx.
func fetchAuthServerMetadata(ctx context.Context, issuer string, hc *http.Client) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the issuer %q is not a URL", issuer)
	}
	if !protected(u) {
		// Its metadata names the token endpoint the client's secret or
		// assertion goes to: read over plain http, anyone on the way
		// could name their own.
		return nil, fmt.Errorf("the issuer %q does not use https (plain http only to a loopback address)", issuer)
	}
	path := strings.Trim(u.Path, "/")
	suffixes := []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}
	var urls []string
	for _, s := range suffixes {
		urls = append(urls, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(s+"/"+path, "/")}).String())
	}
	if path != "" {
		urls = append(urls, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/" + path + suffixes[1]}).String())
	}
	for _, mu := range urls {
		var asm oauthex.AuthServerMeta
		err := fetchMetadata(ctx, hc, mu, &asm, 0)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, fmt.Errorf("metadata issuer %q does not match issuer URL %q", printable(asm.Issuer, 200), issuer)
		}
		return &asm, nil
	}
	return nil, nil
}

// fetchMetadata fetches the JSON document at metadataURL and strictly
// decodes it into v. It returns errNotFound for the status notFound, or
// for any 4xx when notFound is 0.
func fetchMetadata(ctx context.Context, hc *http.Client, metadataURL string, v any, notFound int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metadataURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == notFound || (notFound == 0 && resp.StatusCode/100 == 4):
		return errNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s answered %s", metadataURL, resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fmt.Errorf("%s is not JSON", metadataURL)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxMetadataBytes {
		return fmt.Errorf("%s is larger than %d bytes", metadataURL, maxMetadataBytes)
	}
	// Duplicate or case-variant members could let two readers see two
	// documents; refuse them before decoding.
	if err := schema.Check(body, &schema.DecodeOptions{MaxDepth: 8, CaseFold: true}); err != nil {
		return fmt.Errorf("%s: %w", metadataURL, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", metadataURL, err)
	}
	return nil
}

// pinned serves each GET from the first answer it got for that URL, so that
// the metadata checked before a login is exactly what the SDK's login flow
// reads afterwards. Other methods pass through. It remembers the first GET
// that stalled or was too large, for errors the SDK reports only as text.
type pinned struct {
	base http.RoundTripper

	mu     sync.Mutex
	docs   map[string]*pinnedDoc
	failed *fetchError
}

type pinnedDoc struct {
	status      int
	contentType string
	body        []byte
}

func newPinned(base http.RoundTripper) *pinned {
	return &pinned{base: base, docs: map[string]*pinnedDoc{}}
}

// client returns an HTTP client over p that follows no redirects.
func (p *pinned) client() *http.Client {
	return &http.Client{Transport: p, CheckRedirect: egress.RefuseRedirect}
}

// failure returns the first GET that stalled or was too large, or nil.
func (p *pinned) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		return nil
	}
	return p.failed
}

func (p *pinned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return p.base.RoundTrip(req)
	}
	key := req.URL.String()
	p.mu.Lock()
	doc := p.docs[key]
	p.mu.Unlock()
	if doc == nil {
		resp, err := p.base.RoundTrip(req)
		var fe *fetchError
		if errors.As(err, &fe) {
			p.mu.Lock()
			if p.failed == nil {
				p.failed = fe
			}
			p.mu.Unlock()
		}
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		doc = &pinnedDoc{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}
		p.mu.Lock()
		if prev := p.docs[key]; prev != nil {
			doc = prev
		} else {
			p.docs[key] = doc
		}
		p.mu.Unlock()
	}
	h := http.Header{}
	if doc.contentType != "" {
		h.Set("Content-Type", doc.contentType)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", doc.status, http.StatusText(doc.status)),
		StatusCode:    doc.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(doc.body)),
		ContentLength: int64(len(doc.body)),
		Request:       req,
	}, nil
}

// checkAuthURL accepts the authorization URL the SDK built only if it
// leads to the discovered authorization endpoint over https (or plain http
// to loopback).
func checkAuthURL(raw, endpoint string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("the authorization URL cannot be parsed")
	}
	if err := CheckBrowserURL(raw); err != nil {
		return nil, err
	}
	e, err := url.Parse(endpoint)
	if err != nil || !strings.EqualFold(e.Scheme, u.Scheme) || !strings.EqualFold(e.Host, u.Host) || e.Path != u.Path {
		return nil, errors.New("the authorization URL does not lead to the authorization endpoint")
	}
	return u, nil
}

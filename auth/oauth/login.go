package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/secrets"
)

// Login runs an interactive login for who at srv and stores the tokens in
// the partition of (tenant, user, server, resource, issuer). It discovers
// and checks the server's and the authorization server's metadata, listens
// on the redirect URI, passes the authorization URL to [Options.Open] and
// waits, at most [Options.LoginTimeout], for the person to finish. Logins
// for the same tenant, user and server run one at a time. With the client
// credentials grant nobody is asked: Login obtains a token at once (as the
// first call would).
func (c *Client) Login(ctx context.Context, srv *Server, who Owner) (*Status, error) {
	if err := srv.validate(); err != nil {
		return nil, err
	}
	unlock, err := c.lockLogin(ctx, bindingKey(who, srv))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if srv.clientCredentials() {
		// Nobody logs in: a login issues a token at once, which shows
		// that the credentials work.
		return c.issueLocked(ctx, srv, who, nil, "")
	}
	return c.loginLocked(ctx, srv, who, nil, "")
}

// loginLocked runs the login; the caller holds the login lock. extra are
// scopes to add to the configured ones and to those already granted
// (step-up); challengeURL is a resource_metadata URL from a challenge.
func (c *Client) loginLocked(ctx context.Context, srv *Server, who Owner, extra []string, challengeURL string) (*Status, error) {
	if c.opts.Open == nil {
		return nil, loginFailed(srv.ID, "there is no way to show the authorization URL to a person", nil)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.LoginTimeout)
	defer cancel()
	expires := time.Now().Add(c.opts.LoginTimeout)

	// Listen first: if another login holds the port, fail before anyone
	// is sent to a browser.
	addr, _ := redirectAddr(srv.RedirectURI)
	redirect, _ := url.Parse(srv.RedirectURI)
	ln, err := net.Listen("tcp", addr.String())
	if err != nil {
		return nil, loginFailed(srv.ID, "cannot listen on the redirect URI "+srv.RedirectURI+" (is another login running?)", err)
	}
	path := redirect.Path
	if path == "" {
		path = "/"
	}
	cb := &callback{server: srv.ID, path: path}
	hs := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()

	base, err := c.fetcher(srv)
	if err != nil {
		return nil, err
	}
	pin := newPinned(base)
	hc := pin.client()
	var ch challenged
	if challengeURL == "" {
		ch = challenge(ctx, hc, srv)
		challengeURL = ch.metadata
	}
	d, err := c.discover(ctx, pin, c.guard(srv), srv, challengeURL)
	if err != nil {
		return nil, err
	}
	p := Partition{Tenant: who.Tenant, User: who.User, Server: srv.ID, Resource: srv.Resource, Issuer: d.asm.Issuer}

	// The SDK requests exactly these scopes, and adds offline_access
	// where the authorization server lists it, so that a refresh token
	// comes.
	scopes := c.requestScopes(ctx, srv, p, ch.scopes, d, extra)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         srv.RedirectURI,
		RequestRefreshToken: true,
		Client:              hc,
		ScopeFilter:         func([]string) []string { return slices.Clone(scopes) },
	}
	if srv.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: srv.ClientMetadataURL}
	}
	registered, err := c.loadRegistration(ctx, p)
	if err != nil {
		return nil, err
	}
	switch {
	case srv.ClientID != "":
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: srv.ClientID, Issuer: p.Issuer}
		if srv.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: srv.ClientSecret}
		}
	case registered != nil:
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: registered.ClientID, Issuer: p.Issuer}
		if registered.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: registered.ClientSecret}
		}
	case srv.DynamicRegistration:
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{srv.RedirectURI},
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              "Airlock",
		}}
	}

	cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := checkAuthURL(args.URL, d.asm.AuthorizationEndpoint)
		if err != nil {
			return nil, refused(srv.ID, err.Error(), nil)
		}
		state := u.Query().Get("state")
		if state == "" || u.Query().Get("code_challenge_method") != "S256" || u.Query().Get("resource") == "" {
			return nil, refused(srv.ID, "the authorization URL lacks state, PKCE S256 or the resource", nil)
		}
		tx := cb.begin(state, expires)
		if err := c.opts.Open(ctx, args.URL); err != nil {
			return nil, loginFailed(srv.ID, "cannot show the authorization URL", err)
		}
		res, err := tx.wait(ctx, srv.ID)
		if err != nil {
			return nil, err
		}
		return &auth.AuthorizationResult{Code: res.code, State: res.state, Iss: res.iss}, nil
	}

	var got *record
	cfg.NewTokenSource = func(_ context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
		if oc.Endpoint.TokenURL != d.asm.TokenEndpoint {
			return nil, refused(srv.ID, "the token came from an endpoint other than the one checked", nil)
		}
		if err := checkTokenResponse(srv.ID, tok); err != nil {
			return nil, err
		}
		got = &record{
			Issuer:       p.Issuer,
			Resource:     d.prm.Resource,
			TokenURL:     oc.Endpoint.TokenURL,
			AuthStyle:    int(tokenAuthStyle(oc.Endpoint.AuthStyle, oc.ClientSecret)),
			ClientID:     oc.ClientID,
			ClientSecret: oc.ClientSecret,
			AccessToken:  tok.AccessToken,
			RefreshToken: tok.RefreshToken,
			Expiry:       tok.Expiry,
			Scopes:       grantedScopes(tok, oc.Scopes),
			ObtainedAt:   c.opts.Now(),
		}
		switch {
		case srv.ClientMetadataURL != "" && oc.ClientID == srv.ClientMetadataURL:
			got.Registration = "metadata_document"
		case srv.ClientID != "" && oc.ClientID == srv.ClientID:
			got.Registration = "preregistered"
		default:
			got.Registration = "dynamic"
		}
		return oauth2.StaticTokenSource(tok), nil
	}

	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, refused(srv.ID, "the OAuth client configuration is not usable", err)
	}
	// The SDK's flow starts from a 401 challenge. This one names the
	// metadata already checked and the scopes wanted; the request is never
	// sent.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.prm.Resource, nil)
	if err != nil {
		return nil, refused(srv.ID, "the resource is not a URL", err)
	}
	challenge := bearer.Challenge{ResourceMetadata: d.prmURL, Scopes: scopes}.Header("", "", nil)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {challenge}}, Body: http.NoBody, Request: req}
	if err := h.Authorize(ctx, req, resp); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		if ctx.Err() != nil {
			return nil, loginFailed(srv.ID, "the login did not finish", ctx.Err())
		}
		if e := fetchFailed(srv.ID, "an answer of the authorization server", err); e != nil {
			return nil, e
		}
		if badTokenJSON(err) {
			return nil, refused(srv.ID, "the authorization server sent "+tokenJSONProblem+"; nothing was stored; report this to the authorization server's operator", nil)
		}
		return nil, loginFailed(srv.ID, "the login failed", clean(err))
	}
	if got == nil {
		return nil, loginFailed(srv.ID, "the login produced no token", nil)
	}

	if got.Registration == "dynamic" && registered == nil {
		reg := &registration{ClientID: got.ClientID, ClientSecret: got.ClientSecret, Issuer: p.Issuer}
		if err := c.putJSON(ctx, clientKey(p), reg); err != nil {
			return nil, unavailable(srv.ID, "cannot save the client registration", err)
		}
	}
	if err := c.saveLogin(ctx, srv, who, p, got); err != nil {
		return nil, err
	}
	return c.status(srv, p, got), nil
}

// saveLogin stores the tokens a login or an issue obtained in partition p
// and binds who's logins to srv to p's issuer. The caller holds the login
// lock.
func (c *Client) saveLogin(ctx context.Context, srv *Server, who Owner, p Partition, rec *record) error {
	ps := c.partition(p)
	if err := ps.acquire(ctx); err != nil {
		return err
	}
	err := c.putJSON(ctx, tokenKey(p), rec)
	if err == nil {
		ps.rec, ps.dirty = rec, false
		err = c.putJSON(ctx, bindingKey(who, srv), &binding{Issuer: p.Issuer})
	}
	ps.release()
	if err != nil {
		return unavailable(srv.ID, "cannot save the login", err)
	}
	c.mu.Lock()
	c.bindings[bindingKey(who, srv)] = p.Issuer
	c.mu.Unlock()
	return nil
}

// requestScopes returns the scopes a login or an issue for partition p
// asks for. A step-up (extra not nil) asks for the configured scopes, those
// already granted and those the server wants on top (the union: a step-up
// never loses what was granted); a first login for those selectScopes
// returns.
func (c *Client) requestScopes(ctx context.Context, srv *Server, p Partition, challenged []string, d *discovery, extra []string) []string {
	if extra == nil {
		return selectScopes(srv, challenged, d)
	}
	scopes := srv.Scopes
	if prev, err := c.loadRecord(ctx, p); err == nil {
		scopes = union(union(scopes, prev.Requested), prev.Scopes)
	}
	return union(scopes, extra)
}

// grantedScopes returns the scopes of a token response, or what was
// requested when the response names none (RFC 6749 §5.1), sorted: scopes
// are a set, and servers list them in any order.
func grantedScopes(tok *oauth2.Token, requested []string) []string {
	// What is not a scope token (RFC 6749 §3.3: visible ASCII but " and
	// \) grants nothing, and is not kept to be shown.
	granted := slices.DeleteFunc(scopesOf(tok, requested), func(s string) bool { return !bearer.IsScopeToken(s) })
	return slices.Compact(slices.Sorted(slices.Values(granted)))
}

func scopesOf(tok *oauth2.Token, requested []string) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	if list, ok := tok.Extra("scope").([]any); ok {
		var out []string
		for _, v := range list {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return append([]string(nil), requested...)
}

// badTokenJSON reports whether err is golang.org/x/oauth2 failing to
// decode a token response: a JSON member of the wrong type, such as an
// expires_in that is not a whole number (RFC 6749 §5.1), which it reads
// before checkTokenResponse can.
func badTokenJSON(err error) bool {
	return err != nil && strings.Contains(err.Error(), "oauth2: cannot parse json")
}

const tokenJSONProblem = "a token response that does not decode (a member of the wrong type, such as an expires_in that is not a whole number of seconds from 1 to 31536000)"

// clean rewrites errors that may quote an authorization server's response
// body into ones that name only its status and error code.
func clean(err error) error {
	if badTokenJSON(err) {
		return errors.New("the authorization server sent " + tokenJSONProblem)
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		if registeredErrors[re.ErrorCode] {
			return fmt.Errorf("the token endpoint answered %d with error %s", status, re.ErrorCode)
		}
		if re.ErrorCode != "" {
			// An error code is the authorization server's text: one that
			// echoes what it was sent (a refresh token, a code) must not
			// carry it into messages, logs and results.
			return fmt.Errorf("the token endpoint answered %d with an error code that is not a registered OAuth error", status)
		}
		return fmt.Errorf("the token endpoint answered %d", status)
	}
	return err
}

// registeredErrors are the error codes of the token and registration
// endpoints in RFC 6749, RFC 7591, RFC 8628, RFC 8707, RFC 9449 and
// OpenID Connect: the ones a message may name.
var registeredErrors = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unauthorized_client": true,
	"unsupported_grant_type": true, "invalid_scope": true, "access_denied": true, "server_error": true,
	"temporarily_unavailable": true, "invalid_target": true, "invalid_dpop_proof": true, "use_dpop_nonce": true,
	"authorization_pending": true, "slow_down": true, "expired_token": true, "invalid_token": true,
	"insufficient_scope": true, "invalid_redirect_uri": true, "invalid_client_metadata": true,
	"invalid_software_statement": true, "unapproved_software_statement": true, "interaction_required": true,
	"login_required": true, "consent_required": true,
}

// registration is a dynamically registered client, kept per partition.
type registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	Issuer       string `json:"issuer"`
}

// binding records which issuer a (tenant, user, server, resource) logged in
// with.
type binding struct {
	Issuer string `json:"issuer"`
}

func (c *Client) loadRegistration(ctx context.Context, p Partition) (*registration, error) {
	var reg registration
	err := c.getJSON(ctx, clientKey(p), &reg)
	if errors.Is(err, secrets.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(p.Server, "cannot read the client registration", err)
	}
	return &reg, nil
}

func (c *Client) putJSON(ctx context.Context, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.opts.Store.Put(ctx, key, data)
}

func (c *Client) getJSON(ctx context.Context, key string, v any) error {
	data, err := c.opts.Store.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errors.New("a stored credential is malformed")
	}
	return nil
}

// challenged is what a server's 401 said about itself: where its
// protected resource metadata is, and which scopes a token needs.
type challenged struct {
	metadata string
	scopes   []string
}

// challenge asks the server, without a token, what its Bearer challenge
// says (RFC 9728 §5.1, RFC 6750 §3): the resource_metadata, which may name
// a URL no well-known rule finds, and the scope a token needs. Either is
// empty when the server gives none; discovery then tries the well-known
// URLs, and scope selection the resource metadata.
func challenge(ctx context.Context, hc *http.Client, srv *Server) challenged {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body := strings.NewReader(`{"jsonrpc":"2.0","id":"airlock-login","method":"ping"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, body)
	if err != nil {
		return challenged{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return challenged{}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return challenged{}
	}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return challenged{}
	}
	var out challenged
	for _, ch := range cs {
		if !strings.EqualFold(ch.Scheme, "bearer") {
			continue
		}
		if out.metadata == "" {
			out.metadata = ch.Params["resource_metadata"]
		}
		if out.scopes == nil {
			out.scopes = scopeTokens(ch.Params["scope"])
		}
	}
	return out
}

// scopeTokens returns the valid scope tokens of a space-separated scope
// parameter, each once, or nil.
func scopeTokens(param string) []string {
	var out []string
	for _, s := range strings.Fields(param) {
		if bearer.IsScopeToken(s) && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// selectScopes returns the scopes to request for srv (the MCP
// specification's scope selection strategy): the configured ones; else
// those of the server's 401 challenge; else its resource metadata's
// scopes_supported; else none, and the request names no scope.
func selectScopes(srv *Server, challenged []string, d *discovery) []string {
	switch {
	case len(srv.Scopes) > 0:
		return srv.Scopes
	case len(challenged) > 0:
		return challenged
	}
	return scopeTokens(strings.Join(d.prm.ScopesSupported, " "))
}

package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/airlockhq/airlock/auth/egress"
)

// The client credentials grant (RFC 6749 §4.4) is for servers used by
// nobody in particular: CI jobs and daemons. The client proves who it is to
// the token endpoint with a secret (client_secret_basic, or
// client_secret_post where that is all the server takes) or with an
// assertion signed by its private key (private_key_jwt, RFC 7523); the
// secret and the key are sent nowhere else, and neither is stored: a token
// that expires is issued again, with the credentials the configuration
// holds then. There is no refresh token and no person to ask.

// firstToken issues the first token of who's partition for srv when there
// is none yet (or the one there is was logged out). Calls that find no token
// at once share one issue.
func (c *Client) firstToken(ctx context.Context, srv *Server, who Owner) (string, error) {
	unlock, err := c.lockLogin(ctx, bindingKey(who, srv))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another call may have issued one while this one waited.
	if tok, err := c.refreshAfter(ctx, srv, who, ""); !needsLogin(err) {
		return tok, err
	}
	if _, err := c.issueLocked(ctx, srv, who, nil, ""); err != nil {
		return "", err
	}
	return c.refreshAfter(ctx, srv, who, "")
}

// needsLogin reports whether err says the partition has no usable token.
func needsLogin(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindAuthRequired
}

// issueLocked obtains a token for who at srv with the client credentials
// grant and stores it in the partition: discovery and scope selection as
// for a login, then one token request. extra and challengeURL are as for
// loginLocked. The caller holds the login lock.
func (c *Client) issueLocked(ctx context.Context, srv *Server, who Owner, extra []string, challengeURL string) (*Status, error) {
	base, err := c.fetcher(srv)
	if err != nil {
		return nil, err
	}
	pin := newPinned(base)
	var ch challenged
	if challengeURL == "" {
		ch = challenge(ctx, pin.client(), srv)
		challengeURL = ch.metadata
	}
	d, err := c.discover(ctx, pin, c.guard(srv), srv, challengeURL)
	if err != nil {
		return nil, err
	}
	p := Partition{Tenant: who.Tenant, User: who.User, Server: srv.ID, Resource: srv.Resource, Issuer: d.asm.Issuer}
	rec := &record{
		Issuer:       p.Issuer,
		Resource:     d.prm.Resource,
		TokenURL:     d.asm.TokenEndpoint,
		AuthStyle:    int(secretAuthStyle(d.asm)),
		ClientID:     srv.ClientID,
		Registration: "preregistered",
		Grant:        string(GrantClientCredentials),
		Requested:    c.requestScopes(ctx, srv, p, ch.scopes, d, extra),
	}
	if err := c.issueToken(ctx, srv, rec); err != nil {
		return nil, err
	}
	if err := c.saveLogin(ctx, srv, who, p, rec); err != nil {
		return nil, err
	}
	return c.status(srv, p, rec), nil
}

// reissueLocked replaces the partition's expired or refused token with a
// new one from the same token endpoint, for the same scopes. The caller
// holds ps's lock.
func (c *Client) reissueLocked(ctx context.Context, srv *Server, ps *partState) (string, error) {
	next := *ps.rec
	if err := c.issueToken(ctx, srv, &next); err != nil {
		return "", err
	}
	ps.rec, ps.dirty = &next, true
	if err := c.putJSON(ctx, tokenKey(ps.p), &next); err != nil {
		return "", unavailable(srv.ID, "cannot save the issued token", err)
	}
	ps.dirty = false
	return next.AccessToken, nil
}

// issueToken sends one client credentials token request to rec's token
// endpoint, for rec's resource and requested scopes, and puts the token
// into rec. The secret goes in the Authorization header (or the form, as
// rec says); with a private key, a fresh assertion goes in the form.
func (c *Client) issueToken(ctx context.Context, srv *Server, rec *record) error {
	base, err := c.fetcher(srv)
	if err != nil {
		return err
	}
	cfg := &clientcredentials.Config{
		ClientID:       srv.ClientID,
		TokenURL:       rec.TokenURL,
		Scopes:         rec.Requested,
		AuthStyle:      oauth2.AuthStyle(rec.AuthStyle),
		EndpointParams: url.Values{"resource": {rec.Resource}},
	}
	if srv.PrivateKey != nil {
		// The authorization server checks the assertion's times against
		// its own clock, which is the real one.
		a, err := clientAssertion(srv.PrivateKey, srv.ClientID, rec.Issuer, time.Now())
		if err != nil {
			return refused(srv.ID, "oauth.private_key_file: "+err.Error(), nil)
		}
		cfg.AuthStyle = oauth2.AuthStyleInParams
		cfg.EndpointParams.Set("client_assertion_type", jwtBearerAssertion)
		cfg.EndpointParams.Set("client_assertion", a)
	} else {
		cfg.ClientSecret = srv.ClientSecret
	}
	hc := &http.Client{Transport: base, CheckRedirect: egress.RefuseRedirect}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			return refused(srv.ID, "the authorization server refused the client credentials; check oauth.client_id and the client's secret or private key, and that the authorization server allows this client the client_credentials grant", clean(err))
		}
		if errors.As(err, &re) && re.ErrorCode == "invalid_scope" {
			return refused(srv.ID, "the authorization server refused the scopes "+strings.Join(rec.Requested, " ")+" for this client", clean(err))
		}
		if e := fetchFailed(srv.ID, "an access token", err); e != nil {
			return e
		}
		return unavailable(srv.ID, "cannot obtain an access token with the client credentials", clean(err))
	}
	if err := checkTokenResponse(srv.ID, tok); err != nil {
		return err
	}
	rec.ClientID = srv.ClientID
	rec.AccessToken = tok.AccessToken
	rec.RefreshToken = "" // the grant has none (RFC 6749 §4.4.3)
	rec.Expiry = tok.Expiry
	rec.Scopes = grantedScopes(tok, rec.Requested)
	rec.ObtainedAt = c.opts.Now()
	return nil
}

// secretAuthStyle returns how a client secret goes to the token endpoint:
// HTTP Basic (client_secret_basic, the default of RFC 8414), unless the
// authorization server lists only client_secret_post.
func secretAuthStyle(asm *oauthex.AuthServerMeta) oauth2.AuthStyle {
	m := asm.TokenEndpointAuthMethodsSupported
	if !slices.Contains(m, "client_secret_basic") && slices.Contains(m, "client_secret_post") {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// checkClientCredentialsSupport refuses an authorization server whose
// metadata says it would refuse the grant or the client's way of proving
// who it is, before anything secret is sent to it.
func checkClientCredentialsSupport(srv *Server, asm *oauthex.AuthServerMeta) *Error {
	if g := asm.GrantTypesSupported; len(g) > 0 && !slices.Contains(g, string(GrantClientCredentials)) {
		return refused(srv.ID, "the authorization server "+asm.Issuer+" does not offer the client_credentials grant (grant_types_supported)", nil)
	}
	methods := asm.TokenEndpointAuthMethodsSupported
	if srv.PrivateKey == nil {
		if len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && !slices.Contains(methods, "client_secret_post") {
			return refused(srv.ID, "the authorization server "+asm.Issuer+" takes no client secret (token_endpoint_auth_methods_supported: "+
				strings.Join(methods, " ")+"); give oauth.private_key_file instead if it lists private_key_jwt", nil)
		}
		return nil
	}
	if len(methods) > 0 && !slices.Contains(methods, "private_key_jwt") {
		return refused(srv.ID, "the authorization server "+asm.Issuer+" does not take private_key_jwt (token_endpoint_auth_methods_supported: "+
			strings.Join(methods, " ")+")", nil)
	}
	alg, _ := signingAlg(srv.PrivateKey)
	if algs := asm.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !slices.Contains(algs, string(alg)) {
		return refused(srv.ID, "the authorization server "+asm.Issuer+" does not take assertions signed with "+string(alg)+
			", the algorithm of the key in oauth.private_key_file (it lists "+strings.Join(algs, " ")+"); give a key it takes", nil)
	}
	return nil
}

package oauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/airlockhq/airlock/auth/egress"
	"github.com/airlockhq/airlock/auth/secrets"
)

// expiryMargin is how long before its expiry a token is refreshed, so that
// it does not expire on the way to the server.
const expiryMargin = 30 * time.Second

// record is what is stored for a partition: the tokens and what is needed
// to refresh them.
type record struct {
	Issuer       string `json:"issuer"`
	Resource     string `json:"resource"`
	TokenURL     string `json:"token_url"`
	AuthStyle    int    `json:"auth_style"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	Registration string `json:"registration"`
	// Grant is "client_credentials" for tokens the client obtains with
	// its own credentials, "" for a person's login.
	Grant string `json:"grant,omitempty"`
	// Requested are the scopes a client credentials token is issued
	// for, again at each issue.
	Requested    []string  `json:"requested,omitempty"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes"`
	ObtainedAt   time.Time `json:"obtained_at"`
	// RefreshRefused is set when the authorization server refused the
	// refresh token (invalid_grant); both tokens are then dropped.
	RefreshRefused bool `json:"refresh_refused,omitempty"`
}

func (r *record) valid(now time.Time) bool {
	return r.AccessToken != "" && (r.Expiry.IsZero() || now.Add(expiryMargin).Before(r.Expiry))
}

func (c *Client) loadRecord(ctx context.Context, p Partition) (*record, error) {
	var r record
	if err := c.getJSON(ctx, tokenKey(p), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// partitionFor returns the partition who logged in to srv with, or an
// auth_required error when there is none.
func (c *Client) partitionFor(ctx context.Context, srv *Server, who Owner) (Partition, error) {
	bk := bindingKey(who, srv)
	c.mu.Lock()
	issuer, ok := c.bindings[bk]
	c.mu.Unlock()
	if !ok {
		var b binding
		err := c.getJSON(ctx, bk, &b)
		if errors.Is(err, secrets.ErrNotFound) {
			return Partition{}, authRequired(srv.ID, "not logged in")
		}
		if err != nil {
			return Partition{}, unavailable(srv.ID, "cannot read the stored login", err)
		}
		issuer = b.Issuer
		c.mu.Lock()
		c.bindings[bk] = issuer
		c.mu.Unlock()
	}
	return Partition{Tenant: who.Tenant, User: who.User, Server: srv.ID, Resource: srv.Resource, Issuer: issuer}, nil
}

// token returns a valid access token for who at srv, refreshing it if it
// has expired. Concurrent callers for one partition share one refresh.
func (c *Client) token(ctx context.Context, srv *Server, who Owner) (string, error) {
	// A valid token is never empty, so none is ruled out.
	tok, err := c.refreshAfter(ctx, srv, who, "")
	if srv.clientCredentials() && needsLogin(err) {
		// Nobody logs in: the client's own credentials get the first
		// token.
		return c.firstToken(ctx, srv, who)
	}
	return tok, err
}

// renewLocked gets a token other than used for ps: one another process
// stored meanwhile, else a refreshed one. Where the store can lock across
// processes, it holds the partition's lock throughout, so that two
// processes never spend one rotating refresh token (an authorization
// server that detects reuse revokes the whole grant). The caller holds
// ps's lock.
func (c *Client) renewLocked(ctx context.Context, srv *Server, ps *partState, used string) (string, error) {
	if l, ok := c.opts.Store.(secrets.Locker); ok {
		unlock, err := l.Lock(ctx, tokenKey(ps.p))
		if err != nil {
			return "", unavailable(srv.ID, "cannot lock the stored token for a refresh", err)
		}
		defer unlock()
	}
	if tok, ok, err := c.reloadLocked(ctx, srv, ps, used); ok || err != nil {
		return tok, err
	}
	tok, err := c.refreshLocked(ctx, srv, ps)
	if c.opts.Refreshed != nil {
		c.opts.Refreshed(srv.ID, err)
	}
	return tok, err
}

// refreshAfter returns a token other than used, which the server refused:
// one that another caller obtained meanwhile, or a refreshed one.
func (c *Client) refreshAfter(ctx context.Context, srv *Server, who Owner, used string) (string, error) {
	p, err := c.partitionFor(ctx, srv, who)
	if err != nil {
		return "", err
	}
	ps := c.partition(p)
	if err := ps.acquire(ctx); err != nil {
		return "", err
	}
	defer ps.release()
	if err := c.loadLocked(ctx, srv, ps); err != nil {
		return "", err
	}
	if ps.rec.Grant != srv.recordGrant() {
		// The configuration changed grants: a person's token never
		// serves the client's own calls, nor the other way round.
		return "", authRequired(srv.ID, "the stored token was obtained with another grant")
	}
	if ps.rec.AccessToken != used && ps.rec.valid(c.opts.Now()) {
		return ps.rec.AccessToken, nil
	}
	return c.renewLocked(ctx, srv, ps, used)
}

// reloadLocked reads the partition's record again before a refresh:
// another process (a second host, airlock auth login or logout) may have
// refreshed the token, logged in again or logged out since it was loaded.
// It returns a usable token other than used when the store has one, an
// auth_required error when the record is gone, and otherwise leaves the
// stored record (whose refresh token is the newest) in ps for the refresh.
// A record whose refresh could not be saved (dirty) is newer than the
// store's and is kept. The caller holds ps's lock.
func (c *Client) reloadLocked(ctx context.Context, srv *Server, ps *partState, used string) (string, bool, error) {
	if ps.dirty {
		return "", false, nil
	}
	stored, err := c.loadRecord(ctx, ps.p)
	switch {
	case errors.Is(err, secrets.ErrNotFound):
		ps.rec = nil
		return "", false, authRequired(srv.ID, "logged out")
	case err != nil:
		return "", false, unavailable(srv.ID, "cannot read the stored token", err)
	}
	ps.rec = stored
	if stored.AccessToken != used && stored.valid(c.opts.Now()) {
		return stored.AccessToken, true, nil
	}
	return "", false, nil
}

// loadLocked makes sure ps.rec is loaded and the store holds it. The caller
// holds ps's lock.
func (c *Client) loadLocked(ctx context.Context, srv *Server, ps *partState) error {
	if ps.rec == nil {
		r, err := c.loadRecord(ctx, ps.p)
		if errors.Is(err, secrets.ErrNotFound) {
			return authRequired(srv.ID, "not logged in")
		}
		if err != nil {
			return unavailable(srv.ID, "cannot read the stored token", err)
		}
		ps.rec = r
	}
	if ps.dirty {
		// An earlier refresh could not be saved; its rotated refresh
		// token exists only here until it is.
		if err := c.putJSON(ctx, tokenKey(ps.p), ps.rec); err != nil {
			return unavailable(srv.ID, "cannot save the refreshed token", err)
		}
		ps.dirty = false
	}
	return nil
}

// refreshLocked uses the refresh token, or issues a new token with the
// client credentials grant. The caller holds ps's lock, so at
// most one refresh per partition is in flight in this process; the result
// is saved before anyone uses it, so a rotated refresh token is not lost.
func (c *Client) refreshLocked(ctx context.Context, srv *Server, ps *partState) (string, error) {
	if srv.clientCredentials() {
		return c.reissueLocked(ctx, srv, ps)
	}
	rec := ps.rec
	if rec.RefreshRefused {
		return "", authRequired(srv.ID, refreshRefused)
	}
	if rec.RefreshToken == "" {
		return "", authRequired(srv.ID, "the access token expired and there is no refresh token")
	}
	base, err := c.fetcher(srv)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Transport: resourceParam{base: base, resource: rec.Resource, tokenURL: rec.TokenURL}, CheckRedirect: egress.RefuseRedirect}
	cfg := &oauth2.Config{
		ClientID:     rec.ClientID,
		ClientSecret: rec.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: rec.TokenURL, AuthStyle: tokenAuthStyle(oauth2.AuthStyle(rec.AuthStyle), rec.ClientSecret)},
	}
	expired := &oauth2.Token{RefreshToken: rec.RefreshToken, Expiry: time.Unix(1, 0)}
	tok, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), expired).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			// Another process may have used (and rotated) the refresh
			// token first; its result is in the store.
			if stored, lerr := c.loadRecord(ctx, ps.p); lerr == nil && stored.RefreshToken != rec.RefreshToken {
				ps.rec = stored
				if stored.valid(c.opts.Now()) {
					return stored.AccessToken, nil
				}
				if stored.RefreshRefused {
					return "", authRequired(srv.ID, refreshRefused)
				}
			}
			return "", c.refreshRefusedLocked(ctx, srv, ps)
		}
		if e := fetchFailed(srv.ID, "a refreshed access token", err); e != nil {
			return "", e
		}
		if badTokenJSON(err) {
			return "", refused(srv.ID, "the authorization server sent "+tokenJSONProblem+"; nothing was stored; report this to the authorization server's operator", nil)
		}
		return "", unavailable(srv.ID, "cannot refresh the access token", clean(err))
	}
	if err := checkTokenResponse(srv.ID, tok); err != nil {
		return "", err
	}
	next := *rec
	next.AccessToken = tok.AccessToken
	next.RefreshToken = tok.RefreshToken // oauth2 keeps the old one if none came
	next.Expiry = tok.Expiry
	next.Scopes = grantedScopes(tok, rec.Scopes)
	next.ObtainedAt = c.opts.Now()
	ps.rec, ps.dirty = &next, true
	if err := c.putJSON(ctx, tokenKey(ps.p), &next); err != nil {
		return "", unavailable(srv.ID, "cannot save the refreshed token", err)
	}
	ps.dirty = false
	return next.AccessToken, nil
}

// refreshRefused is why a partition whose refresh token the authorization
// server refused needs a login.
const refreshRefused = "the authorization server refused the refresh token"

// refreshRefusedLocked records that the authorization server refused the
// partition's refresh token (invalid_grant: revoked, expired, or spent):
// the record keeps who logged in where, with which scopes, and drops both
// tokens, so that the dead refresh token is never sent again, by this
// process or another, and status can say why a login is needed. A record
// that cannot be saved stays marked in memory (dirty) and is saved at the
// next use. The caller holds ps's lock.
func (c *Client) refreshRefusedLocked(ctx context.Context, srv *Server, ps *partState) error {
	next := *ps.rec
	next.AccessToken, next.RefreshToken, next.Expiry = "", "", time.Time{}
	next.RefreshRefused = true
	ps.rec, ps.dirty = &next, true
	if err := c.putJSON(ctx, tokenKey(ps.p), &next); err == nil {
		ps.dirty = false
	}
	return authRequired(srv.ID, refreshRefused)
}

// resourceParam adds the RFC 8707 resource parameter to refresh requests:
// golang.org/x/oauth2 sends only grant_type and refresh_token, and the MCP
// authorization specification wants the resource in every token request.
type resourceParam struct {
	base     http.RoundTripper
	resource string
	tokenURL string
}

func (t resourceParam) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.URL.String() != t.tokenURL {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", t.resource)
		body = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}

// tokenAuthStyle settles how the client identifies itself at the token
// endpoint. golang.org/x/oauth2's auto-detection sends a request that
// fails once more in the other form, which for a refresh means the same
// refresh token twice: an authorization server that rotated it on the
// first request (whose answer was then lost) takes the second for a
// stolen token and revokes the grant. A public client names itself in the
// form (RFC 6749 §3.2.1); a confidential one uses HTTP Basic, the default
// of RFC 8414's token_endpoint_auth_methods_supported.
func tokenAuthStyle(style oauth2.AuthStyle, secret string) oauth2.AuthStyle {
	if style != oauth2.AuthStyleAutoDetect {
		return style
	}
	if secret == "" {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

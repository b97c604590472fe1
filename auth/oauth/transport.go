package oauth

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Transport returns a round tripper for requests to srv on behalf of who.
// Use it as the transport of the MCP client's HTTP client (with no SDK
// OAuthHandler). base carries the requests (nil means the client's egress
// transport for srv).
//
// Each request gets who's access token, refreshed first if it has expired.
// Requests for any origin other than srv.URL's are refused, so the token
// cannot be sent elsewhere. A 401 leads to one refresh and one resend, and
// a second 401 to an [Error] of KindAuthRequired. A 403 with
// error="insufficient_scope" leads, at most once per request and only if
// [Options.Consent] agrees, to a login for the union of the scopes and one
// resend; without consent it is an [Error] of KindInsufficientScope. With
// the client credentials grant there is nobody to ask: a token for the
// union is issued unless srv.Scopes are configured, which bound it. Such
// errors are returned before any response reaches the caller: the server
// refused the request without acting on it. A request whose body cannot be
// sent again is not resent.
func (c *Client) Transport(srv *Server, who Owner, base http.RoundTripper) (http.RoundTripper, error) {
	if err := srv.validate(); err != nil {
		return nil, err
	}
	endpoint, _ := url.Parse(srv.URL)
	if base == nil {
		var err error
		if base, err = c.transport(srv); err != nil {
			return nil, err
		}
	}
	s := *srv
	s.Scopes = append([]string(nil), srv.Scopes...)
	return &transport{c: c, srv: &s, who: who, endpoint: endpoint, base: base}, nil
}

type transport struct {
	c        *Client
	srv      *Server
	who      Owner
	endpoint *url.URL
	base     http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(t.endpoint, req.URL) {
		closeBody(req)
		return nil, refused(t.srv.ID, "refusing to send the server's token to another origin", nil)
	}
	ctx := req.Context()
	tok, err := t.c.token(ctx, t.srv, t.who)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	refreshed, steppedUp := false, false
	for attempt := 0; ; attempt++ {
		r := req.Clone(ctx)
		if attempt > 0 {
			if r.Body, err = replayBody(req); err != nil {
				return nil, err
			}
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusUnauthorized && !refreshed && canReplay(req):
			discard(resp)
			refreshed = true
			if tok, err = t.c.refreshAfter(ctx, t.srv, t.who, tok); err != nil {
				return nil, err
			}
			continue
		case resp.StatusCode == http.StatusUnauthorized:
			discard(resp)
			return nil, authRequired(t.srv.ID, "the server refused the access token")
		case resp.StatusCode == http.StatusForbidden && !steppedUp:
			need, metadata, ok := insufficientScope(resp.Header)
			if !ok {
				return resp, nil
			}
			discard(resp)
			if !canReplay(req) {
				return nil, &Error{Kind: KindInsufficientScope, Server: t.srv.ID, Scopes: need, msg: "the request cannot be sent again"}
			}
			steppedUp = true
			if tok, err = t.c.stepUp(ctx, t.srv, t.who, tok, need, metadata); err != nil {
				return nil, err
			}
			continue
		case resp.StatusCode == http.StatusForbidden:
			// The server still wants more after a step-up that got what
			// it asked for: asking the person again would go round in
			// circles. This process does not step up for these scopes
			// again.
			need, _, ok := insufficientScope(resp.Header)
			if !ok {
				return resp, nil
			}
			discard(resp)
			t.c.noteFutileStepUp(t.srv, t.who, need)
			return nil, &Error{Kind: KindInsufficientScope, Server: t.srv.ID, Scopes: need,
				msg: "the server still refused after a step-up that granted them; check the scopes the server and its authorization server expect"}
		}
		return resp, nil
	}
}

// insufficientScope reports whether a 403's challenges say
// error="insufficient_scope", with the scopes and resource metadata named.
func insufficientScope(h http.Header) (scopes []string, metadata string, ok bool) {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return nil, "", false
	}
	for _, ch := range cs {
		if ch.Scheme != "bearer" || ch.Params["error"] != "insufficient_scope" {
			continue
		}
		return scopeTokens(ch.Params["scope"]), ch.Params["resource_metadata"], true
	}
	return nil, "", false
}

// stepUp obtains a token with the scopes need added, with the person's
// consent; with the client credentials grant, by issuing one, unless the
// configuration lists the scopes. used is the token the server found
// lacking.
func (c *Client) stepUp(ctx context.Context, srv *Server, who Owner, used string, need []string, metadata string) (string, error) {
	unlock, err := c.lockLogin(ctx, bindingKey(who, srv))
	if err != nil {
		return "", err
	}
	defer unlock()
	p, err := c.partitionFor(ctx, srv, who)
	if err != nil {
		return "", err
	}
	granted := []string{}
	if rec, err := c.loadRecord(ctx, p); err == nil {
		granted = rec.Scopes
		// Another call may have stepped up while this one waited.
		if rec.AccessToken != used && subset(need, rec.Scopes) {
			c.forget(p)
			return c.token(ctx, srv, who)
		}
	}
	var added []string
	for _, s := range need {
		if !contains(granted, s) {
			added = append(added, s)
		}
	}
	if len(added) == 0 {
		added = need
	}
	if c.futileStepUp(srv, who, need) {
		return "", &Error{Kind: KindInsufficientScope, Server: srv.ID, Scopes: added,
			msg: "a step-up to these scopes did not satisfy the server before, and is not tried again until airlock restarts"}
	}
	if srv.clientCredentials() {
		// Nobody is there to ask. Configured scopes are what the operator
		// lets the client ask for; without them the server selects, and
		// its authorization server decides what this client may have.
		if len(srv.Scopes) > 0 {
			return "", &Error{Kind: KindInsufficientScope, Server: srv.ID, Scopes: added, msg: "the client credentials ask only for the configured scopes"}
		}
		if _, err := c.issueLocked(ctx, srv, who, need, metadata); err != nil {
			return "", err
		}
		return c.token(ctx, srv, who)
	}
	want := union(union(srv.Scopes, granted), need)
	if c.opts.Consent == nil {
		return "", &Error{Kind: KindInsufficientScope, Server: srv.ID, Scopes: added, msg: "more scopes need a person's consent"}
	}
	ok, err := c.opts.Consent(ctx, &StepUp{Server: srv.ID, Granted: granted, Added: added, Requested: want})
	if err != nil {
		return "", &Error{Kind: KindInsufficientScope, Server: srv.ID, Scopes: added, msg: "consent could not be asked", cause: err}
	}
	if !ok {
		return "", &Error{Kind: KindInsufficientScope, Server: srv.ID, Scopes: added, msg: "the step-up was declined"}
	}
	if _, err := c.loginLocked(ctx, srv, who, need, metadata); err != nil {
		return "", err
	}
	return c.token(ctx, srv, who)
}

// forget drops the in-memory copy of a partition's record, so that the
// next use reads the store.
func (c *Client) forget(p Partition) {
	ps := c.partition(p)
	if err := ps.acquire(context.Background()); err != nil {
		return
	}
	if !ps.dirty {
		ps.rec = nil
	}
	ps.release()
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !contains(b, s) {
			return false
		}
	}
	return true
}

func canReplay(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func replayBody(req *http.Request) (io.ReadCloser, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req.Body, nil
	}
	return req.GetBody()
}

func discard(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// futileKey names a step-up that did not help: who, the server, the scopes.
func futileKey(srv *Server, who Owner, need []string) string {
	s := slices.Clone(need)
	slices.Sort(s)
	return bindingKey(who, srv) + "\x00" + strings.Join(s, " ")
}

// noteFutileStepUp records that the server kept refusing after a step-up
// to need, so that calls do not send the person to log in over and over
// (MCP: clients should bound scope challenge retries).
func (c *Client) noteFutileStepUp(srv *Server, who Owner, need []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.futile[futileKey(srv, who, need)] = true
}

func (c *Client) futileStepUp(srv *Server, who Owner, need []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.futile[futileKey(srv, who, need)]
}

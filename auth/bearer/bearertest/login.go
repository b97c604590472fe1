package bearertest

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// logins is the state of the authorization code flow: the registered
// public clients, who logs in next, and the codes and refresh tokens
// handed out.
type logins struct {
	mu       sync.Mutex
	clients  map[string]string // client id → its one redirect URI
	tenant   string
	subject  string
	codes    map[string]*grant
	refresh  map[string]*grant
	granted  int // access tokens issued by the two grants
	reused   int // refresh tokens presented after they were rotated away
	spentRTs map[string]bool
	// services are the clients of the client credentials grant
	// (service.go), with the tokens they were issued and refused.
	services                      map[string]*service
	serviceIssued, serviceRefused int
}

// A grant is what a code or a refresh token stands for.
type grant struct {
	client, redirect, challenge, resource, tenant, subject string
	scopes                                                 []string
	expires                                                time.Time
}

// AllowClient registers a public client (token endpoint authentication
// "none") with its redirect URI, which requests must name exactly.
func (iss *Issuer) AllowClient(clientID, redirectURI string) {
	l := &iss.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients == nil {
		l.clients = map[string]string{}
	}
	l.clients[clientID] = redirectURI
}

// SetPerson says who logs in next: the authorization endpoint approves
// every valid request at once, for this tenant and subject (default
// "default" and "alice").
func (iss *Issuer) SetPerson(tenant, subject string) {
	l := &iss.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tenant, l.subject = tenant, subject
}

// Grants returns how many access tokens the authorization code and refresh
// token grants issued, and how many refresh tokens were presented again
// after they had been rotated away.
func (iss *Issuer) Grants() (issued, reusedRefresh int) {
	l := &iss.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.granted, l.reused
}

// serveAuthorize is the authorization endpoint. It checks the request as
// a careful server does (registered client and exact redirect URI, code
// response, PKCE S256, a resource) and redirects back with a code, the
// state and the issuer (RFC 9207); a bad request is answered here, never
// redirected to an unchecked URI.
func (iss *Issuer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l := &iss.logins
	l.mu.Lock()
	defer l.mu.Unlock()
	redirect, ok := l.clients[q.Get("client_id")]
	if !ok || q.Get("redirect_uri") != redirect {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	answer := back.Query()
	answer.Set("state", q.Get("state"))
	if !iss.opts.NoMetadata {
		answer.Set("iss", iss.URL)
	}
	switch {
	case q.Get("response_type") != "code":
		answer.Set("error", "unsupported_response_type")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		answer.Set("error", "invalid_request")
		answer.Set("error_description", "PKCE with S256 is required")
	case q.Get("resource") == "":
		answer.Set("error", "invalid_target")
	default:
		code := randomID()
		if l.codes == nil {
			l.codes = map[string]*grant{}
		}
		l.codes[code] = &grant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"),
			resource: q.Get("resource"), tenant: or(l.tenant, "default"), subject: or(l.subject, "alice"),
			scopes: strings.Fields(q.Get("scope")), expires: time.Now().Add(time.Minute)}
		answer.Set("code", code)
	}
	back.RawQuery = answer.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// serveToken is the token endpoint: the authorization_code grant (the
// code used once, the PKCE verifier, the same redirect URI and resource),
// the refresh_token grant, which rotates the refresh token, and the
// client_credentials grant of the services (service.go).
func (iss *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request")
		return
	}
	f := r.PostForm
	// A public client names itself in the form or, as golang.org/x/oauth2
	// tries first, as the HTTP Basic user with an empty password.
	client := f.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok && client == "" {
		client, _ = url.QueryUnescape(id)
	}
	l := &iss.logins
	l.mu.Lock()
	var g *grant
	switch f.Get("grant_type") {
	case "authorization_code":
		g = l.codes[f.Get("code")]
		delete(l.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if g == nil || time.Now().After(g.expires) || client != g.client || f.Get("redirect_uri") != g.redirect ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || f.Get("resource") != g.resource {
			g = nil
		}
	case "refresh_token":
		rt := f.Get("refresh_token")
		g = l.refresh[rt]
		delete(l.refresh, rt)
		if g == nil && l.spentRTs[rt] {
			l.reused++
		}
		if g != nil && (client != g.client || f.Get("resource") != g.resource) {
			g = nil
		}
		if l.spentRTs == nil {
			l.spentRTs = map[string]bool{}
		}
		l.spentRTs[rt] = true
	case "client_credentials":
		g = iss.serviceGrant(r)
		l.mu.Unlock()
		if g == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"error": "invalid_client"})
			return
		}
		iss.issue(w, g, "")
		return
	default:
		l.mu.Unlock()
		tokenError(w, "unsupported_grant_type")
		return
	}
	if g == nil {
		l.mu.Unlock()
		tokenError(w, "invalid_grant")
		return
	}
	rt := randomID()
	if l.refresh == nil {
		l.refresh = map[string]*grant{}
	}
	l.refresh[rt] = g
	l.granted++
	l.mu.Unlock()
	iss.issue(w, g, rt)
}

// issue answers a token request with an access token for g, and the
// refresh token rt unless it is empty.
func (iss *Issuer) issue(w http.ResponseWriter, g *grant, rt string) {
	claims := iss.Claims(g.resource, g.tenant, g.subject, g.scopes...)
	claims["client_id"] = g.client
	access, err := iss.mint(claims, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	answer := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 300,
		"scope": strings.Join(g.scopes, " ")}
	if rt != "" {
		answer["refresh_token"] = rt
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, answer)
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	writeJSON(w, map[string]any{"error": code})
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

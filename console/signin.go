package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// SignIn makes the console sign people in with OpenID Connect before it
// shows them anything: the console is a relying party of Issuer
// (authorization code with PKCE S256, a nonce, and state bound to the
// browser by a cookie). Whom a person acts for comes from the verified ID
// token, by the claims the gateway reads from access tokens (TenantClaim,
// UserClaim), or, for a claim the ID token lacks, from the userinfo
// endpoint; operators act for every tenant and user.
//
// A signed-in person has a session for SessionTTL, or until unused for
// SessionIdle: its cookie (HttpOnly, SameSite=Strict, Secure when the
// console is reached over https) names it and nothing else. With a store
// that keeps sessions for replicas (PostgreSQL), every replica of a
// gateway takes it and a sign-out ends it on all of them; Options.Key,
// the same on every replica, makes their CSRF tokens and sign-ins agree.
type SignIn struct {
	// Issuer is the OpenID provider (serve.auth.issuer).
	Issuer string
	// ClientID and ClientSecret are the console's client at the issuer;
	// no secret: a public client.
	ClientID, ClientSecret string
	// Scopes are asked for besides openid.
	Scopes []string
	// TenantClaim names the claim holding the tenant; empty: everyone is
	// of DefaultTenant.
	TenantClaim string
	// UserClaim names the claim holding the user name; empty: sub.
	UserClaim string
	// DefaultTenant is the tenant of people without TenantClaim, and of
	// operators named without a tenant.
	DefaultTenant string
	// Operators act for every tenant and user.
	Operators []airlock.Principal
	// Resource is the gateway's own URL (serve.auth.resource): the console
	// answers requests that name its host, and its redirect URI under that
	// host uses its scheme (a proxy in front terminates TLS).
	Resource string
	// HTTPClient reaches the issuer; nil: one with a 10 s timeout.
	HTTPClient *http.Client
	// SessionTTL is how long a sign-in lasts (default 8 h), and
	// SessionIdle how long it lasts unused (default 30 min).
	SessionTTL, SessionIdle time.Duration
}

// Paths of the sign-in, under Prefix.
const (
	loginPath    = Prefix + "login"
	callbackPath = Prefix + "callback"
	logoutPath   = Prefix + "logout"
)

const (
	loginCookie     = "airlock_console_login" // the state of a sign-in under way
	loginTTL        = 10 * time.Minute        // how long a sign-in may take at the provider
	defaultSessions = 8 * time.Hour
	defaultIdle     = 30 * time.Minute
)

// signins is the console's sign-in state: the provider, once found, and
// the sessions. A sign-in under way is kept by the browser alone, sealed
// in its login cookie (under a key the replicas of a gateway share), so
// that no number of sign-ins started and left keeps anyone else from
// signing in, and the provider may send the browser back to any replica.
type signins struct {
	cfg      SignIn
	host     string      // Resource's host
	https    bool        // Resource's scheme is https
	seal     cipher.AEAD // seals the login cookie
	sessions *consoleSessions

	mu    sync.Mutex
	party rp.RelyingParty
}

// A pendingLogin is a sign-in under way, as its login cookie holds it.
type pendingLogin struct {
	State    string    `json:"s"`
	Verifier string    `json:"v"`
	Nonce    string    `json:"n"`
	Next     string    `json:"x"`
	Redirect string    `json:"r"`
	Expires  time.Time `json:"e"`
}

// sealLogin is p as the login cookie's value.
func (s *signins) sealLogin(p pendingLogin) string {
	plain, _ := json.Marshal(p)
	nonce := make([]byte, s.seal.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.seal.Seal(nonce, nonce, plain, []byte(loginCookie)))
}

// openLogin is the sign-in a login cookie's value holds, if this console
// sealed it.
func (s *signins) openLogin(v string) (pendingLogin, bool) {
	var p pendingLogin
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) < s.seal.NonceSize() {
		return p, false
	}
	plain, err := s.seal.Open(nil, raw[:s.seal.NonceSize()], raw[s.seal.NonceSize():], []byte(loginCookie))
	if err != nil || json.Unmarshal(plain, &p) != nil {
		return p, false
	}
	return p, true
}

func newSignins(cfg SignIn, key []byte, st store.Store) (*signins, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("console: the sign-in needs an issuer and a client id")
	}
	u, err := url.Parse(cfg.Resource)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("console: the sign-in needs the gateway's URL (serve.auth.resource), not %q", cfg.Resource)
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = defaultSessions
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = defaultIdle
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	sealKey, err := hkdf.Key(sha256.New, key, nil, "airlock console login cookie", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return nil, err
	}
	seal, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &signins{cfg: cfg, host: u.Hostname(), https: u.Scheme == "https", seal: seal,
		sessions: newConsoleSessions(st, cfg.SessionIdle, cfg.SessionTTL)}, nil
}

// provider returns the relying party, discovering the issuer's endpoints
// the first time; a failed discovery is tried again at the next sign-in.
func (s *signins) provider(ctx context.Context) (rp.RelyingParty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.party != nil {
		return s.party, nil
	}
	scopes := append([]string{oidc.ScopeOpenID}, slices.DeleteFunc(slices.Clone(s.cfg.Scopes), func(sc string) bool { return sc == oidc.ScopeOpenID })...)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	party, err := rp.NewRelyingPartyOIDC(ctx, s.cfg.Issuer, s.cfg.ClientID, s.cfg.ClientSecret, "", scopes,
		rp.WithHTTPClient(s.cfg.HTTPClient),
		rp.WithVerifierOpts(rp.WithNonce(func(ctx context.Context) string {
			n, _ := ctx.Value(nonceKey{}).(string)
			return n
		})))
	if err != nil {
		return nil, err
	}
	s.party = party
	return party, nil
}

type nonceKey struct{}

// secure reports whether the browser reaches the console over https: TLS
// here, or the resource's host when the resource is https (TLS ends at a
// proxy in front).
func (s *signins) secure(r *http.Request) bool {
	return r.TLS != nil || s.https && strings.EqualFold(hostOnly(r.Host), s.host)
}

// redirectURI is where the provider sends the browser back: the host the
// browser named (checked already), on the console's callback.
func (s *signins) redirectURI(r *http.Request) string {
	scheme := "http"
	if s.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + callbackPath
}

// current returns the session the request's cookie names, and whom it
// acts for, if it is one of this console's and has not ended.
func (s *signins) current(r *http.Request) (string, airlock.Actor, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || !validSession(ck.Value) {
		return "", airlock.Actor{}, false
	}
	as, ok := s.sessions.use(r.Context(), ck.Value)
	return ck.Value, as, ok
}

func randomHex() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// gate lets a request through only with a session, and says whom it acts
// for; without one, a page is sent to sign in first (and comes back), an
// event stream or an action is refused.
func (c *Console) gate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	_, as, ok := c.signin.current(r)
	if ok {
		return r.WithContext(context.WithValue(r.Context(), actorKey{}, as)), true
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == Prefix+"events":
		http.Error(w, "sign in to the console first", http.StatusUnauthorized)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		http.Redirect(w, r, loginPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	default:
		c.gatePage(w, r, http.StatusForbidden, "Signed out", "Your sign-in has ended, so nothing was done: sign in again and repeat what you were doing.", "", loginPath)
	}
	return r, false
}

type actorKey struct{}

// signinRoutes adds the sign-in's pages to m.
func (c *Console) signinRoutes(m *http.ServeMux) {
	m.HandleFunc("GET "+loginPath, c.login)
	m.HandleFunc("GET "+callbackPath, c.callback)
	m.HandleFunc("POST "+logoutPath, c.logout)
}

// login starts a sign-in at the provider: a state, a PKCE verifier and a
// nonce, sealed in a cookie of the browser's.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	s := c.signin
	next := safeNext(r.URL.Query().Get("next"))
	if _, _, ok := s.current(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	party, err := s.provider(r.Context())
	if err != nil {
		c.log.Warn("console: the sign-in provider cannot be reached", "issuer", s.cfg.Issuer, "error", err)
		c.gatePage(w, r, http.StatusBadGateway, "Cannot sign in",
			"The sign-in provider "+s.cfg.Issuer+" cannot be reached or is not an OpenID provider: "+printable(err.Error(), 300)+". Try again once it is up.", "", r.URL.RequestURI())
		return
	}
	p := pendingLogin{State: randomHex(), Verifier: randomHex(), Nonce: randomHex(), Next: next,
		Redirect: s.redirectURI(r), Expires: time.Now().Add(loginTTL)}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: s.sealLogin(p), Path: Prefix, MaxAge: int(loginTTL / time.Second),
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
	to := rp.AuthURL(p.State, party, rp.WithCodeChallenge(oidc.NewSHACodeChallenge(p.Verifier)),
		func() []oauth2.AuthCodeOption {
			return []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("nonce", p.Nonce), oauth2.SetAuthURLParam("redirect_uri", p.Redirect)}
		})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// callback finishes a sign-in: the state must be the one this browser
// started, the code is exchanged with its verifier, the ID token checked
// (signature, issuer, audience, expiry, nonce), and whom the person acts
// for read from its claims.
func (c *Console) callback(w http.ResponseWriter, r *http.Request) {
	s := c.signin
	q := r.URL.Query()
	var p pendingLogin
	ck, err := r.Cookie(loginCookie)
	ok := err == nil
	if ok {
		p, ok = s.openLogin(ck.Value)
	}
	ok = ok && q.Get("state") != "" && subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(p.State)) == 1
	// The cookie is spent whatever comes of it.
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteLaxMode})
	if !ok || time.Now().After(p.Expires) {
		c.gatePage(w, r, http.StatusBadRequest, "Cannot sign in",
			"This sign-in was not started in this browser, was finished already, or took longer than 10 minutes: sign in again.", "", loginPath)
		return
	}
	if e := q.Get("error"); e != "" {
		msg := "The sign-in provider refused the sign-in: " + printable(e, 100)
		if d := q.Get("error_description"); d != "" {
			msg += ": " + printable(d, 300)
		}
		c.gatePage(w, r, http.StatusForbidden, "Cannot sign in", msg+".", "", loginPath+"?next="+url.QueryEscape(p.Next))
		return
	}
	party, err := s.provider(r.Context())
	if err != nil {
		c.gatePage(w, r, http.StatusBadGateway, "Cannot sign in", "The sign-in provider "+s.cfg.Issuer+" cannot be reached: "+printable(err.Error(), 300)+".", "", loginPath)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), nonceKey{}, p.Nonce), 15*time.Second)
	defer cancel()
	tokens, err := rp.CodeExchange[*oidc.IDTokenClaims](ctx, q.Get("code"), party, rp.WithCodeVerifier(p.Verifier),
		func() []oauth2.AuthCodeOption {
			return []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("redirect_uri", p.Redirect)}
		})
	if err != nil {
		c.log.Warn("console: a sign-in failed", "issuer", s.cfg.Issuer, "error", err)
		c.gatePage(w, r, http.StatusForbidden, "Cannot sign in", "The sign-in could not be completed: "+printable(err.Error(), 300)+".", "", loginPath+"?next="+url.QueryEscape(p.Next))
		return
	}
	who, err := s.principal(ctx, party, tokens)
	if err != nil {
		c.log.Warn("console: a sign-in names no one the console can act for", "issuer", s.cfg.Issuer, "error", err)
		c.gatePage(w, r, http.StatusForbidden, "Cannot sign in", sentence(printable(err.Error(), 400))+".", "", "")
		return
	}
	as := airlock.Actor{Principal: who, By: who.User, AllPrincipals: s.operator(who), Source: "console"}
	id := randomHex()
	opened, err := s.sessions.open(r.Context(), id, as)
	switch {
	case err != nil:
		c.log.Warn("console: a session cannot be kept", "error", err)
		c.gatePage(w, r, http.StatusServiceUnavailable, "Cannot sign in", "The session cannot be kept in the store: "+printable(err.Error(), 300)+". Try again.", "", loginPath)
		return
	case !opened:
		c.gatePage(w, r, http.StatusServiceUnavailable, "Cannot sign in", "Too many people are signed in to this console: try again later.", "", "")
		return
	}
	if err := airlock.RecordSignIn(r.Context(), c.opts.Store, as, true, s.cfg.Issuer); err != nil {
		c.log.Warn("console: a sign-in is not in the audit trail", "error", err)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: Prefix, MaxAge: int(s.cfg.SessionTTL / time.Second),
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	// The browser came here from the provider's site, so it would not
	// send the SameSite=Strict cookie on a redirect; this page goes on
	// from the console's own site.
	c.gatePage(w, r, http.StatusOK, "Signed in", "Signed in as "+who.Tenant+"/"+who.User+".", p.Next, p.Next)
}

// principal reads whom a verified sign-in acts for.
func (s *signins) principal(ctx context.Context, party rp.RelyingParty, tokens *oidc.Tokens[*oidc.IDTokenClaims]) (airlock.Principal, error) {
	claims := tokens.IDTokenClaims
	var info *oidc.UserInfo
	claim := func(name, key string) (string, error) {
		v, ok := stringClaim(claims.Claims, claims.Subject, name)
		if !ok && party.UserinfoEndpoint() != "" && tokens.AccessToken != "" {
			if info == nil {
				ui, err := rp.Userinfo[*oidc.UserInfo](ctx, tokens.AccessToken, tokens.TokenType, claims.Subject, party)
				if err != nil {
					return "", fmt.Errorf("the ID token has no claim %s (serve.auth.%s), and the userinfo endpoint did not answer: %v", name, key, err)
				}
				info = ui
			}
			v, ok = stringClaim(info.Claims, info.Subject, name)
		}
		if !ok {
			return "", fmt.Errorf("your sign-in names no %s: the provider must put the claim %s (serve.auth.%s) in the console's ID tokens or userinfo, as it does in access tokens", strings.TrimSuffix(key, "_claim"), name, key)
		}
		return v, nil
	}
	who := airlock.Principal{Tenant: s.cfg.DefaultTenant}
	var err error
	if s.cfg.TenantClaim != "" {
		if who.Tenant, err = claim(s.cfg.TenantClaim, "tenant_claim"); err != nil {
			return who, err
		}
	}
	if who.User, err = claim(s.cfg.UserClaim, "user_claim"); err != nil {
		return who, err
	}
	for what, v := range map[string]string{"tenant": who.Tenant, "user": who.User} {
		if config.CheckPrincipal(what, v) != nil {
			return who, fmt.Errorf("your sign-in names the %s %q, which the console cannot act for: it must be 1 to 128 letters, digits, ., _, @, + or -", what, printable(v, 140))
		}
	}
	return who, nil
}

// stringClaim returns claims[name] when it is a non-empty string (sub
// also from the subject the library read).
func stringClaim(claims map[string]any, subject, name string) (string, bool) {
	if v, ok := claims[name].(string); ok && v != "" {
		return v, true
	}
	if name == "sub" && subject != "" {
		return subject, true
	}
	return "", false
}

func (s *signins) operator(who airlock.Principal) bool {
	return slices.Contains(s.cfg.Operators, who)
}

// logout ends the session (an action: its CSRF token is checked).
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if err := c.checkAction(w, r); err != nil {
		c.refuse(w, r, err)
		return
	}
	s := c.signin
	id, as, ok := s.current(r)
	if ok {
		if err := s.sessions.end(r.Context(), id); err != nil {
			c.log.Warn("console: a session cannot be ended", "error", err)
			c.gatePage(w, r, http.StatusServiceUnavailable, "Not signed out", "The session cannot be ended in the store: "+printable(err.Error(), 300)+". Try again.", "", "")
			return
		}
		if err := airlock.RecordSignIn(r.Context(), c.opts.Store, as, false, s.cfg.Issuer); err != nil {
			c.log.Warn("console: a sign-out is not in the audit trail", "error", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	c.gateWith(w, http.StatusOK, "Signed out", "You are signed out of the console. The provider may still remember you: sign out there too on a shared computer.",
		gateData{Link: loginPath, Provider: s.endSession(r.Context())})
}

// endSession is where the browser signs out at the provider (OpenID
// Connect RP-Initiated Logout, with the console's client id), or "" for a
// provider that names no end_session_endpoint or cannot be reached.
func (s *signins) endSession(ctx context.Context) string {
	party, err := s.provider(ctx)
	if err != nil {
		return ""
	}
	u, err := url.Parse(party.GetEndSessionEndpoint())
	if err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http" {
		return ""
	}
	q := u.Query()
	q.Set("client_id", s.cfg.ClientID)
	u.RawQuery = q.Encode()
	return u.String()
}

// safeNext is where a sign-in returns to: a console page, never another
// site or the sign-in itself, and at most 1 KiB of it.
func safeNext(next string) string {
	const home = Prefix + "approvals"
	u, err := url.Parse(next)
	// The login cookie holds it: a browser keeps no cookie over 4 KB.
	if err != nil || next == "" || len(next) > 1024 || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(next, Prefix) ||
		path.Clean(u.Path) != strings.TrimSuffix(u.Path, "/") || // no dot segments: the page named is the page gone to
		strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(u.Path, loginPath) || strings.HasPrefix(u.Path, callbackPath) ||
		u.Path == Prefix+"events" || strings.HasPrefix(u.Path, Prefix+"static/") {
		return home
	}
	return u.RequestURI()
}

// gateData is what the sign-in's pages show: where to go on (a link, and
// a refresh to it when Refresh is set).
type gateData struct {
	Refresh, Link string
	Provider      string // where to sign out at the provider too, or ""
}

// gatePage writes one of the sign-in's pages.
func (c *Console) gatePage(w http.ResponseWriter, r *http.Request, status int, title, msg, refresh, link string) {
	c.gateWith(w, status, title, msg, gateData{Refresh: refresh, Link: link})
}

// gateWith writes a sign-in page with data.
func (c *Console) gateWith(w http.ResponseWriter, status int, title, msg string, data gateData) {
	p := page{Name: "gate", Title: title, Now: time.Now(), Data: data}
	if status >= 400 {
		p.Error = msg
	} else {
		p.Flash = msg
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := c.pages.ExecuteTemplate(w, "gate", p); err != nil {
		c.log.Error("console page failed", "page", "gate", "error", err)
	}
}

// sentence starts s with a capital letter.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// hostOnly is the host of a Host header, without port or brackets.
func hostOnly(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

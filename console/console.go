// Package console is Airlock's operator console: the approvals, recovery
// records, servers, worktree tasks, agent runs and audit trail of one
// store, in a browser, live.
//
// The pages are rendered on the server (html/template); htmx, embedded
// with the console, refreshes them when the store changes, over
// server-sent events. Every page reads without JavaScript, and every
// action is a plain form POST, so that the console works without it too.
//
// Each request must name a host the console answers for (loopback, or
// Options.Hosts), against DNS rebinding. Every action carries the
// session's CSRF token and, when the browser sends one, an Origin (or
// Sec-Fetch-Site) of the console itself; every action is written to the
// audit trail with the console as its source. Nothing the console renders
// holds a secret: approval summaries and journal arguments are redacted
// when they are recorded, and the console shows only those.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// Prefix is the path under which the console serves its pages.
const Prefix = "/console/"

// Options configure a Console.
type Options struct {
	// Store holds what the console shows and acts on.
	Store store.Store
	// Config is the configuration the store and the host were opened
	// with: the approval TTL, hooks, and the servers.
	Config *config.Config
	// StateDir is the state directory, for the worktree tasks.
	StateDir string
	// Host, when set, is the running host whose servers the servers page
	// shows; until it is set (SetHost) the page says the servers are
	// starting.
	Host *airlock.Host
	// StartHost, when set, starts that host (and calls SetHost once it
	// runs): it is called once, when the servers page is first shown
	// without a host, so that a console that is only used for approvals,
	// questions and records starts no server of its own.
	StartHost func()
	// Actor is whom every viewer acts as: the principal whose approvals,
	// records, runs and audit events the pages show and act on (every
	// principal's with AllPrincipals), and the person, for the audit
	// trail. Its Source is set to "console".
	Actor airlock.Actor
	// Hosts lists the host names, besides loopback ones, that requests
	// may name in their Host header.
	Hosts []string
	// Secure marks the session cookie Secure: for a console served off
	// loopback (behind TLS).
	Secure bool
	// RunLive reports whether a run's driving process is alive; nil: a
	// run reads as its record says.
	RunLive func(id string) bool
	// Logger gets what the console logs; nil discards it.
	Logger *slog.Logger
	// Poll is how often a live page's stream looks for changes (default
	// 500 ms).
	Poll time.Duration
	// SignIn, when set, signs people in with OpenID Connect: each acts
	// for the tenant and user their ID token names (Actor is then only
	// the default tenant), and the console answers for the host of
	// SignIn.Resource too.
	SignIn *SignIn
	// Key, at least 32 bytes, signs the sessions' CSRF tokens and seals
	// sign-ins under way: the same on every replica of a gateway, so that
	// any of them takes a form or a sign-in another one served. Nil: a
	// key of this process.
	Key []byte
}

// A Console serves the operator console under Prefix.
type Console struct {
	opts    Options
	log     *slog.Logger
	key     []byte // signs the CSRF tokens of this process's sessions
	pages   *template.Template
	mux     *http.ServeMux
	host    atomic.Pointer[airlock.Host]
	start   func()       // Options.StartHost, once
	streams atomic.Int64 // live event streams open
	signin  *signins     // nil: everyone acts as Options.Actor
}

//go:embed templates/*.html
var templates embed.FS

//go:embed static
var static embed.FS

// New returns the console of opts.Store.
func New(opts Options) (*Console, error) {
	if opts.Store == nil || opts.Config == nil {
		return nil, errors.New("console: a store and a configuration are required")
	}
	key := opts.Key
	if len(key) < 32 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	var signin *signins
	if opts.SignIn != nil {
		var err error
		if signin, err = newSignins(*opts.SignIn, key, opts.Store); err != nil {
			return nil, err
		}
		opts.Hosts = append(slices.Clone(opts.Hosts), signin.host)
	} else if !opts.Actor.AllPrincipals && (opts.Actor.Principal.Tenant == "" || opts.Actor.Principal.User == "") {
		return nil, errors.New("console: no tenant and user to act for: set tenancy: in the configuration, or act for every principal")
	}
	opts.Actor.Source = "console"
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(templates, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: %v", err)
	}
	c := &Console{opts: opts, log: opts.Logger, key: key, pages: pages, signin: signin}
	if opts.Host != nil {
		c.host.Store(opts.Host)
	}
	c.start = func() {}
	if opts.StartHost != nil {
		c.start = sync.OnceFunc(opts.StartHost)
	}
	c.routes()
	return c, nil
}

// SetHost gives the console the running host whose servers it shows.
func (c *Console) SetHost(h *airlock.Host) { c.host.Store(h) }

// runningHost is the host whose servers the console shows, nil until it
// runs; asking for it starts it (Options.StartHost), when r comes from a
// person or the console's own pages.
func (c *Console) runningHost(r *http.Request) *airlock.Host {
	h := c.host.Load()
	if h == nil && fromConsole(r) {
		c.start()
	}
	return h
}

// fromConsole reports whether r was made by a person (a URL typed, a
// bookmark, a client that is not a browser) or by the console's own pages,
// not by another site's page: an image, a script, an event stream or a
// navigation of another origin (another loopback port too), which a browser
// marks with Sec-Fetch-Site cross-site or same-site. Only those start the
// servers: a GET to the console is no way for a web page to start processes.
func fromConsole(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "none", "same-origin":
		return true
	}
	return false
}

func (c *Console) routes() {
	m := http.NewServeMux()
	assets, _ := fs.Sub(static, "static")
	m.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", cached(http.FileServerFS(assets))))
	m.HandleFunc("GET "+Prefix+"{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"approvals", http.StatusSeeOther)
	})
	m.HandleFunc("GET "+Prefix+"approvals", c.live("approvals", c.approvals))
	m.HandleFunc("POST "+Prefix+"approvals/{id}/{action}", c.action(c.decide))
	m.HandleFunc("GET "+Prefix+"inputs", c.live("inputs", c.inputs))
	m.HandleFunc("POST "+Prefix+"inputs/{id}/answer", c.action(c.answer))
	m.HandleFunc("GET "+Prefix+"recovery", c.live("recovery", c.recovery))
	m.HandleFunc("POST "+Prefix+"recovery/{id}/resolve", c.action(c.resolve))
	m.HandleFunc("GET "+Prefix+"servers", c.live("servers", c.servers))
	m.HandleFunc("GET "+Prefix+"tasks", c.live("tasks", c.tasks))
	m.HandleFunc("GET "+Prefix+"runs", c.live("runs", c.runs))
	m.HandleFunc("GET "+Prefix+"audit", c.live("audit", c.audit))
	m.HandleFunc("GET "+Prefix+"audit/verify", c.verify)
	m.HandleFunc("GET "+Prefix+"events", c.events)
	if c.signin != nil {
		c.signinRoutes(m)
	}
	m.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no such page in the console.")
	})
	c.mux = m
}

// ServeHTTP serves the console's pages, after the Host check; every
// response forbids framing and sniffing, and every page is kept from
// caches.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	if !c.hostAllowed(r.Host) {
		http.Error(w, "host not allowed: the console answers only requests for localhost, 127.0.0.1 or [::1]"+c.hostsNamed(), http.StatusMisdirectedRequest)
		return
	}
	if c.signin != nil && !unguarded(r.URL.Path) {
		var ok bool
		if r, ok = c.gate(w, r); !ok {
			return
		}
	}
	c.mux.ServeHTTP(w, r)
}

// unguarded reports whether a path is served without a sign-in: the embedded
// assets and the sign-in itself.
func unguarded(path string) bool {
	return strings.HasPrefix(path, Prefix+"static/") || path == loginPath || path == callbackPath
}

// cached lets browsers keep the embedded assets for a day.
func cached(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a request's Host header names a loopback
// host or one of Options.Hosts.
func (c *Console) hostAllowed(hostport string) bool {
	host := hostOnly(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.ContainsFunc(c.opts.Hosts, func(h string) bool { return strings.EqualFold(h, host) })
}

func (c *Console) hostsNamed() string {
	if len(c.opts.Hosts) == 0 {
		return ""
	}
	return " and " + strings.Join(c.opts.Hosts, ", ")
}

// sessionCookie names the cookie that ties a browser to its CSRF token.
const sessionCookie = "airlock_console"

// session returns the browser's session id, setting a new one when it
// has none (or one this console did not make).
func (c *Console) session(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(sessionCookie); err == nil && validSession(ck.Value) {
		return ck.Value
	}
	id := randomHex()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: Prefix, HttpOnly: true,
		Secure: c.opts.Secure || c.signin != nil && c.signin.secure(r), SameSite: http.SameSiteStrictMode})
	return id
}

func validSession(v string) bool {
	if len(v) != 64 {
		return false
	}
	_, err := hex.DecodeString(v)
	return err == nil
}

// csrfToken is the token the session's forms carry.
func (c *Console) csrfToken(session string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("airlock console csrf\x00" + session))
	return hex.EncodeToString(m.Sum(nil))
}

// seal is what shows that the console wrote msg, the text of a done
// banner: a link that carries a text of its own choosing (a phishing
// "run this command") shows no banner.
func (c *Console) seal(msg string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("airlock console done\x00" + msg))
	return hex.EncodeToString(m.Sum(nil))
}

// flash is the done banner r carries, if the console wrote it.
func (c *Console) flash(r *http.Request) string {
	q := r.URL.Query()
	msg := q.Get("done")
	if msg == "" || !hmac.Equal([]byte(q.Get("seal")), []byte(c.seal(msg))) {
		return ""
	}
	return printable(msg, 300)
}

// errForbidden is an action refused before anything was done.
var errForbidden = errors.New("forbidden")

// action serves a form's POST with handler, once checkAction passed it,
// in the context that bounds what one page asks of the store.
func (c *Console) action(handler func(ctx context.Context, w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.checkAction(w, r); err != nil {
			c.refuse(w, r, err)
			return
		}
		ctx, cancel := pageContext(r)
		defer cancel()
		handler(ctx, w, r)
	}
}

// checkAction checks a POST: the session cookie, the form's CSRF token,
// and the page it came from (Origin, else Sec-Fetch-Site), when the
// browser names it. The form is parsed (bounded) on the way.
func (c *Console) checkAction(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: the form cannot be read: %v", errForbidden, err)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !sameOrigin(origin, r) {
			return fmt.Errorf("%w: the request comes from %s, not from the console: actions are taken on the console's own pages", errForbidden, origin)
		}
	} else if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fmt.Errorf("%w: the request comes from another site (%s): actions are taken on the console's own pages", errForbidden, site)
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil || !validSession(ck.Value) {
		return fmt.Errorf("%w: the browser has no console session: reload the page and try again", errForbidden)
	}
	want := c.csrfToken(ck.Value)
	if got := r.PostForm.Get("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return fmt.Errorf("%w: the form's token is missing or stale (the console may have restarted): reload the page and try again", errForbidden)
	}
	return nil
}

// sameOrigin reports whether origin is the origin r was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, r.Host)
}

// actor is whom a request acts as: the signed-in person, or Options.Actor.
func (c *Console) actor(r *http.Request) airlock.Actor {
	if as, ok := r.Context().Value(actorKey{}).(airlock.Actor); ok {
		return as
	}
	return c.opts.Actor
}

// ctx bounds what one page asks of the store.
func pageContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Second)
}

package console_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/console"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
	"github.com/airlockhq/airlock/store/sqlite"
)

const (
	consoleClient = "airlock-console"
	password      = oauthtest.Password // everyone's, at the test's provider
)

// provider runs a real OpenID provider on loopback that knows the
// console's client (any loopback port) and alice (of opts.Tenant), bob
// (globex), carol (acme, an operator) and dave (of a tenant the console
// cannot act for); opts adds to that.
func provider(t *testing.T, opts oauthtest.Options) *oauthtest.Server {
	t.Helper()
	opts.ClientID = consoleClient
	opts.RedirectURIs = []string{"http://127.0.0.1/console/callback", "https://airlock.test/console/callback"}
	opts.OptionalResource = true
	opts.People = append(opts.People, oauthtest.Person{Name: "bob", Password: password, Tenant: "globex"},
		oauthtest.Person{Name: "carol", Password: password, Tenant: "acme"}, oauthtest.Person{Name: "dave", Password: password, Tenant: "a b"})
	return oauthtest.New(t, &opts)
}

// signedFixture is a console that signs people in at issuer.
func signedFixture(t *testing.T, issuer string) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return signedOn(t, issuer, st, nil)
}

// signedOn is a console on st, with key, that signs people in at issuer.
func signedOn(t *testing.T, issuer string, st store.Store, key []byte) *fixture {
	t.Helper()
	cfg, err := config.Parse([]byte("servers:\n  - {id: w, command: \"true\", allowed_tools: [greet]}\n"), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Options{Store: st, Config: cfg, StateDir: t.TempDir(), Poll: 50 * time.Millisecond, Key: key,
		SignIn: &console.SignIn{Issuer: issuer, ClientID: consoleClient, TenantClaim: "tenant", DefaultTenant: "acme",
			Operators: []airlock.Principal{{Tenant: "acme", User: "carol"}}, Resource: "https://airlock.test/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	f := &fixture{t: t, st: st, srv: srv}
	f.fresh()
	return f
}

// fresh gives the fixture a new browser: an empty cookie jar.
func (f *fixture) fresh() {
	jar, _ := cookiejar.New(nil)
	f.client = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// location fetches path and returns the status and the Location header.
func (f *fixture) location(path string) (int, string) {
	f.t.Helper()
	resp, err := f.client.Get(f.srv.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// startSignIn follows the console from page to the provider, and returns
// the provider's authorization URL.
func (f *fixture) startSignIn(page string) string {
	f.t.Helper()
	code, login := f.location(page)
	if code != http.StatusSeeOther || !strings.HasPrefix(login, "/console/login?next=") {
		f.t.Fatalf("GET %s signed out: %d to %q, want 303 to the sign-in", page, code, login)
	}
	code, auth := f.location(login)
	if code != http.StatusSeeOther || !strings.Contains(auth, "code_challenge_method=S256") || !strings.Contains(auth, "nonce=") {
		f.t.Fatalf("GET %s: %d to %q, want 303 to the provider with PKCE and a nonce", login, code, auth)
	}
	return auth
}

// signIn signs user in, starting from page, and returns the page the
// sign-in ends on.
func (f *fixture) signIn(idp *oauthtest.Server, page, user string) (int, string) {
	f.t.Helper()
	auth := f.startSignIn(page)
	back, err := idp.Authorize(context.Background(), auth, user, password)
	if err != nil {
		f.t.Fatalf("the provider's sign-in of %s: %v", user, err)
	}
	return f.get(strings.TrimPrefix(back, f.srv.URL))
}

// TestSignIn: signed out, a page sends the browser to the provider, a
// stream and an action are refused; signed in, the person acts for the
// tenant and user their ID token names and sees only theirs, acts with
// the session's token, and is in the audit trail; signed out again, the
// session is gone.
func TestSignIn(t *testing.T) {
	idp := provider(t, oauthtest.Options{Tenant: "acme"})
	f := signedFixture(t, idp.URL)
	alice := airlock.Principal{Tenant: "acme", User: "alice"}
	f.ask("apr_alice", alice)
	f.ask("apr_bob", airlock.Principal{Tenant: "globex", User: "bob"})

	if code, _ := f.get("/console/events?page=approvals"); code != http.StatusUnauthorized {
		t.Errorf("a stream signed out: %d, want 401", code)
	}
	if code, body := f.post("/console/approvals/apr_alice/approve", url.Values{"csrf": {"x"}}); code != http.StatusForbidden || !strings.Contains(body, "sign in again") {
		t.Errorf("an action signed out: %d\n%s", code, body)
	}
	if code, body := f.get("/console/static/console.css"); code != 200 || body == "" {
		t.Errorf("the stylesheet signed out: %d", code)
	}

	code, body := f.signIn(idp, "/console/approvals?all=1", "alice")
	if code != 200 || !strings.Contains(body, "Signed in as acme/alice") || !strings.Contains(body, `content="0;url=/console/approvals?all=1"`) {
		t.Fatalf("the end of the sign-in: %d\n%s", code, body)
	}
	code, body = f.get("/console/approvals")
	if code != 200 || !strings.Contains(body, "acting for acme/alice") || !strings.Contains(body, "apr_alice") || strings.Contains(body, "apr_bob") {
		t.Errorf("alice's approvals: %d\n%s", code, body)
	}
	if !strings.Contains(body, `action="/console/logout"`) {
		t.Error("the page has no sign-out")
	}
	if code, _ := f.get("/console/approvals/apr_bob"); code == 200 {
		t.Error("alice reached bob's request")
	}
	token := f.token("/console/approvals")
	if code, loc := f.post("/console/approvals/apr_alice/approve", url.Values{"csrf": {token}}); code != http.StatusSeeOther {
		t.Errorf("alice approves her request: %d %s", code, loc)
	}
	if s := f.status("apr_alice"); s != store.ApprovalGranted {
		t.Errorf("alice's request is %s after her approval", s)
	}
	if code, _ := f.post("/console/approvals/apr_bob/deny", url.Values{"csrf": {token}}); code != http.StatusNotFound {
		t.Errorf("alice denies bob's request: %d, want 404", code)
	}
	if s := f.status("apr_bob"); s != store.ApprovalPending {
		t.Errorf("bob's request is %s after alice's attempt", s)
	}

	// Signed out: the session is gone, here and for a copy of its cookie.
	u, _ := url.Parse(f.srv.URL)
	kept := f.client.Jar.Cookies(u)
	if code, _ := f.post("/console/logout", url.Values{"csrf": {"stale"}}); code != http.StatusForbidden {
		t.Errorf("a sign-out without the token: %d", code)
	}
	code, body = f.post("/console/logout", url.Values{"csrf": {token}})
	if code != 200 || !strings.Contains(body, "signed out") {
		t.Errorf("sign out: %d\n%s", code, body)
	}
	// The page leads on to signing out at the provider, at the endpoint
	// its metadata names, for the console's client.
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := getJSON(idp.URL+"/.well-known/openid-configuration", &meta); err != nil || meta.EndSession == "" {
		t.Fatalf("the provider's metadata: %v, end_session_endpoint %q", err, meta.EndSession)
	}
	if want := `id="provider" href="` + meta.EndSession + `?client_id=` + consoleClient + `"`; !strings.Contains(body, want) {
		t.Errorf("the signed-out page does not lead to the provider's sign-out (%s):\n%s", want, body)
	}

	if code, loc := f.location("/console/approvals"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/login") {
		t.Errorf("after the sign-out: %d %s", code, loc)
	}
	f.fresh()
	f.client.Jar.SetCookies(u, kept)
	if code, loc := f.location("/console/approvals"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/login") {
		t.Errorf("the old session's cookie after the sign-out: %d %s", code, loc)
	}

	events, err := f.st.Audit().Events(context.Background(), time.Now().Add(-time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	var in, out, approved bool
	for _, e := range events {
		switch {
		case e.Event == store.EventSignedIn && e.Fields["user"] == "alice" && e.Fields["tenant"] == "acme" && e.Fields["source"] == "console" && e.Fields["issuer"] == idp.URL:
			in = true
		case e.Event == store.EventSignedOut && e.Fields["user"] == "alice":
			out = true
		case e.Event == store.EventApprovalGranted && e.Fields["by"] == "alice" && e.Fields["source"] == "console":
			approved = true
		}
	}
	if !in || !out || !approved {
		t.Errorf("the audit trail (signed in %v, out %v, approval by alice %v):\n%+v", in, out, approved, events)
	}
}

// TestSignInOperator: a person the configuration names an operator sees
// every tenant's requests; another person of the same tenant does not.
func TestSignInOperator(t *testing.T) {
	idp := provider(t, oauthtest.Options{Tenant: "acme"})
	f := signedFixture(t, idp.URL)
	f.ask("apr_bob", airlock.Principal{Tenant: "globex", User: "bob"})
	f.signIn(idp, "/console/approvals", "carol")
	if _, body := f.get("/console/approvals"); !strings.Contains(body, "apr_bob") || !strings.Contains(body, "every tenant and user (operator)") {
		t.Errorf("carol's approvals:\n%s", body)
	}
	f.fresh()
	f.signIn(idp, "/console/approvals", "alice")
	if _, body := f.get("/console/approvals"); strings.Contains(body, "apr_bob") {
		t.Errorf("alice sees globex's request:\n%s", body)
	}
}

// TestSignInClaims: a tenant the ID token leaves out is read from
// userinfo; a sign-in that names no tenant at all is refused and says
// which claim is missing.
func TestSignInClaims(t *testing.T) {
	idp := provider(t, oauthtest.Options{Tenant: "acme", TenantInUserinfoOnly: true})
	f := signedFixture(t, idp.URL)
	if code, body := f.signIn(idp, "/console/approvals", "bob"); code != 200 || !strings.Contains(body, "Signed in as globex/bob") {
		t.Errorf("a tenant from userinfo: %d\n%s", code, body)
	}

	// alice has no tenant at this provider: neither the ID token nor
	// userinfo names one.
	idp = provider(t, oauthtest.Options{})
	f = signedFixture(t, idp.URL)
	code, body := f.signIn(idp, "/console/approvals", "alice")
	if code != http.StatusForbidden || !strings.Contains(body, "Your sign-in names no tenant: the provider must put the claim tenant (serve.auth.tenant_claim)") {
		t.Errorf("no tenant: %d\n%s", code, body)
	}
	if code, _ := f.location("/console/approvals"); code != http.StatusSeeOther {
		t.Errorf("a refused sign-in left a session: %d", code)
	}
	f.fresh()
	code, body = f.signIn(idp, "/console/approvals", "dave")
	if code != http.StatusForbidden || !strings.Contains(body, "names the tenant &#34;a b&#34;, which the console cannot act for") {
		t.Errorf("a tenant the console cannot act for: %d\n%s", code, body)
	}
}

// TestSignInRefusals: a callback this browser did not start, one used
// twice, the provider's refusal and an unreachable provider each get a
// page that says so, and no session; a next that leaves the console is
// not followed.
func TestSignInRefusals(t *testing.T) {
	idp := provider(t, oauthtest.Options{Tenant: "acme"})
	f := signedFixture(t, idp.URL)
	auth := f.startSignIn("/console/approvals")
	back, err := idp.Authorize(context.Background(), auth, "alice", password)
	if err != nil {
		t.Fatal(err)
	}
	callback := strings.TrimPrefix(back, f.srv.URL)

	// Another browser brings the code.
	other := *f
	other.fresh()
	if code, body := other.get(callback); code != http.StatusBadRequest || !strings.Contains(body, "not started in this browser") {
		t.Errorf("a callback from another browser: %d\n%s", code, body)
	}
	// The sign-in's own browser, then the same callback again.
	if code, _ := f.get(callback); code != 200 {
		t.Errorf("the callback: %d", code)
	}
	f.fresh()
	if code, _ := f.get(callback); code != http.StatusBadRequest {
		t.Errorf("a callback used twice: %d", code)
	}

	// A login cookie this console did not seal.
	f.fresh()
	u, _ := url.Parse(f.srv.URL)
	f.client.Jar.SetCookies(u, []*http.Cookie{{Name: "airlock_console_login", Value: "forged", Path: "/console/"}})
	if code, _ := f.get("/console/callback?state=forged&code=x"); code != http.StatusBadRequest {
		t.Errorf("a forged login cookie: %d", code)
	}

	// The provider refuses: the state is this browser's.
	f.fresh()
	auth = f.startSignIn("/console/approvals")
	state := queryOf(t, auth).Get("state")
	code, body := f.get("/console/callback?state=" + state + "&error=access_denied&error_description=" + url.QueryEscape("the person said no <b>"))
	if code != http.StatusForbidden || !strings.Contains(body, "refused the sign-in: access_denied: the person said no &lt;b&gt;") {
		t.Errorf("the provider's refusal: %d\n%s", code, body)
	}

	// A next that leaves the console ends on the approvals page.
	for _, next := range []string{"https://evil.example/", "//evil.example/x", "/console/login", "/elsewhere", "/console/../mcp", "/console/%2e%2e/mcp", "/console/audit?tool=" + strings.Repeat("x", 5000)} {
		f.fresh()
		code, auth := f.location("/console/login?next=" + url.QueryEscape(next))
		if code != http.StatusSeeOther {
			t.Fatalf("login with next %q: %d", next, code)
		}
		back, err := idp.Authorize(context.Background(), auth, "alice", password)
		if err != nil {
			t.Fatal(err)
		}
		if _, body := f.get(strings.TrimPrefix(back, f.srv.URL)); !strings.Contains(body, `content="0;url=/console/approvals"`) {
			t.Errorf("next %q is followed:\n%s", next, body)
		}
	}

	// Over the resource's host (https at a proxy in front): the cookies
	// are Secure, and the provider sends the browser back there.
	f.fresh()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/console/login", nil)
	req.Host = "airlock.test"
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); queryOf(t, loc).Get("redirect_uri") != "https://airlock.test/console/callback" {
		t.Errorf("the redirect URI for airlock.test: %s", loc)
	}
	if ck := resp.Cookies(); len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Errorf("the sign-in's cookie for airlock.test: %+v", ck)
	}

	// A provider that cannot be reached.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	g := signedFixture(t, down.URL)
	if code, body := g.get("/console/login"); code != http.StatusBadGateway || !strings.Contains(body, "cannot be reached") {
		t.Errorf("an unreachable provider: %d\n%s", code, body)
	}
}

func queryOf(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// TestSignInAcrossReplicas: two consoles on one PostgreSQL store with one
// key, as two replicas of a gateway: a sign-in started on one finishes on
// the other, its session and its forms are taken by both, and a sign-out
// on one ends it on both.
func TestSignInAcrossReplicas(t *testing.T) {
	dbURL := testenv.PostgresDatabase(t)
	auditKey := filepath.Join(t.TempDir(), "audit.key")
	open := func() store.Store {
		db, err := postgres.Open(t.Context(), dbURL, auditKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	idp := provider(t, oauthtest.Options{Tenant: "acme"})
	key := make([]byte, 32)
	rand.Read(key)
	a, b := signedOn(t, idp.URL, open(), key), signedOn(t, idp.URL, open(), key)
	b.client = a.client // one browser
	a.ask("apr_alice", airlock.Principal{Tenant: "acme", User: "alice"})

	auth := a.startSignIn("/console/approvals")
	back, err := idp.Authorize(t.Context(), auth, "alice", password)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := b.get(strings.TrimPrefix(back, a.srv.URL)); code != 200 || !strings.Contains(body, "Signed in as acme/alice") {
		t.Fatalf("a sign-in started on a, finished on b: %d\n%s", code, body)
	}
	// The cookies are the browser's, for 127.0.0.1 whatever the port.
	if code, body := a.get("/console/approvals"); code != 200 || !strings.Contains(body, "apr_alice") {
		t.Errorf("a, with b's session: %d\n%s", code, body)
	}
	token := b.token("/console/approvals")
	if code, loc := a.post("/console/approvals/apr_alice/deny", url0(token)); code != http.StatusSeeOther {
		t.Errorf("a takes b's form: %d %s", code, loc)
	}
	u, _ := url.Parse(a.srv.URL)
	kept := a.client.Jar.Cookies(u)
	if code, body := b.post("/console/logout", url0(token)); code != 200 || !strings.Contains(body, "signed out") {
		t.Fatalf("sign out on b: %d\n%s", code, body)
	}
	a.fresh()
	a.client.Jar.SetCookies(u, kept) // a copy of the session's cookie
	if code, _ := a.location("/console/approvals"); code != http.StatusSeeOther {
		t.Errorf("a after the sign-out on b: %d, want 303 to the sign-in", code)
	}
}

func url0(token string) url.Values { return url.Values{"csrf": {token}} }

// getJSON decodes the JSON document at url into v.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

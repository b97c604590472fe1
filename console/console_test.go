package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/console"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

var (
	acme   = airlock.Principal{Tenant: "acme", User: "ada"}
	globex = airlock.Principal{Tenant: "globex", User: "eve"}
)

// A fixture is a console on a real SQLite store, served over loopback
// HTTP, and a browser-like client with a cookie jar.
type fixture struct {
	t      *testing.T
	st     store.Store
	srv    *httptest.Server
	client *http.Client
}

func newFixture(t *testing.T, as airlock.Actor) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return serveOn(t, st, as)
}

func serveOn(t *testing.T, st store.Store, as airlock.Actor) *fixture {
	t.Helper()
	cfg, err := config.Parse([]byte("servers:\n  - {id: w, command: \"true\", allowed_tools: [greet]}\n"), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Options{Store: st, Config: cfg, StateDir: t.TempDir(), Actor: as, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &fixture{t: t, st: st, srv: srv, client: client}
}

// get fetches path and returns the status and the body.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	resp, err := f.client.Get(f.srv.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// token loads page and returns its forms' CSRF token.
func (f *fixture) token(page string) string {
	f.t.Helper()
	code, body := f.get(page)
	m := csrfField.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		f.t.Fatalf("GET %s: %d, no CSRF token in:\n%s", page, code, body)
	}
	return m[1]
}

// post sends a form to path with headers, and returns the status and the
// Location or body.
func (f *fixture) post(path string, form url.Values, headers ...string) (int, string) {
	f.t.Helper()
	code, body, _ := f.postHeaders(path, form, headers...)
	return code, body
}

// postHeaders is post, with the response's headers.
func (f *fixture) postHeaders(path string, form url.Values, headers ...string) (int, string, http.Header) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc, resp.Header
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (f *fixture) ask(id string, who airlock.Principal) {
	f.t.Helper()
	now := time.Now()
	a := store.Approval{ID: id, Server: "w", Tool: "w__greet", Digest: "sha256:" + id, Definition: "def:" + id,
		Summary: "w__greet on w\narguments:\n  \"name\": \"ada\"", Tenant: who.Tenant, User: who.User,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := f.st.Approvals().Create(context.Background(), a); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) status(id string) store.ApprovalStatus {
	f.t.Helper()
	a, err := f.st.Approvals().Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return a.Status
}

// TestHostHeader: a request for a name that is not loopback (a page that
// rebound its own DNS name to 127.0.0.1) is refused.
func TestHostHeader(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	for host, want := range map[string]int{"localhost": 200, "127.0.0.1": 200, "[::1]:80": 200, "evil.example": 421, "127.0.0.1.nip.io": 421} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/console/approvals", nil)
		req.Host = host
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestPagesAndHeaders: every page answers, none can be framed, an unknown
// one is 404, and the assets are the embedded ones.
func TestPagesAndHeaders(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	for _, p := range []string{"/console/approvals", "/console/approvals?all=1", "/console/inputs", "/console/recovery", "/console/recovery?all=1",
		"/console/servers", "/console/tasks", "/console/runs", "/console/audit", "/console/audit/verify"} {
		resp, err := f.client.Get(f.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "acting for acme/ada") {
			t.Errorf("GET %s: %d\n%s", p, resp.StatusCode, b)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("GET %s may be framed: %v", p, resp.Header)
		}
		ck := resp.Cookies()
		if len(ck) == 1 && (!ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Secure) {
			t.Errorf("GET %s: session cookie %+v, want HttpOnly, SameSite=Strict, not Secure on loopback", p, ck[0])
		}
	}
	if code, _ := f.get("/console/nothing"); code != 404 {
		t.Errorf("an unknown page: %d", code)
	}
	// Error pages are pages too: HTML, kept from caches (a 404 may be
	// cached unless it says not to be).
	if resp, err := f.client.Get(f.srv.URL + "/console/nothing"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("an unknown page: Cache-Control %q, Content-Type %q; want no-store, text/html",
				resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Type"))
		}
	}
	if code, body := f.get("/console/static/htmx.min.js"); code != 200 || !strings.Contains(body, "htmx") {
		t.Errorf("htmx: %d", code)
	}
	if code, body := f.get("/console/"); code != http.StatusSeeOther {
		t.Errorf("/console/: %d %s", code, body)
	}
	if code, body := f.get("/console/audit?since=yesterday"); code != 400 || !strings.Contains(body, "30m") {
		t.Errorf("a bad since: %d\n%s", code, body)
	}
}

// TestActionsNeedTheSessionsToken: an action without the session, without
// its token, from another origin or another site is refused and decides
// nothing; with them it decides, and the audit trail says the console did.
func TestActionsNeedTheSessionsToken(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	f.ask("apr_one", acme)
	path := "/console/approvals/apr_one/approve"

	// No session cookie yet.
	if code, _ := f.post(path, url.Values{"csrf": {"x"}}); code != 403 {
		t.Errorf("no session: %d", code)
	}
	token := f.token("/console/approvals")
	for name, c := range map[string]struct {
		form    url.Values
		headers []string
	}{
		"no token":      {url.Values{}, nil},
		"wrong token":   {url.Values{"csrf": {strings.Repeat("0", 64)}}, nil},
		"other origin":  {url.Values{"csrf": {token}}, []string{"Origin", "http://127.0.0.1:1"}},
		"null origin":   {url.Values{"csrf": {token}}, []string{"Origin", "null"}},
		"another site":  {url.Values{"csrf": {token}}, []string{"Sec-Fetch-Site", "cross-site"}},
		"same site too": {url.Values{"csrf": {token}}, []string{"Sec-Fetch-Site", "same-site"}},
	} {
		if code, body := f.post(path, c.form, c.headers...); code != 403 {
			t.Errorf("%s: %d\n%s", name, code, body)
		}
	}
	if s := f.status("apr_one"); s != store.ApprovalPending {
		t.Fatalf("after refused posts the request is %s", s)
	}
	code, loc := f.post(path, url.Values{"csrf": {token}, "note": {"fine"}}, "Origin", f.srv.URL, "Sec-Fetch-Site", "same-origin")
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/approvals?done=") {
		t.Fatalf("approve: %d %s", code, loc)
	}
	if s := f.status("apr_one"); s != store.ApprovalGranted {
		t.Errorf("after approve the request is %s", s)
	}
	// The page it leads to says what was done; a link that carries a text
	// of its own shows none.
	if _, body := f.get(loc); !strings.Contains(body, `class="flash"`) || !strings.Contains(body, "apr_one") {
		t.Errorf("the page after approving shows no banner:\n%s", body)
	}
	if _, body := f.get("/console/approvals?done=" + url.QueryEscape("Session expired: run airlock approvals approve --remember apr_x")); strings.Contains(body, "Session expired") {
		t.Errorf("a banner of a link's own text is shown:\n%s", body)
	}
	events, err := f.st.Audit().Events(context.Background(), time.Now().Add(-time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range events {
		found = found || ev.Event == store.EventApprovalGranted && ev.Fields["source"] == "console" && ev.Fields["by"] == "ada"
	}
	if !found {
		t.Errorf("no approval_granted event from the console by ada: %+v", events)
	}
	// Deciding again is a conflict, said as such.
	if code, body := f.post("/console/approvals/apr_one/deny", url.Values{"csrf": {token}}); code != 409 {
		t.Errorf("deny after approve: %d\n%s", code, body)
	}
}

// TestPrincipals: a console acting for acme/ada shows and decides acme's
// requests only; another tenant's reads as unknown and stays pending; an
// operator's console shows and decides both.
func TestPrincipals(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	f.ask("apr_acme", acme)
	f.ask("apr_globex", globex)
	_, body := f.get("/console/approvals")
	if !strings.Contains(body, "apr_acme") || strings.Contains(body, "apr_globex") {
		t.Errorf("acme's approvals page:\n%s", body)
	}
	token := f.token("/console/approvals")
	for _, action := range []string{"approve", "always", "deny"} {
		if code, body := f.post("/console/approvals/apr_globex/"+action, url.Values{"csrf": {token}}); code != 404 || strings.Contains(body, "globex") {
			t.Errorf("acme %ss globex's request: %d\n%s", action, code, body)
		}
	}
	if s := f.status("apr_globex"); s != store.ApprovalPending {
		t.Errorf("globex's request after acme's attempts: %s", s)
	}

	op := serveOn(t, f.st, airlock.Actor{Principal: acme, By: "root", AllPrincipals: true})
	_, body = op.get("/console/approvals")
	if !strings.Contains(body, "apr_acme") || !strings.Contains(body, "apr_globex") || !strings.Contains(body, "every tenant and user") {
		t.Errorf("the operator's approvals page:\n%s", body)
	}
	token = op.token("/console/approvals")
	if code, loc := op.post("/console/approvals/apr_globex/always", url.Values{"csrf": {token}}); code != http.StatusSeeOther {
		t.Errorf("the operator approves always: %d %s", code, loc)
	}
	rules, err := f.st.Approvals().Rules(context.Background(), store.RuleFilter{})
	if err != nil || len(rules) != 1 || rules[0].Tenant != "globex" {
		t.Errorf("rules after approve always: %+v, %v", rules, err)
	}
}

// TestRecovery: an unknown outcome is shown with its arguments and
// resolved; an outcome that is neither is refused; another tenant's
// record is not shown or resolved.
func TestRecovery(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	ctx := context.Background()
	for id, who := range map[string]airlock.Principal{"rec_acme": acme, "rec_globex": globex} {
		in := store.Intent{ID: id, Server: "w", Tool: "w__write", RemoteTool: "write", ArgsHash: "sha256:x",
			Arguments: json.RawMessage(`{"path":"notes.txt"}`), Snapshot: "s", Effect: "write", Tenant: who.Tenant, User: who.User}
		if err := f.st.Journal().Begin(ctx, in); err != nil {
			t.Fatal(err)
		}
		if err := f.st.Journal().End(ctx, id, store.OutcomeUnknown, "the server did not answer within 1s"); err != nil {
			t.Fatal(err)
		}
	}
	_, body := f.get("/console/recovery")
	if !strings.Contains(body, "rec_acme") || !strings.Contains(body, "notes.txt") || strings.Contains(body, "rec_globex") {
		t.Errorf("acme's recovery page:\n%s", body)
	}
	token := f.token("/console/recovery")
	if code, _ := f.post("/console/recovery/rec_acme/resolve", url.Values{"csrf": {token}, "outcome": {"maybe"}}); code != 400 {
		t.Errorf("outcome maybe: %d", code)
	}
	if code, _ := f.post("/console/recovery/rec_globex/resolve", url.Values{"csrf": {token}, "outcome": {"applied"}}); code != 404 {
		t.Errorf("acme resolves globex's record: %d", code)
	}
	if code, loc := f.post("/console/recovery/rec_acme/resolve", url.Values{"csrf": {token}, "outcome": {"applied"}, "note": {"saw it"}}); code != http.StatusSeeOther {
		t.Errorf("resolve: %d %s", code, loc)
	}
	for id, want := range map[string]bool{"rec_acme": true, "rec_globex": false} {
		if rec, err := f.st.Journal().Get(ctx, id); err != nil || rec.Resolved != want {
			t.Errorf("%s: resolved %v, %v; want %v", id, rec.Resolved, err, want)
		}
	}
}

// TestAudit: the audit page shows the viewer's own events and those that
// name nobody, filtered as asked; an operator sees everyone's.
func TestAudit(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	ctx := context.Background()
	err := f.st.Audit().Append(ctx,
		store.Event{Event: "result", Server: "w", Tool: "w__greet", Class: "ok", Fields: map[string]any{"tenant": "acme", "user": "ada", "call": "c_acme"}},
		store.Event{Event: "result", Server: "w", Tool: "w__list", Class: "ok", Fields: map[string]any{"tenant": "acme", "user": "ada", "call": "c_list"}},
		store.Event{Event: "result", Server: "w", Tool: "w__greet", Class: "denied", Fields: map[string]any{"tenant": "globex", "user": "eve", "call": "c_globex"}},
		store.Event{Event: "server_ready", Server: "w"},
		// An event of a call that names nobody (as a call's decision
		// once did): whose it is cannot be told.
		store.Event{Event: "decision", Server: "w", Tool: "w__greet", Fields: map[string]any{"call": "c_nobody"}})
	if err != nil {
		t.Fatal(err)
	}
	_, body := f.get("/console/audit")
	if !strings.Contains(body, "c_acme") || !strings.Contains(body, "server_ready") || strings.Contains(body, "c_globex") || strings.Contains(body, "c_nobody") {
		t.Errorf("acme's audit page:\n%s", body)
	}
	_, body = f.get("/console/audit?tool=w__greet")
	if !strings.Contains(body, "c_acme") || strings.Contains(body, "c_list") {
		t.Errorf("acme's audit page for w__greet:\n%s", body)
	}
	op := serveOn(t, f.st, airlock.Actor{Principal: acme, By: "root", AllPrincipals: true})
	if _, body = op.get("/console/audit?class=denied"); !strings.Contains(body, "c_globex") || strings.Contains(body, "c_acme") {
		t.Errorf("the operator's audit page of denials:\n%s", body)
	}
	if _, body = op.get("/console/audit?tenant=globex"); !strings.Contains(body, "c_globex") || strings.Contains(body, "c_acme") {
		t.Errorf("the operator's audit page for globex:\n%s", body)
	}
	if _, body = f.get("/console/audit/verify"); !strings.Contains(body, "The audit trail is intact: 5 events") {
		t.Errorf("verify:\n%s", body)
	}
}

// TestEventsStream: a page's stream says so when what the page showed
// changes, even when the change came before the stream opened, and says
// nothing of another principal's requests.
func TestEventsStream(t *testing.T) {
	f := newFixture(t, airlock.Actor{Principal: acme, By: "ada"})
	_, body := f.get("/console/approvals")
	m := regexp.MustCompile(`sse-connect="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the approvals page opens no stream:\n%s", body)
	}
	stream := strings.ReplaceAll(m[1], "&amp;", "&")
	f.ask("apr_other", globex)
	f.ask("apr_new", acme) // after the page, before its stream

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+stream, nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("the stream's type: %s", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "event: ") {
				return l
			}
		}
		t.Fatalf("the stream ended: %v", lines.Err())
		return ""
	}
	if got := next(); got != "event: approvals" {
		t.Errorf("first event %q", got)
	}
	// Another principal's request is no news to acme; acme's own is.
	f.ask("apr_other2", globex)
	time.Sleep(300 * time.Millisecond)
	f.ask("apr_newer", acme)
	if got := next(); got != "event: approvals" {
		t.Errorf("second event %q", got)
	}
}

// TestServersStartWhenShown: a console given a way to start its host
// starts it once, when the servers page is first shown, and not for any
// other page; until it runs, the page says the servers are starting.
func TestServersStartWhenShown(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Parse([]byte("servers:\n  - {id: w, command: \"true\", allowed_tools: [greet]}\n"), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var starts atomic.Int32
	c, err := console.New(console.Options{Store: st, Config: cfg, StateDir: t.TempDir(), Poll: 50 * time.Millisecond,
		Actor: airlock.Actor{Principal: airlock.Principal{Tenant: "acme", User: "ada"}, By: "ada"}, StartHost: func() { starts.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	get := func(path string, headers ...string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	for _, page := range []string{"/console/approvals", "/console/inputs", "/console/recovery", "/console/tasks", "/console/runs", "/console/audit"} {
		get(page)
	}
	if n := starts.Load(); n != 0 {
		t.Fatalf("the host was started %d times before the servers page was shown", n)
	}
	// Another site's page (an <img>, a script, an event stream, a
	// navigation it makes; another loopback port is same-site) starts
	// nothing.
	for _, site := range []string{"cross-site", "same-site"} {
		get("/console/servers", "Sec-Fetch-Site", site, "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image")
		get("/console/servers", "Sec-Fetch-Site", site, "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document")
	}
	if n := starts.Load(); n != 0 {
		t.Fatalf("another site's requests for the servers page started the host %d times", n)
	}
	if body := get("/console/servers"); !strings.Contains(body, "The servers are starting") {
		t.Errorf("the servers page before its host runs:\n%s", body)
	}
	get("/console/servers")
	if n := starts.Load(); n != 1 {
		t.Errorf("the host was started %d times, want once", n)
	}
}

package airlock_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/metrics"
	"github.com/airlockhq/airlock/store"
)

// oauthWorld is an authorization server (zitadel's OpenID provider), a
// protected MCP server that trusts it, and a host configured for both.
type oauthWorld struct {
	as       *oauthtest.Server
	rs       *oauthtest.ResourceServer
	cfg      *config.Config
	opens    atomic.Int64
	consents atomic.Int64
	consent  atomic.Bool
	logs     *testenv.Buffer
	metrics  *metrics.Metrics // counts the host's token refreshes
}

// freeRedirect returns a loopback redirect URI on a port that was free.
func freeRedirect(t *testing.T) string { return testenv.RedirectURI(t) }

func newOAuthWorld(t *testing.T, stateful bool) *oauthWorld {
	t.Helper()
	return newOAuthWorldWith(t, &oauthtest.ResourceOptions{Stateful: stateful})
}

// newOAuthWorldWith is newOAuthWorld with a resource server of ro.
func newOAuthWorldWith(t *testing.T, ro *oauthtest.ResourceOptions) *oauthWorld {
	t.Helper()
	// The default store's key comes from the environment here, so that the
	// test never writes a key file into the real user's config directory.
	t.Setenv("AIRLOCK_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	redirect := freeRedirect(t)
	w := &oauthWorld{logs: &testenv.Buffer{}}
	w.as = oauthtest.New(t, &oauthtest.Options{RedirectURIs: []string{redirect}, Tenant: "acme"})
	w.metrics = metrics.New()
	w.rs = oauthtest.NewResourceServer(t, w.as, ro)
	srv := remote("prot", w.rs.URL+"/mcp")
	srv.Resource = w.rs.URL
	srv.Scopes = []string{oauthtest.ScopeRead}
	srv.OAuth = &config.OAuth{ClientID: "airlock", RedirectURI: redirect}
	w.cfg = devConfig(t, srv)
	classify(w.cfg, "prot", "read", "read")
	classify(w.cfg, "prot", "write", "write")
	return w
}

// options are the host's options: the person in front of the browser logs
// in as alice at the authorization server, and agrees to a step-up when
// w.consent is set.
func (w *oauthWorld) options() *airlock.Options {
	return &airlock.Options{
		StopGrace: 500 * time.Millisecond,
		Metrics:   w.metrics,
		Principal: airlock.Principal{Tenant: "acme", User: "alice"},
		Logger:    slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Auth: airlock.AuthOptions{
			Open: func(ctx context.Context, authURL string) error {
				w.opens.Add(1)
				cb, err := w.as.Authorize(ctx, authURL, oauthtest.User, oauthtest.Password)
				if err != nil {
					return err
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				return resp.Body.Close()
			},
			Consent: func(ctx context.Context, req *oauth.StepUp) (bool, error) {
				w.consents.Add(1)
				return w.consent.Load(), nil
			},
		},
	}
}

func (w *oauthWorld) open(t *testing.T) *airlock.Host {
	t.Helper()
	h, err := airlock.Open(context.Background(), w.cfg, w.options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestRemoteOAuth(t *testing.T) {
	for _, stateful := range []bool{false, true} {
		name := map[bool]string{false: "stateless", true: "stateful"}[stateful]
		t.Run(name, func(t *testing.T) { testRemoteOAuth(t, stateful) })
	}
}

func testRemoteOAuth(t *testing.T, stateful bool) {
	w := newOAuthWorld(t, stateful)
	h := w.open(t)
	ctx := context.Background()

	// Nobody has logged in: the server needs a login, and a call says so
	// without reaching the server's tools.
	st := h.Servers()[0]
	if st.Status != airlock.StatusAuthRequired || !strings.Contains(st.Err.Msg, "airlock auth login prot") {
		t.Fatalf("server before login = %+v (%v), want auth_required naming the login command", st, st.Err)
	}
	creds := h.Credentials()
	if got, _ := creds.Status(ctx, "prot"); got == nil || got.LoggedIn {
		t.Fatalf("status before login = %+v, want not logged in", got)
	}
	if _, err := creds.Status(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "servers that use OAuth: prot") {
		t.Errorf("status of an unknown server: %v, want an error that names the OAuth servers", err)
	}

	// Log in; the next turn and call reach the server.
	got, err := creds.Login(ctx, "prot")
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if !got.LoggedIn || got.Issuer != w.as.URL || got.Registration != "preregistered" {
		t.Errorf("status after login = %+v", got)
	}
	turn := h.BeginTurn(ctx)
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("server after login = %+v (%v), want ready", st, st.Err)
	}
	r := h.Call(ctx, turn, airlock.Call{Name: "prot__read", Arguments: json.RawMessage(`{}`)})
	wantStatus(t, r, airlock.OK)
	if r.Content != "read ok" {
		t.Errorf("content = %q", r.Content)
	}

	// The authorization server revokes every token: the server answers
	// 401, the host refreshes once and the call goes through.
	w.as.RevokeAccessTokens()
	before := w.as.Stats().Refreshes
	wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK)
	if n := w.as.Stats().Refreshes - before; n != 1 {
		t.Errorf("%d refreshes after revocation, want 1", n)
	}

	// Ten calls find the token revoked at once: one refresh serves them
	// all, and no rotated refresh token is ever spent twice.
	w.as.RevokeAccessTokens()
	before = w.as.Stats().Refreshes
	var wg sync.WaitGroup
	results := make([]*airlock.Result, 10)
	snap := h.Snapshot()
	for i := range results {
		wg.Go(func() {
			results[i] = h.Call(ctx, snap, airlock.Call{Name: "prot__read", Arguments: json.RawMessage(`{}`)})
		})
	}
	wg.Wait()
	for _, r := range results {
		wantStatus(t, r, airlock.OK)
	}
	stats := w.as.Stats()
	if n := stats.Refreshes - before; n != 1 || stats.ReusedRefreshTokens != 0 {
		t.Errorf("refreshes = %d, reused refresh tokens = %d; want 1 and 0", n, stats.ReusedRefreshTokens)
	}
	// The metrics count the two refreshes, none failed.
	if got := metricValue(t, w.metrics, "airlock_token_refreshes_total", map[string]string{"server": "prot", "result": "ok"}); got != 2 {
		t.Errorf("airlock_token_refreshes_total{result=ok} = %v, want 2", got)
	}
	if got := metricValue(t, w.metrics, "airlock_token_refreshes_total", map[string]string{"server": "prot", "result": "failed"}); got != 0 {
		t.Errorf("airlock_token_refreshes_total{result=failed} = %v, want 0", got)
	}

	// "write" needs a scope the token lacks. Without the person's consent
	// the call is auth_required and names the scopes; the tool never runs.
	r = call(t, h, "prot__write", `{}`)
	wantStatus(t, r, airlock.AuthRequired)
	if msg := r.Err.Msg; !strings.Contains(msg, oauthtest.ScopeWrite) || !strings.Contains(msg, "airlock auth login prot") || r.Content != "" {
		t.Errorf("auth_required = %q (model sees %q), want the scope and the login command, for the person only", msg, r.Content)
	}
	if n := w.rs.Calls("write"); n != 0 {
		t.Errorf("write ran %d times without its scope", n)
	}
	// With consent, the host logs in for the union of the scopes, once,
	// and the call goes through.
	w.consent.Store(true)
	opens := w.opens.Load()
	wantStatus(t, call(t, h, "prot__write", `{}`), airlock.OK)
	if n := w.opens.Load() - opens; n != 1 {
		t.Errorf("%d logins for the step-up, want 1", n)
	}
	if n := w.rs.Calls("write"); n != 1 {
		t.Errorf("write ran %d times, want 1", n)
	}
	if st, _ := creds.Status(ctx, "prot"); !strings.Contains(strings.Join(st.Scopes, " "), oauthtest.ScopeWrite) {
		t.Errorf("scopes after step-up = %v", st.Scopes)
	}

	h.Close()

	// No token the server ever accepted is in any file the host wrote,
	// nor in its log (the credential store holds them sealed).
	seen := w.rs.Seen()
	if len(seen) == 0 {
		t.Fatal("the server accepted no token")
	}
	scanForCanaries(t, h.StateDir(), w.logs.String(), seen)
	if sealed, _ := os.ReadDir(filepath.Join(h.StateDir(), "credentials")); len(sealed) == 0 {
		t.Error("the credential store is empty: the scan saw no sealed token")
	}
}

// scanForCanaries fails if any of secrets appears in a file under dir or
// in extra.
// TestToolPrefixWaitingForLogin: a call to a tool of a server that lists
// its tools only after a login is told so when its name starts with that
// server's tool_prefix, and is an unknown tool otherwise.
func TestToolPrefixWaitingForLogin(t *testing.T) {
	w := newOAuthWorld(t, false)
	prefix := "p-"
	w.cfg.Servers[0].ToolPrefix = &prefix
	h := w.open(t)
	r := call(t, h, "p-read", `{}`)
	wantStatus(t, r, airlock.AuthRequired)
	if !strings.Contains(r.Err.Msg, "server prot lists its tools only after a login: run airlock auth login prot") {
		t.Errorf("p-read before login: %q, want the login the server waits for", r.Err.Msg)
	}
	wantStatus(t, call(t, h, "prot__read", `{}`), airlock.UnknownTool)

	// A login made elsewhere (airlock auth login, in another process) is
	// taken up at the next call, which says the tools come with the next
	// turn; they do.
	if _, err := airlock.OpenCredentials(w.cfg, w.options()).Login(context.Background(), "prot"); err != nil {
		t.Fatal(err)
	}
	r = call(t, h, "p-read", `{}`)
	wantStatus(t, r, airlock.ConnectionError)
	if !strings.Contains(r.Err.Msg, "server prot is logged in now, and lists its tools from the next turn on") {
		t.Errorf("p-read after a login elsewhere: %q", r.Err.Msg)
	}
	snap := h.BeginTurn(context.Background())
	if r := h.Call(context.Background(), snap, airlock.Call{Name: "p-read", Arguments: json.RawMessage(`{}`)}); r.Status != airlock.OK {
		t.Errorf("p-read in the next turn: %s (%v)", r.Status, r.Err)
	}
}

func scanForCanaries(t *testing.T, dir, extra string, secrets []string) {
	t.Helper()
	if testenv.NoFileHolds(t, dir, secrets...) == 0 {
		t.Errorf("found no file under %s to scan", dir)
	}
	for _, s := range secrets {
		if strings.Contains(extra, s) {
			t.Error("the log contains a token")
		}
	}
}

func TestRemoteOAuthLoginNeedsNoRunningHost(t *testing.T) {
	w := newOAuthWorld(t, false)
	creds := airlock.OpenCredentials(w.cfg, w.options())
	if ids := creds.Servers(); len(ids) != 1 || ids[0] != "prot" {
		t.Fatalf("OAuth servers = %v", ids)
	}
	if _, err := creds.Login(context.Background(), "prot"); err != nil {
		t.Fatal(err)
	}
	// A host opened afterwards with the same state directory finds the
	// login and is ready at once.
	h := w.open(t)
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v (%v), want ready", st, st.Err)
	}
	wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK)

	// After a logout, the next call that needs a new token is
	// auth_required: the stored refresh token is gone too.
	if err := creds.Logout(context.Background(), "prot"); err != nil {
		t.Fatal(err)
	}
	if st, _ := creds.Status(context.Background(), "prot"); st.LoggedIn {
		t.Error("still logged in after logout")
	}
	w.as.RevokeAccessTokens()
	r := call(t, h, "prot__read", `{}`)
	wantStatus(t, r, airlock.AuthRequired)
	if !strings.Contains(r.Err.Msg, "airlock auth login prot") {
		t.Errorf("after logout: %q", r.Err.Msg)
	}

	// Another user of the same tenant has no login: partitions are apart.
	opts := w.options()
	opts.Principal.User = "bob"
	opts.StateDir = h.StateDir()
	other := airlock.OpenCredentials(w.cfg, opts)
	if st, err := other.Status(context.Background(), "prot"); err != nil || st.LoggedIn {
		t.Errorf("bob's status = %+v, %v; want not logged in", st, err)
	}
	if err := other.Logout(context.Background(), "fs"); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Errorf("logout of an unknown server: %v", err)
	}
}

// partitionWorld is a stateful oauthWorld (its sessions tell connections
// apart) with a host in a git repository, logged in for its own principal,
// alice.
func partitionWorld(t *testing.T) (w *oauthWorld, repo string, h *airlock.Host) {
	t.Helper()
	w = newOAuthWorld(t, true)
	repo = gitRepo(t)
	w.cfg.Dir = repo
	h = w.open(t)
	if _, err := h.Credentials().Login(context.Background(), "prot"); err != nil {
		t.Fatal(err)
	}
	return w, repo, h
}

// TestPartitionedConnections runs tasks that act for another user of the
// same host: their calls to the OAuth server go out on a connection of
// their own, with their own token, shared by the tasks of that user and
// closed with the last of them.
func TestPartitionedConnections(t *testing.T) {
	w, repo, h := partitionWorld(t)
	ctx := context.Background()
	h.BeginTurn(ctx)
	wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK) // alice, the host's principal

	bob := airlock.Principal{Tenant: "acme", User: "bob"}
	openAs := func(id string) *airlock.Task {
		task, err := h.OpenTask(ctx, id, &airlock.TaskOptions{Repo: repo, Principal: bob})
		if err != nil {
			t.Fatalf("OpenTask(%s): %v", id, err)
		}
		t.Cleanup(func() { task.Release() })
		return task
	}
	callIn := func(task *airlock.Task) *airlock.Result {
		return h.Call(ctx, task.Snapshot(), airlock.Call{Name: "prot__read", Arguments: json.RawMessage(`{}`)})
	}
	t1 := openAs("t1")
	if got := t1.Principal(); got != bob {
		t.Fatalf("task principal = %+v", got)
	}

	// Bob has not logged in: alice's login does not serve him.
	r := callIn(t1)
	wantStatus(t, r, airlock.AuthRequired)
	seen := len(w.rs.Seen())
	opts := w.options()
	opts.Principal, opts.StateDir = bob, h.StateDir()
	if _, err := airlock.OpenCredentials(w.cfg, opts).Login(ctx, "prot"); err != nil {
		t.Fatal(err)
	}

	// (The test authorization server knows one person, who logs in both
	// times; the partitions are apart all the same.)
	wantStatus(t, callIn(t1), airlock.OK)
	t2 := openAs("t2")
	wantStatus(t, callIn(t2), airlock.OK)
	t1.Release()
	wantStatus(t, callIn(t2), airlock.OK) // t1 leaving did not close t2's connection
	t2.Release()
	t3 := openAs("t3")
	wantStatus(t, callIn(t3), airlock.OK) // a new connection, after the last lease went
	wantStatus(t, call(t, h, "prot__read", `{}`), airlock.OK)

	tokens := w.rs.Seen()[seen:]
	aliceTok := w.rs.Seen()[0]
	for _, tok := range tokens[:len(tokens)-1] {
		if tok == aliceTok {
			t.Fatal("a call made for bob carried alice's token")
		}
	}
	h.Close()

	// Session fingerprints: alice's calls on the host's connection, bob's
	// first three (t1, t2, t2) on one shared connection, t3's on another.
	var sessions []string
	for _, e := range auditEvents(t, h, store.EventResult) {
		if e.Class == string(airlock.OK) {
			s, _ := e.Fields["session"].(string)
			sessions = append(sessions, s)
		}
	}
	if len(sessions) != 6 {
		t.Fatalf("%d ok results, want 6", len(sessions))
	}
	alice, b1, b2 := sessions[0], sessions[1], sessions[4]
	want := []string{alice, b1, b1, b1, b2, alice}
	if alice == "" || b1 == alice || b2 == b1 || b2 == alice || !slices.Equal(sessions, want) {
		t.Errorf("sessions = %v, want alice, bob ×3 on one connection, bob on a new one, alice", sessions)
	}
}

func TestPrincipalNamesAreChecked(t *testing.T) {
	cfg := newConfig(t)
	if _, err := airlock.Open(context.Background(), cfg, &airlock.Options{Principal: airlock.Principal{Tenant: "acme corp"}}); err == nil || !strings.Contains(err.Error(), `tenant "acme corp"`) {
		t.Errorf("Open with a bad tenant: %v", err)
	}
	repo := gitRepo(t)
	cfg.Dir = repo
	h := open(t, cfg)
	_, err := h.OpenTask(context.Background(), "t1", &airlock.TaskOptions{Repo: repo, Principal: airlock.Principal{User: "bob/../x"}})
	if err == nil || !strings.Contains(err.Error(), `user "bob/../x"`) {
		t.Errorf("OpenTask with a bad user: %v", err)
	}
	if tasks, _ := airlock.ListTasks(h.StateDir()); len(tasks) != 0 {
		t.Errorf("a refused task was left: %+v", tasks)
	}
}

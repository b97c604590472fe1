package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestAuthCommands logs in through the real binary against a real
// authorization server (zitadel's OpenID provider) and a protected MCP
// server on loopback, the way a person would: the URL printed on stderr is
// opened "in a browser" (played by the test), and the binary's loopback
// redirect receives the answer.
func TestAuthCommands(t *testing.T) {
	dir, as, rs := oauthWorld(t)

	// Before any login.
	r := runCLI(t, dir, "", "auth", "status", "--json").want(t, exitAuth)
	if s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any); s["server"] != "prot" || s["logged_in"] != false || s["tenant"] != "acme" || s["user"] != "alice" {
		t.Errorf("status before login = %v", s)
	}
	r = runCLI(t, dir, "", "auth", "status").want(t, exitAuth)
	if !strings.Contains(r.stdout, "not logged in") || !strings.Contains(r.stdout, "run airlock auth login prot") {
		t.Errorf("status text = %q", r.stdout)
	}
	r = runCLI(t, dir, "", "tools", "--json").want(t, exitAuth)
	if s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any); s["status"] != "auth_required" || !strings.Contains(s["error"].(string), "airlock auth login prot") {
		t.Errorf("tools before login: server = %v", s)
	}
	r = runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitAuth)
	if out := decode(t, r.stdout); out["status"] != "auth_required" {
		t.Errorf("call before login = %v", out)
	}
	if n := rs.Calls("read"); n != 0 {
		t.Fatalf("the tool ran %d times without a login", n)
	}

	// The login: the URL goes to stderr, the person logs in, the binary's
	// redirect listener gets the code.
	login(t, dir, as)

	r = runCLI(t, dir, "", "auth", "status", "--json").want(t, exitOK)
	s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any)
	if s["logged_in"] != true || s["issuer"] != as.URL || !strings.Contains(fmt.Sprint(s["scopes"]), oauthtest.ScopeRead) || s["refreshable"] != true || s["expiry"] == nil {
		t.Errorf("status after login = %v", s)
	}
	r = runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitOK)
	if out := decode(t, r.stdout); out["content"] != "read ok" {
		t.Errorf("call after login = %v", out)
	}
	outputs := r.stdout + r.stderr
	r = runCLI(t, dir, "", "tools").want(t, exitOK)
	outputs += r.stdout + r.stderr

	// Logging out deletes the tokens: the next call needs a login again.
	r = runCLI(t, dir, "", "auth", "logout", "prot").want(t, exitOK)
	if !strings.Contains(r.stdout, "logged out of prot") {
		t.Errorf("logout said %q", r.stdout)
	}
	runCLI(t, dir, "", "auth", "status", "--json").want(t, exitAuth)
	runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitAuth)

	// No token the server accepted is in any output or any file the
	// binary wrote.
	tokens := rs.Seen()
	if len(tokens) == 0 {
		t.Fatal("the server accepted no token")
	}
	testenv.NoFileHolds(t, dir, tokens...)
	for _, tok := range tokens {
		if strings.Contains(outputs, tok) {
			t.Error("the command's output contains a token")
		}
	}
}

// login runs `airlock auth login prot --no-browser` and plays the person:
// it reads the authorization URL from stderr, logs in at as and lets the
// "browser" follow the redirect to the binary's loopback listener.
func login(t *testing.T, dir string, as *oauthtest.Server) { loginAs(t, dir, as, "acme/alice") }

// loginAs is login with more arguments (--tenant, --user), for the
// principal who ("TENANT/USER").
func loginAs(t *testing.T, dir string, as *oauthtest.Server, who string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, airlockBin, append([]string{"auth", "login", "prot", "--no-browser"}, args...)...)
	cmd.Dir = dir
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	authURL := ""
	sc := bufio.NewScanner(stderr)
	for authURL == "" && sc.Scan() {
		line := sc.Text()
		printed.WriteString(line + "\n")
		if u := strings.TrimSpace(line); strings.HasPrefix(u, as.URL+"/") {
			authURL = u
		}
	}
	if authURL == "" {
		cmd.Wait()
		t.Fatalf("no authorization URL on stderr:\n%s", printed.String())
	}
	if !strings.Contains(printed.String(), "as "+who) {
		t.Errorf("stderr does not say who logs in:\n%s", printed.String())
	}
	cb, err := as.Authorize(ctx, authURL, oauthtest.User, oauthtest.Password)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the callback page answered %s: %s", resp.Status, page)
	}
	io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth login: %v\nstdout: %s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "logged in to prot") {
		t.Errorf("auth login said %q", stdout.String())
	}
}

// TestAuthForAnotherUser: an operator logs in, checks and logs out for a
// tenant and user other than tenancy's (a gateway's user, whose calls reach
// the server with this login); tenancy's own partition is another.
func TestAuthForAnotherUser(t *testing.T) {
	dir, as, rs := oauthWorld(t)
	bob := []string{"--tenant", "globex", "--user", "bob"}
	loginAs(t, dir, as, "globex/bob", bob...)

	r := runCLI(t, dir, "", append([]string{"auth", "status", "--json"}, bob...)...).want(t, exitOK)
	if s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any); s["logged_in"] != true || s["tenant"] != "globex" || s["user"] != "bob" {
		t.Errorf("bob's status = %v", s)
	}
	r = runCLI(t, dir, "", "auth", "status", "--json").want(t, exitAuth)
	if s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any); s["logged_in"] != false || s["user"] != "alice" {
		t.Errorf("alice's status after bob's login = %v", s)
	}
	r = runCLI(t, dir, "", "auth", "status", "--user", "bob").want(t, exitAuth)
	if !strings.Contains(r.stdout, "tenant acme, user bob") {
		t.Errorf("acme/bob's status = %q, want tenancy's tenant with --user alone", r.stdout)
	}
	runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitAuth)
	if n := rs.Calls("read"); n != 0 {
		t.Errorf("the tool ran %d times for alice on bob's login", n)
	}

	runCLI(t, dir, "", append([]string{"auth", "logout", "prot"}, bob...)...).want(t, exitOK)
	runCLI(t, dir, "", append([]string{"auth", "status", "--json"}, bob...)...).want(t, exitAuth)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"auth", "login", "prot", "--user", "bob smith"}, `--user: user "bob smith": use 1 to 128 letters, digits, ., _, @, + or -`},
		{[]string{"auth", "status", "--tenant", "../x"}, `--tenant: tenant "../x": use 1 to 128`},
		{[]string{"auth", "logout", "prot", "--tenant", ""}, ""},
	} {
		if tt.want == "" {
			runCLI(t, dir, "", tt.args...).want(t, exitOK)
			continue
		}
		wantUsage(t, dir, tt.want, tt.args...)
	}
}

// fsWorkdir is a workdir whose airlock.yaml configures one workspace
// server, fs, with every tool allowed and no OAuth.
func fsWorkdir(t *testing.T) string {
	t.Helper()
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), `servers:
  - id: fs
    command: airlock
    args: [server, workspace]
    allowed_tools: ["*"]
`)
	return dir
}

func TestAuthUsage(t *testing.T) {
	dir := fsWorkdir(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"auth"}, "auth needs a subcommand"},
		{[]string{"auth", "frob"}, `unknown auth subcommand "frob"`},
		{[]string{"auth", "login"}, "exactly one server id"},
		{[]string{"auth", "logout", "a", "b"}, "exactly one server id"},
		{[]string{"auth", "login", "nope"}, `there is no server "nope"`},
		{[]string{"auth", "login", "fs"}, "server fs does not use OAuth"},
		{[]string{"auth", "status", "fs"}, "server fs does not use OAuth"},
	} {
		wantUsage(t, dir, tt.want, tt.args...)
	}
	r := runCLI(t, dir, "", "auth", "status").want(t, exitOK)
	if !strings.Contains(r.stdout, "no server in the configuration uses OAuth") {
		t.Errorf("status without OAuth servers = %q", r.stdout)
	}
}

// TestStepUpConsentOnTerminal is the question the shell asks on a terminal
// when a server wants more scopes in the middle of a call, answered on a
// real pseudo-terminal once the question shows.
func TestStepUpConsentOnTerminal(t *testing.T) {
	stepUp := &oauth.StepUp{Server: "issues", Granted: []string{"mcp:read"},
		Added: []string{"mcp:write"}, Requested: []string{"mcp:read", "mcp:write"}}
	for _, tt := range []struct {
		answer string
		want   bool
	}{{"y\r", true}, {"YES\r", true}, {"n\r", false}, {"\r", false}, {"\x04", false}} { // Ctrl-D: the input ended
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		screen := &testenv.Buffer{}
		go io.Copy(screen, ptmx)
		a := &terminalApprover{out: tty, ed: newLineEditor(tty, tty)}
		type answer struct {
			ok  bool
			err error
		}
		answered := make(chan answer, 1)
		go func() {
			ok, err := a.consent(context.Background(), stepUp)
			answered <- answer{ok, err}
		}()
		q := awaitScreen(t, screen, "for mcp:read mcp:write? [y/N] ")
		ptmx.WriteString(tt.answer)
		select {
		case got := <-answered:
			if got.err != nil || got.ok != tt.want {
				t.Errorf("answer %q: consent = %v, %v; want %v", tt.answer, got.ok, got.err, tt.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("answer %q: consent did not return", tt.answer)
		}
		if !strings.Contains(q, "server issues asks for more scopes: mcp:write (granted now: mcp:read)") {
			t.Errorf("question = %q", q)
		}
		tty.Close()
		ptmx.Close()
	}
	// Interrupted while asking: no consent.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	a := &terminalApprover{out: io.Discard, ed: newLineEditor(tty, io.Discard)}
	if ok, err := a.consent(ctx, stepUp); ok || err == nil {
		t.Errorf("cancelled consent = %v, %v", ok, err)
	}
}

// awaitScreen waits until a terminal's screen shows want, and returns
// what it showed.
func awaitScreen(t *testing.T, screen *testenv.Buffer, want string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := screen.String()
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q; it showed %q", want, got)
		}
	}
}

// oauthWorld is a real authorization server (zitadel's OpenID provider),
// a protected MCP server on loopback, and a directory whose airlock.yaml
// names that server "prot", for the tenant acme and the user alice.
func oauthWorld(t *testing.T) (dir string, as *oauthtest.Server, rs *oauthtest.ResourceServer) {
	t.Helper()
	// The store's key comes from the environment, so that no key file is
	// written into the real user's configuration directory.
	t.Setenv("AIRLOCK_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	redirect := testenv.RedirectURI(t)
	as = oauthtest.New(t, &oauthtest.Options{RedirectURIs: []string{redirect}, Tenant: "acme"})
	rs = oauthtest.NewResourceServer(t, as, nil)

	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), fmt.Sprintf(`development: true
tenancy: {tenant: acme, user: alice}
servers:
  - id: prot
    transport: http
    url: %s/mcp
    resource: %s
    allowed_hosts: [127.0.0.1]
    scopes: [%s]
    oauth: {client_id: airlock, redirect_uri: "%s"}
    allowed_tools: ["*"]
policy:
  tools:
    - {server: prot, tool: read, effect: read}
`, rs.URL, rs.URL, oauthtest.ScopeRead, redirect))
	return dir, as, rs
}

// TestAuthRefreshRefused: the authorization server revokes the grant (a
// refresh is answered invalid_grant). The call that meets it ends
// auth_required saying what to run, the dead refresh token is never sent
// again by any later command, and auth status says to log in again, until
// a new login.
func TestAuthRefreshRefused(t *testing.T) {
	dir, as, rs := oauthWorld(t)
	login(t, dir, as)
	runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitOK)

	as.RevokeAccessTokens()
	as.RevokeGrants()
	for i := range 2 {
		r := runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitAuth)
		if out := decode(t, r.stdout); out["status"] != "auth_required" || !strings.Contains(r.stdout+r.stderr, "run airlock auth login prot") {
			t.Errorf("call %d after the grant was revoked: stdout %s, stderr %s", i, r.stdout, r.stderr)
		}
		r = runCLI(t, dir, "", "auth", "status", "--json").want(t, exitAuth)
		s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any)
		if s["login_again"] != true || s["logged_in"] != false || s["refreshable"] != false || s["issuer"] != as.URL {
			t.Errorf("status after the refused refresh = %v", s)
		}
		r = runCLI(t, dir, "", "auth", "status").want(t, exitAuth)
		if !strings.Contains(r.stdout, "log in again") || !strings.Contains(r.stdout, "prot: the authorization server refused the refresh token: run airlock auth login prot") {
			t.Errorf("status text = %q", r.stdout)
		}
	}
	if st := as.Stats(); st.RevokedRefreshTokens != 1 {
		t.Errorf("refreshes with the revoked refresh token = %d, want 1", st.RevokedRefreshTokens)
	}
	if n := rs.Calls("read"); n != 1 {
		t.Errorf("the tool ran %d times, want once (before the revocation)", n)
	}

	// A new login starts afresh.
	login(t, dir, as)
	r := runCLI(t, dir, "", "auth", "status", "--json").want(t, exitOK)
	if s := decode(t, r.stdout)["servers"].([]any)[0].(map[string]any); s["login_again"] != false || s["logged_in"] != true {
		t.Errorf("status after a new login = %v", s)
	}
	runCLI(t, dir, "", "call", "prot__read", "--json").want(t, exitOK)
}

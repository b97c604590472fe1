package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlockhq/airlock/agent/agenttest"
	"github.com/airlockhq/airlock/auth/oauth/oauthtest"
)

// pendingApproval returns the id of the one pending approval request that
// approvals list shows in dir (with env added), waiting for it to appear.
func pendingApproval(t *testing.T, dir string, env ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := runCLIEnv(t, dir, env, "", "approvals", "list", "--json").want(t, 0)
		var out struct {
			Approvals []struct {
				ID string `json:"id"`
			} `json:"approvals"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("approvals list --json: %v\n%s", err, r.stdout)
		}
		if len(out.Approvals) == 1 {
			return out.Approvals[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("not one approval request is pending: %s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestApprovedElsewhereReleasesTheShell: while airlock shell asks on its
// terminal, the request is approved from another process: the question
// is withdrawn, the call runs, and the next line typed at the shell is the
// shell's, not the old question's. A denial elsewhere refuses the call.
func TestApprovedElsewhereReleasesTheShell(t *testing.T) {
	dir := greetDir(t)
	p := onPTY(t, dir, "shell")
	p.expect("airlock> ")
	p.send(`call w__greet {"name":"ada"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	id := pendingApproval(t, dir)
	runCLI(t, dir, "", "approvals", "approve", id).want(t, 0)
	p.expect("answered elsewhere")
	p.expect("hello ada")
	p.expect("airlock> ")
	p.send("status\r")
	p.expect("ready")
	p.expect("airlock> ")

	p.send(`call w__greet {"name":"bob"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	id = pendingApproval(t, dir)
	runCLI(t, dir, "", "approvals", "deny", id).want(t, 0)
	got := p.expect("airlock> ")
	if !regexp.MustCompile(`denied: w__greet refused: \S+ denied approval ` + id).MatchString(got) {
		t.Errorf("a call denied elsewhere showed:\n%s", got)
	}
	p.send("\x04")
	if code, out := p.exit(); code != 0 {
		t.Errorf("Ctrl-D: exit %d, terminal:\n%s", code, out)
	}
}

// startConsole runs airlock console in dir on a free loopback port, with
// args, and returns its base URL (http://127.0.0.1:PORT).
func startConsole(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(airlockBin, append([]string{"console", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting airlock console: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("airlock console did not stop on an interrupt")
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`console at (http://127\.0\.0\.1:\d+)/console/`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("airlock console did not say where it listens")
		return ""
	}
}

// chromiumPath is Debian's Chromium, which scripts/setup-browser.sh
// installs.
const chromiumPath = "/usr/bin/chromium"

// newBrowser starts headless Chromium for the test, on a profile of its
// own, and returns the context its actions run in.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath
	if p := os.Getenv("AIRLOCK_TEST_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Chromium at %s: scripts/setup-browser.sh installs it", path)
		}
		t.Skipf("no Chromium at %s (scripts/setup-browser.sh installs it)", path)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancelRun := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelRun()
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// browse runs actions in the browser, failing the test with what went
// wrong.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	read(t, ctx, what, chromedp.Steps(steps...))
}

// read runs one action in the browser and returns its value, failing the
// test with what went wrong.
func read[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(step, a)
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("%s: %v\nthe page:\n%s", what, err, body)
	}
	return v
}

// screenshot saves the page as docs/console/NAME.png when
// AIRLOCK_CONSOLE_SCREENSHOTS names the folder to save to.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("AIRLOCK_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png := read(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// consoleDir is a project whose test server w has greet (which policy asks
// about), slow_write (allowed, which times out after a second: its
// outcome is unknown) and ask_form (allowed, which asks for a form), for
// tenancy acme or whatever CONSOLE_TENANT names.
func consoleDir(t *testing.T, secret string) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, "[greet, slow_write, ask_form]",
		envTestMark, filepath.Join(t.TempDir(), "mark"), envTestAsks, "1")+
		`    request_timeout: 1s
    secret_env: {SERVICE_TOKEN: HOST_SERVICE_TOKEN}
tenancy: {tenant: "${CONSOLE_TENANT}", user: ada}
policy:
  rules:
    - {server: w, tool: slow_write, decision: allow}
    - {server: w, tool: ask_form, decision: allow}
`)
	t.Setenv("CONSOLE_TENANT", "acme")
	t.Setenv("HOST_SERVICE_TOKEN", secret)
	return dir
}

// TestConsoleInChromium drives the console in headless Chromium as an
// operator would: a call waiting in airlock shell is approved on the
// approvals page and completes; one that arrives while the page is open
// appears without a reload and is denied; a server's form asked in the
// shell is answered on the inputs page; an unknown outcome is resolved
// on the recovery page, its arguments shown without the secret; the audit
// trail is filtered; a form posted from another origin is refused; and
// another tenant's request is shown only to an operator.
func TestConsoleInChromium(t *testing.T) {
	const secret = "s3cr3t-console-value-77"
	dir := consoleDir(t, secret)
	ctx := newBrowser(t)

	// An unknown outcome, and another tenant's approval request.
	r := runCLI(t, dir, "", "call", "w__slow_write", "--args", `{"text": "made with `+secret+`"}`).want(t, 4)
	rec := regexp.MustCompile(`airlock recovery show (rec_[0-9a-f]+)`).FindStringSubmatch(r.stderr)
	if rec == nil {
		t.Fatalf("slow_write: stderr %q names no recovery record", r.stderr)
	}
	globex := []string{"CONSOLE_TENANT=globex"}
	runCLIEnv(t, dir, globex, "", "call", "w__greet", "--args", `{"name":"eve"}`).want(t, 5)
	otherID := pendingApproval(t, dir, globex...)

	base := startConsole(t, dir)
	p := onPTY(t, dir, "shell")
	p.expect("airlock> ")
	p.send(`call w__greet {"name":"ada"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	id := pendingApproval(t, dir)

	// Approve: the waiting shell call completes.
	var html string
	browse(t, ctx, "the approvals page",
		chromedp.Navigate(base+"/console/approvals"),
		chromedp.WaitVisible(chromedp.CSS("#"+id)))
	html = read(t, ctx, "the page", chromedp.OuterHTML(chromedp.CSS("html")))
	for _, want := range []string{"w__greet", `"name"`, "acme/ada", "Approve once", "Approve always", "Deny"} {
		if !strings.Contains(html, want) {
			t.Errorf("the approvals page lacks %q", want)
		}
	}
	if strings.Contains(html, otherID) {
		t.Errorf("the approvals page of acme/ada shows globex's request %s", otherID)
	}
	screenshot(t, ctx, "approvals")
	browse(t, ctx, "approve", chromedp.SendKeys(chromedp.CSS("#note-"+id), "looks right"),
		chromedp.Click(chromedp.CSS("#"+id+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")))
	p.expect("hello ada")
	p.expect("airlock> ")

	// A request that arrives while the page is open shows up on its own.
	p.send(`call w__greet {"name":"bob"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	id2 := pendingApproval(t, dir)
	browse(t, ctx, "the new request, live", chromedp.WaitVisible(chromedp.CSS("#"+id2)))
	browse(t, ctx, "deny", chromedp.Click(chromedp.CSS("#"+id2+" button.deny")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if got := p.expect("airlock> "); !strings.Contains(got, "denied approval "+id2) {
		t.Errorf("the shell after the denial:\n%s", got)
	}

	// A server's form, asked at the shell, answered in the console: an
	// answer that does not fit is shown again with what is wrong; the
	// shell's question is withdrawn and the server gets the answer.
	p.send("call w__ask_form {}\r")
	p.expect("Answer? [y = fill in the form, n = decline, c = cancel] ")
	browse(t, ctx, "the inputs page", chromedp.Navigate(base+"/console/inputs"),
		chromedp.WaitVisible(chromedp.CSS("article.input")))
	inq := read(t, ctx, "the request's id", chromedp.Evaluate[string](`document.querySelector("article.input").id`))
	html = read(t, ctx, "the page", chromedp.OuterHTML(chromedp.CSS("html")))
	for _, want := range []string{"Who are you?", "Your name", `value="Ada"`, "Green", `name="f.count"`, `name="f.sure"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the inputs page lacks %q", want)
		}
	}
	browse(t, ctx, "an answer that does not fit",
		chromedp.SetValue(chromedp.CSS(`#`+inq+` select[name="f.colour"]`), "green"),
		chromedp.SendKeys(chromedp.CSS(`#`+inq+` input[name="f.count"]`), "0"),
		chromedp.Click(chromedp.CSS(`#`+inq+` button[value="accept"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#`+inq+` p[role="alert"]`)))
	if msg := read(t, ctx, "the problem", chromedp.Text(chromedp.CSS(`#`+inq+` p[role="alert"]`))); !strings.Contains(msg, "count") {
		t.Errorf("the problem shown: %q", msg)
	}
	screenshot(t, ctx, "inputs")
	browse(t, ctx, "an answer that fits",
		chromedp.SetValue(chromedp.CSS(`#`+inq+` input[name="f.count"]`), "3"),
		chromedp.SetValue(chromedp.CSS(`#`+inq+` select[name="f.sure"]`), "true"),
		chromedp.Click(chromedp.CSS(`#`+inq+` button[value="accept"]`)),
		chromedp.WaitVisible(chromedp.CSS("p.flash")))
	p.expect("answered elsewhere, in the console")
	if got := p.expect("airlock> "); !strings.Contains(got, `"colour":"green"`) || !strings.Contains(got, `"count":3`) || !strings.Contains(got, `"name":"Ada"`) {
		t.Errorf("the shell after the console's answer:\n%s", got)
	}

	// Recovery: the evidence, without the secret; resolve it.
	browse(t, ctx, "the recovery page",
		chromedp.Navigate(base+"/console/recovery"),
		chromedp.WaitVisible(chromedp.CSS("#"+rec[1])))
	html = read(t, ctx, "the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, secret) || !strings.Contains(html, "[REDACTED:secret]") {
		t.Errorf("the recovery page shows the secret, or not its redaction:\n%s", html)
	}
	screenshot(t, ctx, "recovery")
	browse(t, ctx, "resolve",
		chromedp.Click(chromedp.CSS("#"+rec[1]+` input[value="not-applied"]`)),
		chromedp.SendKeys(chromedp.CSS("#note-"+rec[1]), "checked the file: not there"),
		chromedp.Click(chromedp.CSS("#"+rec[1]+" form.resolve button")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if show := runCLI(t, dir, "", "recovery", "show", rec[1]).want(t, 0); !strings.Contains(show.stdout, "resolved as not-applied by") {
		t.Errorf("recovery show after the console's resolve:\n%s", show.stdout)
	}

	// The audit trail, filtered to one tool.
	var tools []string
	browse(t, ctx, "the audit page",
		chromedp.Navigate(base+"/console/audit"),
		chromedp.WaitVisible(chromedp.CSS("form.filter")),
		chromedp.SendKeys(chromedp.CSS(`input[name="tool"]`), "w__slow_write"),
		chromedp.Click(chromedp.CSS("form.filter button")),
		// The filtered page, not the one the click left: its form holds
		// the filter as an attribute.
		chromedp.WaitVisible(chromedp.CSS(`form.filter input[name="tool"][value="w__slow_write"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.events")))
	tools = read(t, ctx, "the events shown", chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.events tbody tr td:nth-child(4)")].map(td => td.textContent)`))
	if len(tools) == 0 {
		t.Error("the audit page filtered to w__slow_write shows no event")
	}
	for _, tool := range tools {
		if tool != "w__slow_write" {
			t.Errorf("the audit page filtered to w__slow_write shows an event of %q", tool)
		}
	}
	screenshot(t, ctx, "audit")
	browse(t, ctx, "the servers page", chromedp.Navigate(base+"/console/servers"),
		chromedp.WaitVisible(chromedp.CSS("#server-w")))
	screenshot(t, ctx, "servers")

	// Every decision the console made is in the trail, with the console
	// as its source.
	trail := runCLI(t, dir, "", "audit", "--json").want(t, 0).stdout
	for _, ev := range []string{"approval_granted", "approval_denied", "recovery_resolved", "input_answered"} {
		if !regexp.MustCompile(`"event":"` + ev + `"[^\n]*"source":"console"`).MatchString(trail) {
			t.Errorf("the audit trail has no %s event from the console:\n%s", ev, trail)
		}
	}

	// A page of another origin posts an approval: refused, nothing decided.
	p.send(`call w__greet {"name":"cy"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	id3 := pendingApproval(t, dir)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/console/approvals/%s/approve"><input name="csrf" value="guess"></form><script>document.getElementById("f").submit()</script>`, base, id3)
	}))
	defer evil.Close()
	browse(t, ctx, "the other origin's page", chromedp.Navigate(evil.URL),
		chromedp.WaitVisible(chromedp.CSS("p.error")))
	html = read(t, ctx, "the refusal", chromedp.Text(chromedp.CSS("p.error")))
	if !strings.Contains(html, "not from the console") {
		t.Errorf("a cross-origin post was answered with %q", html)
	}
	if show := runCLI(t, dir, "", "approvals", "show", id3).want(t, 0); !strings.Contains(show.stdout, "(pending)") {
		t.Errorf("after a cross-origin post the request reads:\n%s", show.stdout)
	}
	p.send("n\r")
	p.expect("airlock> ")

	// An operator's console shows every tenant's requests.
	op := startConsole(t, dir, "--all-principals")
	browse(t, ctx, "the operator's approvals page", chromedp.Navigate(op+"/console/approvals"),
		chromedp.WaitVisible(chromedp.CSS("#"+otherID)))
}

// TestConsoleSignInChromium: with serve.auth, airlock serve --console
// signs people in at the OpenID provider (a real one, on loopback) before
// it shows anything. Signed in as alice, the browser sees acme/alice's
// waiting shell call and not globex's request, and the approval releases
// the shell; signed out, the console sends the browser to sign in again;
// carol, an operator by serve.console.operators, sees globex's request.
func TestConsoleSignInChromium(t *testing.T) {
	idp := oauthtest.New(t, &oauthtest.Options{ClientID: "airlock-console", RedirectURIs: []string{"http://127.0.0.1/console/callback"},
		OptionalResource: true, Tenant: "acme", People: []oauthtest.Person{{Name: "carol", Password: "carols-pass", Tenant: "acme"}}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, "[greet]")+fmt.Sprintf(`development: true
tenancy: {tenant: "${CONSOLE_TENANT}", user: "${CONSOLE_USER}"}
serve:
  auth: {issuer: %q, resource: "https://airlock.test/mcp", tenant_claim: tenant}
  console: {client_id: airlock-console, operators: [acme/carol]}
`, idp.URL))
	t.Setenv("CONSOLE_TENANT", "acme")
	t.Setenv("CONSOLE_USER", "alice")
	globex := []string{"CONSOLE_TENANT=globex", "CONSOLE_USER=bob"}
	runCLIEnv(t, dir, globex, "", "call", "w__greet", "--args", `{"name":"eve"}`).want(t, 5)
	bobs := pendingApproval(t, dir, globex...)

	endpoint, _ := startServe(t, dir, "--http", "127.0.0.1:0", "--console")
	base := strings.TrimSuffix(endpoint, "/mcp")
	p := onPTY(t, dir, "shell")
	p.expect("airlock> ")
	p.send(`call w__greet {"name":"ada"}` + "\r")
	p.expect("Approve this call? [y/N/always] ")
	alices := pendingApproval(t, dir)

	ctx := newBrowser(t)
	signIn := func(user, password string) {
		t.Helper()
		browse(t, ctx, "the provider's sign-in page for "+user,
			chromedp.Navigate(base+"/console/approvals"),
			chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)))
		if loc := read(t, ctx, "where the browser is", chromedp.Location()); !strings.HasPrefix(loc, idp.URL+"/login") {
			t.Fatalf("signed out, the console sent the browser to %s, not to the provider", loc)
		}
		browse(t, ctx, "sign in as "+user,
			chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), user),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), password),
			chromedp.Submit(chromedp.CSS(`input[name="password"]`)),
			chromedp.WaitVisible(chromedp.CSS("header .viewer")))
	}
	signIn("alice", oauthtest.Password)
	browse(t, ctx, "alice's approvals", chromedp.WaitVisible(chromedp.CSS("#"+alices)))
	html := read(t, ctx, "the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if !strings.Contains(html, "acting for acme/alice") || strings.Contains(html, bobs) {
		t.Errorf("alice's approvals page (acting for acme/alice, without %s):\n%s", bobs, html)
	}
	screenshot(t, ctx, "signed-in")
	browse(t, ctx, "approve", chromedp.Click(chromedp.CSS("#"+alices+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("p.flash")))
	p.expect("answered elsewhere")
	p.expect("hello ada")
	p.expect("airlock> ")

	browse(t, ctx, "sign out", chromedp.Click(chromedp.CSS("form.signout button")),
		chromedp.WaitVisible(chromedp.CSS("a#next")))
	if msg := read(t, ctx, "the page", chromedp.Text(chromedp.CSS("p.flash"))); !strings.Contains(msg, "signed out") {
		t.Errorf("after the sign-out: %q", msg)
	}
	signIn("carol", "carols-pass")
	browse(t, ctx, "the operator's approvals", chromedp.WaitVisible(chromedp.CSS("#"+bobs)))
	if v := read(t, ctx, "the viewer", chromedp.Text(chromedp.CSS("header .viewer"))); !strings.Contains(v, "operator") {
		t.Errorf("carol's console says %q", v)
	}

	trail := runCLI(t, dir, "", "audit", "--json").want(t, 0).stdout
	for _, want := range []string{`"event":"signed_in"[^\n]*"user":"alice"`, `"event":"signed_out"[^\n]*"user":"alice"`,
		`"event":"approval_granted"[^\n]*"by":"alice"[^\n]*"source":"console"`, `"event":"signed_in"[^\n]*"operator":true[^\n]*"user":"carol"`} {
		if !regexp.MustCompile(want).MatchString(trail) {
			t.Errorf("the audit trail has no line matching %s:\n%s", want, trail)
		}
	}
	p.send("\x04")
	p.exit()
}

// consoleClient is a browser's session of the console at base, for
// tests that act without Chromium: a cookie jar, the page's CSRF token,
// and the console's own Origin on every form.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newConsoleClient(t *testing.T, base string) *consoleClient {
	jar, _ := cookiejar.New(nil)
	return &consoleClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// waitFor loads page until re matches it, and returns the match and the
// page's CSRF token.
func (cc *consoleClient) waitFor(page string, re *regexp.Regexp) ([]string, string) {
	cc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cc.c.Get(cc.base + page)
		if err != nil {
			cc.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := re.FindStringSubmatch(string(b)); m != nil {
			csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(string(b))
			if csrf == nil {
				cc.t.Fatalf("%s has no CSRF token:\n%s", page, b)
			}
			return m, csrf[1]
		}
		if time.Now().After(deadline) {
			cc.t.Fatalf("%s never matched %s:\n%s", page, re, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// post sends a form from the console's own page and wants the redirect
// back with a message.
func (cc *consoleClient) post(path string, form url.Values) {
	cc.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, cc.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", cc.base)
	resp, err := cc.c.Do(req)
	if err != nil {
		cc.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=") {
		cc.t.Fatalf("POST %s: %s %s\n%s", path, resp.Status, resp.Header.Get("Location"), b)
	}
}

var inputArticle = regexp.MustCompile(`<article class="card input" id="([^"]+)"`)

// TestConsoleAnswersWithoutATerminal: a call and an agent run with nobody
// at a terminal (--answer-wait) keep a server's question for the console,
// and go on with the answer given there; nobody answering declines it
// after the wait. An agent run on a terminal that waits for an approval
// is released by the console's approval.
func TestConsoleAnswersWithoutATerminal(t *testing.T) {
	dir := consoleDir(t, "unused-secret-value")
	base := startConsole(t, dir)
	cc := newConsoleClient(t, base)

	// A call in the background, answered in the console.
	var stdout, stderr strings.Builder
	call := exec.Command(airlockBin, "call", "w__ask_form", "--args", "{}", "--answer-wait", "1m")
	call.Dir, call.Stdout, call.Stderr = dir, &stdout, &stderr
	if err := call.Start(); err != nil {
		t.Fatal(err)
	}
	m, token := cc.waitFor("/console/inputs", inputArticle)
	cc.post("/console/inputs/"+m[1]+"/answer", url.Values{"csrf": {token}, "action": {"accept"},
		"f.colour": {"green"}, "f.count": {"4"}, "f.name": {"Grace"}})
	if err := call.Wait(); err != nil {
		t.Fatalf("the call answered in the console: %v\nstderr:\n%s", err, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, `"colour":"green"`) || !strings.Contains(out, `"name":"Grace"`) {
		t.Errorf("the call's result after the console's answer:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "answer it in the console") || !strings.Contains(stderr.String(), "answered in the console") {
		t.Errorf("the call's stderr does not say where to answer, or that it was:\n%s", stderr.String())
	}

	// Nobody answers: declined after the wait.
	r := runCLI(t, dir, "", "call", "w__ask_form", "--args", "{}", "--answer-wait", "1s")
	if !strings.Contains(r.stdout+r.stderr, "nobody answered in the console within 1s") {
		t.Errorf("a question nobody answered: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, d := range []string{"-1s", "0s", "500ms", "25h", "soon"} {
		if r := runCLI(t, dir, "", "call", "w__ask_form", "--answer-wait", d); r.code != 2 || !strings.Contains(r.stderr, "give a duration from 1s to 24h") {
			t.Errorf("--answer-wait %s: exit %d, %s", d, r.code, r.stderr)
		}
	}

	// An agent run in the background: its model's call asks, the console
	// answers, and the model is told the answer.
	m1 := agenttest.New(t,
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__ask_form", Args: `{}`}}},
		agenttest.Step{Text: "Thanks, Lin."})
	stdout.Reset()
	stderr.Reset()
	run := exec.Command(airlockBin, append(append([]string{"run"}, modelFlags(m1, "openai")...), "--answer-wait", "1m", "ask who I am")...)
	run.Dir, run.Stdout, run.Stderr = dir, &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	m, token = cc.waitFor("/console/inputs", inputArticle)
	cc.post("/console/inputs/"+m[1]+"/answer", url.Values{"csrf": {token}, "action": {"accept"},
		"f.colour": {"red"}, "f.count": {"1"}, "f.name": {"Lin"}})
	if err := run.Wait(); err != nil {
		t.Fatalf("the run answered in the console: %v\nstderr:\n%s", err, stderr.String())
	}
	if reqs := m1.Requests(); len(reqs) != 2 || !strings.Contains(strings.Join(reqs[1].ToolResults(), "\n"), `"name":"Lin"`) {
		t.Errorf("the model was not told the console's answer: %d requests", len(reqs))
	}

	// An agent run on a terminal waits at its approval prompt; the
	// console's approval releases it.
	m2 := agenttest.New(t,
		agenttest.Step{Calls: []agenttest.Call{{Name: "w__greet", Args: `{"name":"ada"}`}}},
		agenttest.Step{Text: "Greeted."})
	p := onPTY(t, dir, append(append([]string{"run"}, modelFlags(m2, "openai")...), "greet ada")...)
	p.expect("Approve this call? [y/N/always] ")
	m, token = cc.waitFor("/console/approvals", regexp.MustCompile(`<article class="card approval" id="(apr_[0-9a-zA-Z_]+)"`))
	cc.post("/console/approvals/"+m[1]+"/approve", url.Values{"csrf": {token}, "note": {"from the console"}})
	p.expect("answered elsewhere")
	p.expect("Greeted.")
	if code, out := p.exit(); code != 0 {
		t.Errorf("the run released by the console: exit %d\n%s", code, out)
	}
	if reqs := m2.Requests(); len(reqs) != 2 || !strings.Contains(strings.Join(reqs[1].ToolResults(), "\n"), "hello ada") {
		t.Errorf("the model was not told the greeting: %d requests", len(reqs))
	}
}

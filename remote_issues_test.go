package airlock_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/servers/issues"
	"github.com/airlockhq/airlock/servers/issues/issuestest"
)

// TestIssueServiceThroughTheHost runs Airlock's own remote issue service
// (servers/issues: a strict RFC 9068 resource server, tenant-isolated)
// behind a real authorization code flow, and reaches it through the host:
// a login, writes and reads for one tenant, and a task acting for a user
// of another tenant who, on a connection of that user's own, sees none of
// it.
func TestIssueServiceThroughTheHost(t *testing.T) {
	t.Setenv("AIRLOCK_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	iss := bearertest.New(t, nil)
	base := issuestest.Start(t, iss)

	redirect := freeRedirect(t)
	iss.AllowClient("airlock", redirect)
	remoteSrv := remote("issues", base+issues.Endpoint)
	remoteSrv.Resource = base
	remoteSrv.Scopes = []string{issues.ScopeRead, issues.ScopeWrite}
	remoteSrv.OAuth = &config.OAuth{ClientID: "airlock", RedirectURI: redirect}
	repo := gitRepo(t)
	cfg := devConfig(t, remoteSrv)
	cfg.Dir = repo
	classify(cfg, "issues", "read", "get_issue", "list_issues")
	classify(cfg, "issues", "write", "create_issue")
	opts := func(who airlock.Principal) *airlock.Options {
		return &airlock.Options{StateDir: cfg.Dir + "/.airlock", Principal: who, StopGrace: 500 * time.Millisecond,
			Auth: airlock.AuthOptions{Open: func(ctx context.Context, authURL string) error {
				// The browser: the authorization server approves at once and
				// redirects to the login's listener.
				c := &http.Client{}
				resp, err := c.Get(authURL)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				return resp.Body.Close()
			}}}
	}
	alice := airlock.Principal{Tenant: "acme", User: "alice"}
	bob := airlock.Principal{Tenant: "globex", User: "bob"}

	iss.SetPerson("acme", "alice")
	if _, err := airlock.OpenCredentials(cfg, opts(alice)).Login(context.Background(), "issues"); err != nil {
		t.Fatalf("alice's login: %v", err)
	}
	h := openWith(t, cfg, opts(alice))
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v (%v)", st, st.Err)
	}

	r := call(t, h, "issues__create_issue", `{"project":"web","title":"Login page is slow","idempotency_key":"k-1"}`)
	wantStatus(t, r, airlock.OK)
	var created struct {
		Issue struct {
			ID        string `json:"id"`
			CreatedBy string `json:"created_by"`
		} `json:"issue"`
		Created bool `json:"created"`
	}
	if err := json.Unmarshal(r.Structured, &created); err != nil || !created.Created || created.Issue.CreatedBy != "alice" {
		t.Fatalf("create_issue = %s (%v)", r.Structured, err)
	}
	// The same idempotency key creates nothing more.
	r = call(t, h, "issues__create_issue", `{"project":"web","title":"Login page is slow","idempotency_key":"k-1"}`)
	wantStatus(t, r, airlock.OK)
	if !strings.Contains(string(r.Structured), `"created":false`) {
		t.Errorf("repeated create_issue = %s, want created false", r.Structured)
	}
	r = call(t, h, "issues__list_issues", `{}`)
	wantStatus(t, r, airlock.OK)
	if strings.Count(string(r.Structured), `"id":"ISSUE-`) != 1 {
		t.Errorf("alice's list = %s, want her one issue", r.Structured)
	}

	// Bob, of another tenant, works in a task: his calls carry his token on
	// a connection of his own, and the service shows him nothing of acme.
	iss.SetPerson("globex", "bob")
	if _, err := airlock.OpenCredentials(cfg, opts(bob)).Login(context.Background(), "issues"); err != nil {
		t.Fatalf("bob's login: %v", err)
	}
	task, err := h.OpenTask(context.Background(), "bob-1", &airlock.TaskOptions{Repo: repo, Principal: bob})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Release()
	callIn := func(name, args string) *airlock.Result {
		return h.Call(context.Background(), task.Snapshot(), airlock.Call{Name: name, Arguments: json.RawMessage(args)})
	}
	r = callIn("issues__list_issues", `{}`)
	wantStatus(t, r, airlock.OK)
	if strings.Contains(string(r.Structured), "ISSUE-") {
		t.Errorf("bob's list = %s, want none of acme's issues", r.Structured)
	}
	r = callIn("issues__get_issue", `{"id":"`+created.Issue.ID+`"}`)
	wantStatus(t, r, airlock.ToolError)
	if !strings.Contains(r.Content, "does not exist") {
		t.Errorf("bob's get_issue of acme's issue = %q, want it not to exist for him", r.Content)
	}
	// Alice still sees hers, on the host's own connection.
	r = call(t, h, "issues__get_issue", `{"id":"`+created.Issue.ID+`"}`)
	wantStatus(t, r, airlock.OK)

	issued, reused := iss.Grants()
	if issued != 2 || reused != 0 {
		t.Errorf("tokens issued = %d, refresh tokens reused = %d; want one login each and no reuse", issued, reused)
	}
}

// TestIssueServiceWithClientCredentials: a CI job's host reaches the issue
// service with nobody logging in. Its client proves who it is with ES256
// assertions that bearertest verifies; the service's first challenge
// names the read scope, and a write, answered 403 insufficient_scope, gets
// a token issued for both, without a person.
func TestIssueServiceWithClientCredentials(t *testing.T) {
	t.Setenv("AIRLOCK_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	iss := bearertest.New(t, nil)
	base := issuestest.Start(t, iss)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "ci-runner.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	iss.AllowService("ci-runner", "", &key.PublicKey)
	iss.SetPerson("acme", "")

	remoteSrv := remote("issues", base+issues.Endpoint)
	remoteSrv.Resource = base
	remoteSrv.OAuth = &config.OAuth{Grant: config.GrantClientCredentials, ClientID: "ci-runner", PrivateKeyFile: keyFile}
	cfg := devConfig(t, remoteSrv)
	classify(cfg, "issues", "read", "get_issue", "list_issues")
	classify(cfg, "issues", "write", "create_issue")
	cfg.Policy.Rules = append(cfg.Policy.Rules, config.Rule{Server: "issues", Tool: "*", Decision: "allow", Source: "test"})
	h := openWith(t, cfg, &airlock.Options{StateDir: t.TempDir(),
		Auth: airlock.AuthOptions{Open: func(context.Context, string) error {
			t.Error("a person was sent to log in")
			return errors.New("nobody is here")
		}}})
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v (%v), want ready without a login", st, st.Err)
	}

	r := call(t, h, "issues__create_issue", `{"project":"ci","title":"Nightly build failed","idempotency_key":"n-1"}`)
	wantStatus(t, r, airlock.OK)
	if !strings.Contains(string(r.Structured), `"created_by":"ci-runner"`) {
		t.Errorf("create_issue = %s, want it created by the client", r.Structured)
	}
	wantStatus(t, call(t, h, "issues__list_issues", `{}`), airlock.OK)
	if issued, refused := iss.ServiceGrants(); issued != 2 || refused != 0 {
		t.Errorf("client credentials tokens issued = %d, refused = %d; want 2 (read, then read and write) and 0", issued, refused)
	}
	if issued, _ := iss.Grants(); issued != 0 {
		t.Errorf("%d tokens came from a person's login", issued)
	}

	// The authorization server now holds another key for the client: an
	// assertion signed with this one is refused at the token endpoint.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	iss.AllowService("ci-runner", "", &other.PublicKey)
	creds := h.Credentials()
	if err := creds.Logout(context.Background(), "issues"); err != nil {
		t.Fatal(err)
	}
	if _, err := creds.Login(context.Background(), "issues"); err == nil || !strings.Contains(err.Error(), "refused the client credentials") {
		t.Errorf("Login with a key the authorization server does not hold = %v, want the credentials refused", err)
	}
	if _, refused := iss.ServiceGrants(); refused != 1 {
		t.Errorf("refused client credentials requests = %d, want 1", refused)
	}
}

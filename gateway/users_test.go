package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/servers/issues"
	"github.com/airlockhq/airlock/servers/issues/issuestest"
	"github.com/airlockhq/airlock/store"
)

// TestTwoUsersOfTwoTenants runs two people of two tenants through one
// gateway at once, in front of Airlock's own OAuth-protected issue service
// (servers/issues, tenant-isolated). Each one's calls are made for them:
// their upstream calls carry their own stored token (never the one they
// sent the gateway), their approvals are their own (a write approved for
// one is not approved for the other), and the audit trail names each.
func TestTwoUsersOfTwoTenants(t *testing.T) {
	t.Setenv("AIRLOCK_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	ctx := context.Background()

	// The issue service and its authorization server.
	upAS := bearertest.New(t, nil)
	base := issuestest.Start(t, upAS)

	// The people's identity provider, which the gateway trusts.
	idp := bearertest.New(t, nil)
	redirect := testenv.RedirectURI(t)
	upAS.AllowClient("airlock", redirect)
	dir := t.TempDir()
	yaml := fmt.Sprintf(`development: true
tenancy: {tenant: ops, user: gateway}
servers:
  - id: issues
    transport: http
    url: %s/mcp
    allowed_hosts: [127.0.0.1]
    resource: %s
    scopes: [%s, %s]
    oauth: {client_id: airlock, redirect_uri: %q}
    allowed_tools: [list_issues, get_issue, create_issue]
policy:
  tools:
    - {server: issues, tool: list_issues, effect: read}
    - {server: issues, tool: get_issue, effect: read}
    - {server: issues, tool: create_issue, effect: write}
serve:
  auth: {issuer: %q, resource: %s, scopes: [%s], tenant_claim: tenant}
`, base, base, issues.ScopeRead, issues.ScopeWrite, redirect, idp.URL, gatewayResource, scopeTools)
	cfg, err := config.Parse([]byte(yaml), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}

	// Each person, and the gateway's own principal (whose login discovers
	// the service's tools), logs in to the issue service once.
	browser := logInAll(t, cfg, upAS, "issues")

	st, err := airlock.OpenStore(cfg.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	v, err := gateway.NewVerifier(cfg.Serve.Auth, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{log: &testenv.Buffer{}}
	f.open(t, cfg, &gateway.Options{Serve: cfg.Serve, Verifier: v}, &airlock.Options{Store: st, Auth: browser})

	aliceTok, bobTok := token(t, idp, "acme", "alice"), token(t, idp, "globex", "bob")
	alice := f.connectAs(t, session, aliceTok, nil)
	bob := f.connectAs(t, stateless, bobTok, nil)
	create := `{"project":"web","title":"Login page is slow","idempotency_key":"k-1"}`

	// At once: both ask to file the same issue. Each gets a request of
	// their own.
	results := make([]*mcp.CallToolResult, 2)
	inParallel(2, func(i int) {
		cs := []*mcp.ClientSession{alice, bob}[i]
		res, err := call(t, cs, "issues__create_issue", create)
		if err != nil {
			t.Errorf("create_issue %d: %v", i, err)
			return
		}
		results[i] = res
	})
	if t.Failed() {
		t.FailNow()
	}
	ids := make([]string, 2)
	for i, res := range results {
		ids[i], _ = res.Meta["airlock/approval_id"].(string)
		if status(res) != "approval_required" || ids[i] == "" {
			t.Fatalf("create_issue %d: %s %q, want approval_required", i, status(res), resultText(res))
		}
		if !strings.Contains(resultText(res), "airlock approvals approve "+ids[i]+" --all-principals") {
			t.Errorf("create_issue %d: %q, want how an operator approves another user's request", i, resultText(res))
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("alice and bob share the approval request %s", ids[0])
	}

	// Alice's request is approved, by an operator; bob's is not. Her call
	// runs, with her own token (the service names her as the creator);
	// his is still refused.
	if err := airlock.DecideApproval(ctx, st, ids[0], true, "", airlock.Actor{AllPrincipals: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	res, err := call(t, bob, "issues__create_issue", create)
	if err != nil || status(res) != "approval_required" {
		t.Fatalf("bob after alice's approval: %+v (%q), %v; want approval_required", res, resultText(res), err)
	}
	if id, _ := res.Meta["airlock/approval_id"].(string); id != ids[1] {
		t.Errorf("bob's request is %s, want his own %s", id, ids[1])
	}
	res, err = call(t, alice, "issues__create_issue", create)
	if err != nil || res.IsError || structured[issues.CreateIssueOutput](t, res).Issue.CreatedBy != "alice" {
		t.Fatalf("alice after her approval: %+v (%q), %v; want her issue created, by her", res, resultText(res), err)
	}

	// The service shows each person their own tenant's issues only.
	inParallel(2, func(i int) {
		cs := []*mcp.ClientSession{alice, bob}[i]
		res, err := call(t, cs, "issues__list_issues", `{}`)
		if err != nil || res.IsError {
			t.Errorf("list_issues %d: %+v, %v", i, res, err)
			return
		}
		got, want := len(structured[issues.ListIssuesOutput](t, res).Issues), []int{1, 0}[i]
		if got != want {
			t.Errorf("list_issues %d: %d issues, want %d", i, got, want)
		}
	})

	// Bob's own approval lets his call run, for him.
	if err := airlock.DecideApproval(ctx, st, ids[1], true, "", airlock.Actor{AllPrincipals: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	res, err = call(t, bob, "issues__create_issue", create)
	if err != nil || res.IsError || structured[issues.CreateIssueOutput](t, res).Issue.CreatedBy != "bob" {
		t.Fatalf("bob after his approval: %+v (%q), %v; want his issue created, by him", res, resultText(res), err)
	}
	f.stop(t)
	f.g.Close()
	f.h.Close()

	// The audit trail names whom each call was made for.
	events, err := st.Audit().Events(ctx, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for _, e := range events {
		if e.Event == store.EventResult && e.Tool == "issues__create_issue" {
			made = append(made, fmt.Sprintf("%v/%v %s", e.Fields["tenant"], e.Fields["user"], e.Class))
		}
	}
	slices.Sort(made[:2]) // the first two ran at once
	want := []string{"acme/alice approval_required", "globex/bob approval_required", "globex/bob approval_required", "acme/alice ok", "globex/bob ok"}
	if !slices.Equal(made, want) {
		t.Errorf("create_issue results made for %q, want %q", made, want)
	}
	for _, e := range events {
		if e.Event == store.EventApprovalRequested {
			if who := fmt.Sprintf("%v/%v", e.Fields["tenant"], e.Fields["user"]); who != "acme/alice" && who != "globex/bob" {
				t.Errorf("approval requested for %s", who)
			}
		}
	}

	// The tokens the people sent the gateway went no further: not to the
	// service (its tokens come from the logins), the log or the audit
	// trail.
	trail := fmt.Sprint(events)
	for _, tok := range []string{aliceTok, bobTok} {
		if strings.Contains(f.log.String(), tok) || strings.Contains(trail, tok) {
			t.Error("an inbound token reached the log or the audit trail")
		}
	}
	if issued, _ := upAS.Grants(); issued != 3 {
		t.Errorf("the issue service's authorization server issued %d tokens, want the 3 logins' (no refresh, no other)", issued)
	}
}

// logInAll logs the gateway's own principal (ops/gateway), acme/alice and
// globex/bob in to server at iss, each as that person, and returns the
// browser that did.
func logInAll(t *testing.T, cfg *config.Config, iss *bearertest.Issuer, server string) airlock.AuthOptions {
	t.Helper()
	browser := airlock.AuthOptions{Open: func(ctx context.Context, authURL string) error {
		resp, err := http.Get(authURL)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}}
	for _, who := range []airlock.Principal{{Tenant: "ops", User: "gateway"}, {Tenant: "acme", User: "alice"}, {Tenant: "globex", User: "bob"}} {
		iss.SetPerson(who.Tenant, who.User)
		if _, err := airlock.OpenCredentials(cfg, &airlock.Options{Principal: who, Auth: browser}).Login(context.Background(), server); err != nil {
			t.Fatalf("%s's login: %v", who.User, err)
		}
	}
	return browser
}

// structured decodes a result's structured content as T.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		t.Errorf("structured content %v: %v", res.StructuredContent, err)
	}
	return v
}

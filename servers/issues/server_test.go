package issues_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/servers/issues"
)

var ignoreTimes = cmpopts.IgnoreFields(issues.Issue{}, "CreatedAt", "ClosedAt")

func TestToolsOverBothEras(t *testing.T) {
	tests := []struct {
		name      string
		stateful  bool
		era, want string
	}{
		{"stateless 2026-07-28", false, era2026, era2026},
		{"stateless 2025-11-25", false, era2025, era2025},
		{"stateful 2025-11-25", true, era2025, era2025},
		{"stateful falls back from 2026-07-28", true, era2026, era2025},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, &fixtureOptions{server: issues.Options{Stateful: tt.stateful}})
			cs := f.connect(t, f.token(t, "acme", "alice", issues.ScopeRead, issues.ScopeWrite), tt.era, tt.want)

			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Annotations == nil {
					t.Errorf("%s lacks a schema or annotations", tool.Name)
				}
			}
			if diff := cmp.Diff([]string{"close_issue", "create_issue", "get_issue", "list_issues"}, names, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}

			var created issues.CreateIssueOutput
			if msg := call(t, cs, "create_issue", map[string]any{"project": "web", "title": "Add health checks", "body": "b", "idempotency_key": "k-1"}, &created); msg != "" {
				t.Fatalf("create_issue: %s", msg)
			}
			want := issues.Issue{ID: "ISSUE-1", Project: "web", Title: "Add health checks", Body: "b", Status: "open", CreatedBy: "alice"}
			if diff := cmp.Diff(issues.CreateIssueOutput{Issue: want, Created: true}, created, ignoreTimes); diff != "" {
				t.Errorf("create_issue (-want +got):\n%s", diff)
			}
			var got issues.Issue
			if msg := call(t, cs, "get_issue", map[string]any{"id": "ISSUE-1"}, &got); msg != "" {
				t.Fatalf("get_issue: %s", msg)
			}
			if diff := cmp.Diff(want, got, ignoreTimes); diff != "" {
				t.Errorf("get_issue (-want +got):\n%s", diff)
			}
			var closed issues.Issue
			call(t, cs, "close_issue", map[string]any{"id": "ISSUE-1"}, &closed)
			want.Status, want.ClosedBy = "closed", "alice"
			if diff := cmp.Diff(want, closed, ignoreTimes); diff != "" || closed.ClosedAt == "" {
				t.Errorf("close_issue (-want +got):\n%s", diff)
			}
			var list issues.ListIssuesOutput
			call(t, cs, "list_issues", map[string]any{"status": "closed"}, &list)
			if diff := cmp.Diff(issues.ListIssuesOutput{Issues: []issues.Issue{want}}, list, ignoreTimes); diff != "" {
				t.Errorf("list_issues (-want +got):\n%s", diff)
			}
			if msg := call(t, cs, "get_issue", map[string]any{"id": "ISSUE-x"}, nil); !strings.Contains(msg, "ISSUE-") {
				t.Errorf("get_issue with a bad id: %q, want a schema refusal", msg)
			}
		})
	}
}

func TestAnnotations(t *testing.T) {
	f := start(t, nil)
	cs := f.connect(t, f.token(t, "acme", "alice"), era2026, era2026)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ ReadOnly, Destructive, Idempotent, OpenWorld bool }
	got := map[string]hints{}
	for _, tool := range res.Tools {
		a := tool.Annotations
		got[tool.Name] = hints{a.ReadOnlyHint, a.DestructiveHint == nil || *a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint == nil || *a.OpenWorldHint}
	}
	want := map[string]hints{
		"get_issue":    {ReadOnly: true, Destructive: true, Idempotent: true}, // destructive is meaningless when read-only
		"list_issues":  {ReadOnly: true, Destructive: true, Idempotent: true},
		"create_issue": {Idempotent: true},
		"close_issue":  {Destructive: true, Idempotent: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestTenantIsolation(t *testing.T) {
	f := start(t, nil)
	scopes := []string{issues.ScopeRead, issues.ScopeWrite}
	a := f.connect(t, f.token(t, "tenant-a", "alice", scopes...), era2026, era2026)
	b := f.connect(t, f.token(t, "tenant-b", "bob", scopes...), era2025, era2025)
	c := f.connect(t, f.token(t, "tenant-c", "carol", scopes...), era2026, era2026)

	for i := range 3 {
		call(t, a, "create_issue", map[string]any{"project": "web", "title": fmt.Sprintf("A%d", i), "idempotency_key": fmt.Sprintf("a-%d", i)}, nil)
	}
	for i := range 5 {
		call(t, b, "create_issue", map[string]any{"project": "web", "title": fmt.Sprintf("B%d", i), "idempotency_key": fmt.Sprintf("b-%d", i)}, nil)
	}

	// Each tenant pages through exactly its own issues.
	pageAll := func(cs *mcp.ClientSession, cursor string) (titles []string, pages int) {
		for {
			var out issues.ListIssuesOutput
			args := map[string]any{"limit": 2, "project": "web"}
			if cursor != "" {
				args["cursor"] = cursor
			}
			if msg := call(t, cs, "list_issues", args, &out); msg != "" {
				t.Fatalf("list_issues: %s", msg)
			}
			pages++
			for _, is := range out.Issues {
				titles = append(titles, is.ID+" "+is.Title)
			}
			if out.NextCursor == "" {
				return titles, pages
			}
			cursor = out.NextCursor
		}
	}
	gotA, pagesA := pageAll(a, "")
	gotB, pagesB := pageAll(b, "")
	if diff := cmp.Diff([]string{"ISSUE-1 A0", "ISSUE-2 A1", "ISSUE-3 A2"}, gotA); diff != "" || pagesA != 2 {
		t.Errorf("tenant A in %d pages (-want +got):\n%s", pagesA, diff)
	}
	if diff := cmp.Diff([]string{"ISSUE-1 B0", "ISSUE-2 B1", "ISSUE-3 B2", "ISSUE-4 B3", "ISSUE-5 B4"}, gotB); diff != "" || pagesB != 3 {
		t.Errorf("tenant B in %d pages (-want +got):\n%s", pagesB, diff)
	}

	// A cursor from tenant B's listing only moves tenant A's starting point.
	var bPage issues.ListIssuesOutput
	call(t, b, "list_issues", map[string]any{"limit": 1}, &bPage)
	gotA, _ = pageAll(a, bPage.NextCursor)
	if diff := cmp.Diff([]string{"ISSUE-2 A1", "ISSUE-3 A2"}, gotA); diff != "" {
		t.Errorf("tenant A with B's cursor (-want +got):\n%s", diff)
	}

	// Tenant A asking for tenant B's ISSUE-5 hears exactly what tenant C,
	// who has no issues at all, hears.
	for _, tool := range []string{"get_issue", "close_issue"} {
		fromA := call(t, a, tool, map[string]any{"id": "ISSUE-5"}, nil)
		fromC := call(t, c, tool, map[string]any{"id": "ISSUE-5"}, nil)
		if fromA == "" || fromA != fromC || fromA != "issue ISSUE-5 does not exist" {
			t.Errorf("%s of another tenant's issue = %q, of a missing issue = %q; want both \"issue ISSUE-5 does not exist\"", tool, fromA, fromC)
		}
	}
	var still issues.Issue
	call(t, b, "get_issue", map[string]any{"id": "ISSUE-5"}, &still)
	if still.Status != "open" {
		t.Errorf("tenant B's issue after tenant A tried to close it: %+v", still)
	}
}

func TestCreateIssueIdempotent(t *testing.T) {
	f := start(t, nil)
	tok := f.token(t, "acme", "alice", issues.ScopeRead, issues.ScopeWrite)
	cs := f.connect(t, tok, era2026, era2026)
	args := map[string]any{"project": "web", "title": "Once", "idempotency_key": "same-key"}

	var first, second issues.CreateIssueOutput
	call(t, cs, "create_issue", args, &first)
	call(t, cs, "create_issue", args, &second)
	if !first.Created || second.Created || first.Issue != second.Issue {
		t.Errorf("first = %+v, second = %+v; want the same issue, created once", first, second)
	}
	msg := call(t, cs, "create_issue", map[string]any{"project": "web", "title": "Other", "idempotency_key": "same-key"}, nil)
	if !strings.Contains(msg, "already created ISSUE-1 with different arguments") {
		t.Errorf("reusing the key with other arguments: %q", msg)
	}

	// Racing calls, each on its own connection, with one new key.
	const racers = 16
	sessions := make([]*mcp.ClientSession, racers)
	for i := range sessions {
		sessions[i] = f.connect(t, tok, era2026, era2026)
	}
	race := map[string]any{"project": "web", "title": "Raced", "idempotency_key": "race-key"}
	results := make([]issues.CreateIssueOutput, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			res, err := sessions[i].CallTool(context.Background(), &mcp.CallToolParams{Name: "create_issue", Arguments: race})
			if err != nil || res.IsError {
				t.Errorf("racer %d: %v %+v", i, err, res)
				return
			}
			data, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(data, &results[i])
		})
	}
	close(start)
	wg.Wait()
	createdCount := 0
	for _, r := range results {
		if r.Created {
			createdCount++
		}
		if r.Issue.ID != results[0].Issue.ID {
			t.Errorf("racers got different issues: %s and %s", r.Issue.ID, results[0].Issue.ID)
		}
	}
	if createdCount != 1 {
		t.Errorf("%d racers report creating the issue, want 1", createdCount)
	}
	var list issues.ListIssuesOutput
	call(t, cs, "list_issues", map[string]any{}, &list)
	if len(list.Issues) != 2 {
		t.Errorf("issues after the race: %d, want 2 (one per key)", len(list.Issues))
	}
}

func TestAuthorizationMatrix(t *testing.T) {
	f := start(t, &fixtureOptions{introspection: true})
	md := f.url + bearer.WellKnownPath
	good := func() map[string]any { return f.iss.Claims(f.url, "acme", "alice", issues.ScopeRead) }
	with := func(edit func(map[string]any)) map[string]any { c := good(); edit(c); return c }
	revoked := f.iss.Mint(t, good(), nil)
	f.iss.Revoke(revoked)
	invalid := func(desc string) (int, string) {
		return 401, `Bearer resource_metadata="` + md + `", scope="mcp:issues.read", error="invalid_token", error_description="` + desc + `"`
	}
	getIssue := toolsCall(1, "get_issue", map[string]any{"id": "ISSUE-1"})
	createIssue := toolsCall(2, "create_issue", map[string]any{"project": "p", "title": "t", "idempotency_key": "k"})

	tests := []struct {
		name       string
		token      string
		body       string
		wantStatus int
		wantAuth   string
	}{
		{"good token", f.iss.Mint(t, good(), nil), getIssue, 200, ""},
		{"no token", "", getIssue, 401, `Bearer resource_metadata="` + md + `", scope="mcp:issues.read"`},
		{"expired", f.iss.Mint(t, with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), nil), getIssue, 0, "token has expired"},
		{"not yet valid", f.iss.Mint(t, with(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() }), nil), getIssue, 0, "token is not yet valid"},
		{"wrong issuer", f.iss.Mint(t, with(func(c map[string]any) { c["iss"] = "https://evil.example.com" }), nil), getIssue, 0, "token issuer is not accepted"},
		{"wrong audience", f.iss.Mint(t, with(func(c map[string]any) { c["aud"] = "https://other.example.com" }), nil), getIssue, 0, "token audience does not include this resource"},
		{"missing exp", f.iss.Mint(t, with(func(c map[string]any) { delete(c, "exp") }), nil), getIssue, 0, "token lacks the required claim exp"},
		{"exp a numeric string", f.iss.Mint(t, with(func(c map[string]any) { c["exp"] = fmt.Sprint(time.Now().Add(time.Hour).Unix()) }), nil), getIssue, 0, "token exp, nbf and iat claims must be numbers"},
		{"scopes separated by a tab", f.iss.Mint(t, with(func(c map[string]any) { c["scope"] = issues.ScopeRead + "\t" + issues.ScopeWrite }), nil), createIssue, 0, "token scope claim must be a space-separated string"},
		{"alg none", f.iss.Mint(t, good(), &bearertest.Header{Alg: "none"}), getIssue, 0, "token signing algorithm is not allowed"},
		{"RS256 public key as HS256 secret", f.iss.Mint(t, good(), &bearertest.Header{Alg: "HS256", HMAC: f.iss.Key().PublicPEM()}), getIssue, 0, "token signing algorithm is not allowed"},
		{"unknown kid", f.iss.Mint(t, good(), &bearertest.Header{Key: bearertest.NewRSAKey(t, "stranger")}), getIssue, 0, "token signing key is not one of the issuer's keys"},
		{"wrong typ", f.iss.Mint(t, good(), &bearertest.Header{Typ: "JWT"}), getIssue, 0, "token type must be at+jwt"},
		{"revoked", revoked, getIssue, 0, "token is not active"},
		{"missing scope", f.iss.Mint(t, good(), nil), createIssue, 403, `Bearer resource_metadata="` + md + `", scope="mcp:issues.write", error="insufficient_scope", error_description="this call needs the scope mcp:issues.write"`},
		{"no scope lists tools", f.token(t, "acme", "alice"), `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, 200, ""},
		{"no scope at all", f.token(t, "acme", "alice"), getIssue, 403, `Bearer resource_metadata="` + md + `", scope="mcp:issues.read", error="insufficient_scope", error_description="this call needs the scope mcp:issues.read"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantStatus, wantAuth := tt.wantStatus, tt.wantAuth
			if wantStatus == 0 {
				wantStatus, wantAuth = invalid(tt.wantAuth)
			}
			got := f.post(t, tt.token, tt.body)
			if got.status != wantStatus || got.header.Get("WWW-Authenticate") != wantAuth {
				t.Errorf("got %d %q\nwant %d %q\nbody: %s", got.status, got.header.Get("WWW-Authenticate"), wantStatus, wantAuth, got.body)
			}
			if wantStatus == 403 {
				var rpc struct {
					ID    int `json:"id"`
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(got.body), &rpc); err != nil || rpc.Error.Code != issues.CodeInsufficientScope || rpc.ID == 0 {
					t.Errorf("403 body = %s, want a JSON-RPC error for the call", got.body)
				}
			}
		})
	}
	if strings.Contains(f.logs.String(), revoked) || strings.Contains(f.logs.String(), "Bearer ") {
		t.Error("the server log contains a token")
	}
}

func TestInsufficientScopeThroughTheSDKClient(t *testing.T) {
	for _, era := range []string{era2026, era2025} {
		t.Run(era, func(t *testing.T) {
			f := start(t, nil)
			cs := f.connect(t, f.token(t, "acme", "alice", issues.ScopeRead), era, era)
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_issue",
				Arguments: map[string]any{"project": "web", "title": "t", "idempotency_key": "k"}})
			if err == nil || !strings.Contains(err.Error(), "mcp:issues.write") {
				t.Fatalf("create_issue with a read-only token: %v, want an insufficient scope error", err)
			}
			// The refusal does not break the connection.
			var list issues.ListIssuesOutput
			if msg := call(t, cs, "list_issues", map[string]any{}, &list); msg != "" || len(list.Issues) != 0 {
				t.Errorf("list_issues after the refusal: %q %+v", msg, list)
			}
		})
	}
}

func TestScopeGateReadsWhatTheSDKReads(t *testing.T) {
	f := start(t, nil)
	read := f.token(t, "acme", "alice", issues.ScopeRead)
	tests := []struct {
		name, body string
		want       int
	}{
		{"duplicate name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","name":"create_issue","arguments":{}}}`, 400},
		{"case-variant name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","Name":"create_issue","arguments":{}}}`, 400},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"create_issue"}}`, 400},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"get_issue\xff\"}}", 400},
		{"batch with a write", `[` + toolsCall(1, "get_issue", map[string]any{"id": "ISSUE-1"}) + `,` + toolsCall(2, "close_issue", map[string]any{"id": "ISSUE-1"}) + `]`, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.post(t, read, tt.body); got.status != tt.want {
				t.Errorf("status = %d, want %d; body %s", got.status, tt.want, got.body)
			}
		})
	}
}

func TestOriginAndHost(t *testing.T) {
	f := start(t, &fixtureOptions{server: issues.Options{AllowedOrigins: []string{"https://App.example.com"}}})
	tok := f.token(t, "acme", "alice", issues.ScopeRead)
	body := toolsCall(1, "list_issues", map[string]any{})
	port := f.url[strings.LastIndex(f.url, ":")+1:]

	tests := []struct {
		name    string
		token   string
		headers []string
		want    int
	}{
		{"no Origin", tok, nil, 200},
		{"allowed Origin", tok, []string{"Origin", "https://app.example.com"}, 200},
		{"cross-site Origin", tok, []string{"Origin", "https://evil.example.com"}, 403},
		{"cross-site Origin without a token", "", []string{"Origin", "https://evil.example.com"}, 403},
		{"null Origin", tok, []string{"Origin", "null"}, 403},
		{"allowed Origin without a token", "", []string{"Origin", "https://app.example.com"}, 401},
		{"DNS rebinding Host", tok, []string{"Host", "evil.example.com:" + port}, 403},
		{"localhost Host", tok, []string{"Host", "localhost:" + port}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.post(t, tt.token, body, tt.headers...)
			if got.status != tt.want {
				t.Errorf("status = %d, want %d; body %s", got.status, tt.want, got.body)
			}
			if tt.want == 200 && len(tt.headers) > 0 && tt.headers[0] == "Origin" {
				if got.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
					!strings.Contains(got.header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
					t.Errorf("CORS headers: %v", got.header)
				}
			}
		})
	}

	// Preflights: answered for the allowed origin without a token, refused
	// for others.
	preflight := func(origin string) httpResult {
		return f.send(t, http.MethodOptions, issues.Endpoint, nil,
			"Origin", origin,
			"Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization,content-type,mcp-protocol-version")
	}
	if got := preflight("https://app.example.com"); got.status/100 != 2 ||
		got.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(strings.ToLower(got.header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("preflight from the allowed origin: %d %v", got.status, got.header)
	}
	if got := preflight("https://evil.example.com"); got.status != 403 || got.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", got.status, got.header)
	}

	// Host checks cover the public paths too.
	if got := f.get(t, "/healthz", "Host", "evil.example.com"); got.status != 403 {
		t.Errorf("/healthz with a rebinding Host: %d, want 403", got.status)
	}
}

func TestMetadataAndHealth(t *testing.T) {
	f := start(t, nil)
	want := map[string]any{
		"resource":                 f.url,
		"authorization_servers":    []any{f.iss.URL},
		"scopes_supported":         []any{issues.ScopeRead, issues.ScopeWrite},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "Airlock issues",
	}
	for _, path := range []string{bearer.WellKnownPath, bearer.WellKnownPath + issues.Endpoint} {
		got := f.get(t, path)
		var md map[string]any
		if err := json.Unmarshal([]byte(got.body), &md); err != nil || got.status != 200 {
			t.Fatalf("GET %s: %d %s", path, got.status, got.body)
		}
		if diff := cmp.Diff(want, md); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	if got := f.get(t, "/healthz"); got.status != 200 || got.body != "ok\n" {
		t.Errorf("/healthz: %d %q", got.status, got.body)
	}
	if got := f.get(t, "/readyz"); got.status != 200 {
		t.Errorf("/readyz: %d %q", got.status, got.body)
	}
	if got := f.get(t, "/nothing"); got.status != 404 {
		t.Errorf("/nothing: %d", got.status)
	}
}

func TestNotReadyWithoutIssuer(t *testing.T) {
	dead, issuer := testenv.Listen(t)
	dead.Close()
	v, err := bearer.NewVerifier(issuer, "http://127.0.0.1:1", &bearer.Options{TenantClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := issues.New(context.Background(), v, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, base := testenv.Listen(t)
	cancel, done := serve(srv, ln)
	defer func() { cancel(); <-done }()
	f := &fixture{url: base}
	if got := f.get(t, "/readyz"); got.status != 503 {
		t.Errorf("/readyz without an issuer: %d, want 503", got.status)
	}
	if got := f.get(t, "/healthz"); got.status != 200 {
		t.Errorf("/healthz without an issuer: %d, want 200", got.status)
	}
	if got := f.post(t, "a.b.c", toolsCall(1, "list_issues", nil)); got.status != 401 {
		// A malformed token is refused before any key is needed.
		t.Errorf("malformed token without an issuer: %d, want 401", got.status)
	}
}

func TestBodyLimit(t *testing.T) {
	f := start(t, &fixtureOptions{server: issues.Options{MaxBodyBytes: 1024}})
	tok := f.token(t, "acme", "alice", issues.ScopeWrite)
	big := toolsCall(1, "create_issue", map[string]any{"project": "p", "title": "t", "body": strings.Repeat("x", 2000), "idempotency_key": "k"})
	if got := f.post(t, tok, big); got.status != 413 {
		t.Errorf("status = %d, want 413", got.status)
	}
}

func TestStatefulSessionIsNotACredential(t *testing.T) {
	f := start(t, &fixtureOptions{server: issues.Options{Stateful: true}})
	alice := f.token(t, "acme", "alice", issues.ScopeRead)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	got := f.post(t, alice, init)
	session := got.header.Get("Mcp-Session-Id")
	if got.status != 200 || session == "" {
		t.Fatalf("initialize: %d %v %s", got.status, got.header, got.body)
	}
	list := toolsCall(2, "list_issues", map[string]any{})
	if got := f.post(t, "", list, "Mcp-Session-Id", session); got.status != 401 {
		t.Errorf("session id without a token: %d, want 401", got.status)
	}
	mallory := f.token(t, "acme", "mallory", issues.ScopeRead)
	if got := f.post(t, mallory, list, "Mcp-Session-Id", session); got.status != 403 {
		t.Errorf("another user's token with the session id: %d, want 403", got.status)
	}
	if got := f.post(t, alice, list, "Mcp-Session-Id", session); got.status != 200 {
		t.Errorf("the session's own user: %d %s, want 200", got.status, got.body)
	}
	if strings.Contains(f.logs.String(), session) {
		t.Error("the server log contains the raw session id")
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	iss := bearertest.New(t, nil)
	v, err := bearer.NewVerifier(iss.URL, "http://127.0.0.1", &bearer.Options{TenantClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := issues.New(context.Background(), v, &issues.Options{Data: t.TempDir() + "/issues.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, base := testenv.Listen(t)
	cancel, done := serve(srv, ln)
	f := &fixture{url: base}
	if got := f.get(t, "/healthz"); got.status != 200 {
		t.Fatalf("/healthz: %d", got.status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v, want nil after cancel", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts connections after shutdown")
	}
}

func TestNewRefuses(t *testing.T) {
	iss := bearertest.New(t, nil)
	noTenant, _ := bearer.NewVerifier(iss.URL, "http://127.0.0.1", nil)
	withTenant, _ := bearer.NewVerifier(iss.URL, "http://127.0.0.1", &bearer.Options{TenantClaim: "tenant"})
	tests := []struct {
		name string
		v    *bearer.Verifier
		opts issues.Options
		want string
	}{
		{"no tenant claim", noTenant, issues.Options{}, "tenant claim"},
		{"wildcard origin", withTenant, issues.Options{AllowedOrigins: []string{"*"}}, "allowed origin"},
		{"origin with a path", withTenant, issues.Options{AllowedOrigins: []string{"https://app.example.com/x"}}, "allowed origin"},
		{"data file name with ?", withTenant, issues.Options{Data: "x?y"}, "must not contain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := issues.New(context.Background(), tt.v, &tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

package issues_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/servers/issues"
)

// TestEchoesAreBounded sends requests that carry almost a megabyte in one
// value (a method, a tool name, an id, an argument, a header) and checks
// that no answer repeats more than a bounded part of it.
func TestEchoesAreBounded(t *testing.T) {
	huge := strings.Repeat("Z", 900_000)
	long := strings.Repeat("Z", 200) // a run no answer may contain
	rpc := func(v map[string]any) string {
		v["jsonrpc"] = "2.0"
		b, _ := json.Marshal(v)
		return string(b)
	}
	call := func(id any, tool string, args map[string]any) string {
		return rpc(map[string]any{"id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	}
	tests := []struct {
		name     string
		stateful bool
		body     string   // POSTed to the MCP endpoint; empty: a GET
		headers  []string // extra request headers
		status   int
		want     string // the answer contains it
	}{
		{name: "method", body: rpc(map[string]any{"id": 1, "method": huge}), status: 400, want: `JSON RPC not handled: "ZZZ`},
		{name: "tool name", body: call(1, huge, map[string]any{}), status: 200, want: `unknown tool \"ZZZ`},
		{name: "tool name, stateful", stateful: true, body: call(1, huge, map[string]any{}), status: 200, want: `unknown tool \"ZZZ`},
		{name: "string id", body: call(huge, "get_issue", map[string]any{"id": "ISSUE-1"}), status: 400,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request id is longer than 128 bytes; use a shorter one"}}`},
		{name: "numeric id", body: `{"jsonrpc":"2.0","id":` + strings.Repeat("9", 900) + `,"method":"tools/list"}`, status: 400,
			want: `"message":"a request id is longer than 128 bytes; use a shorter one"`},
		{name: "issue id", body: call(1, "get_issue", map[string]any{"id": "ISSUE-" + strings.Repeat("9", 900_000)}), status: 200,
			want: `issue ISSUE-999`},
		{name: "argument value", body: call(1, "create_issue", map[string]any{"project": "web", "title": huge, "idempotency_key": "k"}), status: 200,
			want: `maxLength`},
		{name: "argument name", body: call(1, "get_issue", map[string]any{"id": "ISSUE-1", huge: 1}), status: 200,
			want: `unexpected additional properties`},
		{name: "version tag", body: `{"jsonrpc":"` + huge + `","id":1,"method":"tools/list"}`, status: 400, want: `invalid message version tag`},
		{name: "duplicate key", body: `{"jsonrpc":"2.0","id":1,"` + huge[:400_000] + `":1,"` + huge[:400_000] + `":2}`, status: 400, want: `not strict JSON`},
		{name: "error data", body: rpc(map[string]any{"id": 1, "method": "resources/read", "params": map[string]any{"uri": "file:///" + huge}}), status: 200,
			want: `"data":{"uri":"file:///ZZZ`},
		{name: "protocol version in _meta", body: rpc(map[string]any{"id": 1, "method": "tools/list", "params": map[string]any{
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": huge}}}),
			headers: []string{"Mcp-Protocol-Version", era2026}, status: 400, want: `does not match`},
		{name: "Last-Event-ID header, stateful", stateful: true, headers: []string{"Last-Event-ID", strings.Repeat("Z", 30_000)},
			status: 400, want: `malformed Last-Event-ID "ZZZ`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, &fixtureOptions{server: issues.Options{Stateful: tt.stateful}})
			tok := f.token(t, "acme", "alice", issues.ScopeRead, issues.ScopeWrite)
			session := ""
			if tt.stateful {
				init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
				session = f.post(t, tok, init).header.Get("Mcp-Session-Id")
				f.post(t, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", session)
			}
			var got httpResult
			if tt.body == "" {
				h := append([]string{"Authorization", "Bearer " + tok, "Accept", "text/event-stream",
					"Mcp-Session-Id", session, "Mcp-Protocol-Version", era2025}, tt.headers...)
				got = f.send(t, http.MethodGet, issues.Endpoint, nil, h...)
			} else {
				h := tt.headers
				if session != "" {
					h = append(h, "Mcp-Session-Id", session)
				}
				got = f.post(t, tok, tt.body, h...)
			}
			if got.status != tt.status || !strings.Contains(got.body, tt.want) {
				t.Errorf("answer %d %.600s; want %d containing %s", got.status, got.body, tt.status, tt.want)
			}
			if len(got.body) > 2048 || strings.Contains(got.body, long) {
				t.Errorf("the answer repeats the request: %d bytes: %.600s", len(got.body), got.body)
			}
			if n := len(f.logs.String()); n > 64<<10 {
				t.Errorf("the server log grew by %d bytes", n)
			}
		})
	}
}

// TestEchoesLeaveResultsAlone: a successful result is never cut, however
// long; only errors are.
func TestEchoesLeaveResultsAlone(t *testing.T) {
	f := start(t, nil)
	cs := f.connect(t, f.token(t, "acme", "alice", issues.ScopeRead, issues.ScopeWrite), era2025, era2025)
	body := strings.Repeat("long body ", 999)
	var created issues.CreateIssueOutput
	if msg := call(t, cs, "create_issue", map[string]any{"project": "web", "title": "t", "body": body, "idempotency_key": "k-1"}, &created); msg != "" {
		t.Fatalf("create_issue: %s", msg)
	}
	var got issues.Issue
	if msg := call(t, cs, "get_issue", map[string]any{"id": created.Issue.ID}, &got); msg != "" || got.Body != body {
		t.Errorf("get_issue = %q, body of %d bytes; want the whole %d bytes", msg, len(got.Body), len(body))
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// What a new user runs into first: flags in the order other tools take
// them, messages that say what happened once and before anything else,
// and times a person can read.

// TestHostFlagsBeforeTheCommand: the flags every command takes may come
// before it, as other tools allow (`airlock --json tools`); a command's
// own flag there is refused with the order that works.
func TestHostFlagsBeforeTheCommand(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "other.yaml"), `servers:
  - id: ws
    command: airlock
    args: [server, workspace]
    allowed_tools: [read_file]
policy:
  tools:
    - {server: ws, tool: read_file, effect: read}
`)
	r := runCLI(t, dir, "", "--json", "tools").want(t, 0)
	if tools := decode(t, r.stdout)["tools"].([]any); len(tools) != 3 {
		t.Errorf("airlock --json tools = %v, want the built-in default's three tools", tools)
	}
	r = runCLI(t, dir, "", "--config", "other.yaml", "--json", "call", "ws__read_file", "--args", `{"path":"hello.txt"}`).want(t, 0)
	if out := decode(t, r.stdout); out["status"] != "ok" || !strings.Contains(r.stdout, `hello\\nworld`) {
		t.Errorf("call with host flags first = %v", out)
	}
	r = runCLI(t, dir, "", "--config=other.yaml", "approvals", "list", "--json").want(t, 0)
	if _, ok := decode(t, r.stdout)["approvals"]; !ok {
		t.Errorf("approvals list = %s", r.stdout)
	}
	r = runCLI(t, dir, "", "--args", "{}", "call", "ws__read_file").want(t, 2)
	if want := "flag provided but not defined: -args: before the command go only the flags every command takes " +
		"(--config, --state, --allow, --json, --verbose, --task, --trace); the command's own flags follow it: airlock COMMAND [FLAGS]"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	trace := filepath.Join(dir, "wire.jsonl")
	runCLI(t, dir, "", "--trace", trace, "--config", "other.yaml", "tools").want(t, 0)
	if b, err := os.ReadFile(trace); err != nil || !strings.Contains(string(b), `"tools/list"`) {
		t.Errorf("--trace before the command: trace = %.200q, %v; want the messages", b, err)
	}
	r = runCLI(t, dir, "", "--json").want(t, 2)
	if !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("no command after the flags: stderr = %q, want the usage", r.stderr)
	}
}

// TestAuthLoginWithoutOAuthSaysNothingFirst: a login that cannot happen
// says why, and never first that it waits for a browser.
func TestAuthLoginWithoutOAuthSaysNothingFirst(t *testing.T) {
	dir := fsWorkdir(t)
	for _, server := range []string{"fs", "nope"} {
		r := runCLI(t, dir, "", "auth", "login", server).want(t, exitUsage)
		if strings.Contains(r.stderr, "browser") || strings.Contains(r.stderr, "logging in") {
			t.Errorf("auth login %s: stderr = %q; want only why it cannot log in", server, r.stderr)
		}
	}
}

// TestAllowForADisabledServer: --allow naming a server its mcpServers file
// disables is an error that names it, not silently ignored.
func TestAllowForADisabledServer(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {
  "ws": {"command": "airlock", "args": ["server", "workspace"]},
  "old": {"command": "airlock", "args": ["server", "workspace"], "disabled": true}
}}`)
	r := runCLI(t, dir, "", "tools", "--config", ".mcp.json", "--allow", "ws:read_file,old:read_file").want(t, exitUsage)
	if want := `--allow "old:read_file": server "old" is disabled in .mcp.json ("disabled": true), so it is not started: enable it there, or leave it out of --allow`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
}

// TestYAMLTabSaysTab: a tab in indentation, which nobody sees, is named.
func TestYAMLTabSaysTab(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), "servers:\n\t- id: fs\n\t  command: airlock\n")
	r := runCLI(t, dir, "", "tools").want(t, exitUsage)
	if want := "airlock.yaml:2: tabs are not allowed for indentation in YAML; use spaces"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
}

// TestErrorsNameTheirSubjectOnce: an approval or journal record that is
// unknown or already settled is named once in the error.
func TestErrorsNameTheirSubjectOnce(t *testing.T) {
	dir := decisionsRepo(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"approvals", "deny", "apr_one"}, "airlock: deny approval apr_one: it is denied: conflict\n"},
		{[]string{"approvals", "approve", "apr_none"}, "airlock: approval apr_none: not found\n"},
		{[]string{"recovery", "resolve", "rec_one", "--outcome", "applied"}, "airlock: resolve rec_one: it was already resolved as applied: conflict\n"},
		{[]string{"recovery", "show", "rec_none"}, "airlock: record rec_none: not found\n"},
	} {
		r := runCLI(t, dir, "", tt.args...).want(t, exitUsage)
		if !strings.HasSuffix(r.stderr, tt.want) {
			t.Errorf("airlock %s: stderr = %q, want %q", strings.Join(tt.args, " "), r.stderr, tt.want)
		}
	}
}

// decisionsRepo is a task repository (taskRepo) whose configuration acts
// for acme/ada, with a denied approval request apr_one and a journal
// record rec_one resolved as applied in its store.
func decisionsRepo(t *testing.T) string {
	t.Helper()
	dir := taskRepo(t)
	path := filepath.Join(dir, "airlock.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b)+"tenancy: {tenant: acme, user: ada}\n")
	st, err := airlock.OpenStore(filepath.Join(dir, ".airlock"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	who := airlock.Actor{Principal: airlock.Principal{Tenant: "acme", User: "ada"}, By: "tester"}
	if err := st.Approvals().Create(ctx, store.Approval{ID: "apr_one", Server: "workspace", Tool: "workspace__read_file", Digest: "d",
		ExpiresAt: time.Now().Add(time.Hour), Tenant: who.Principal.Tenant, User: who.Principal.User}); err != nil {
		t.Fatal(err)
	}
	if err := airlock.DecideApproval(ctx, st, "apr_one", false, "", who); err != nil {
		t.Fatal(err)
	}
	if err := st.Journal().Begin(ctx, store.Intent{ID: "rec_one", Server: "workspace", Tool: "workspace__write_file", Effect: "write",
		Tenant: who.Principal.Tenant, User: who.Principal.User}); err != nil {
		t.Fatal(err)
	}
	if err := st.Journal().End(ctx, "rec_one", store.OutcomeUnknown, "no answer"); err != nil {
		t.Fatal(err)
	}
	if err := airlock.ResolveRecovery(ctx, st, "rec_one", store.ResolutionApplied, "", who); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTimesAreLocalInTextAndUTCInJSON: every command shows a person local
// time with its zone, and gives a script RFC 3339 in UTC.
func TestTimesAreLocalInTextAndUTCInJSON(t *testing.T) {
	const zone = "Asia/Kolkata" // +05:30, all year
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	dir := decisionsRepo(t)
	tz := []string{"TZ=" + zone}
	shown := func(rfc3339 string) string {
		t.Helper()
		at, err := time.Parse(time.RFC3339Nano, rfc3339)
		if err != nil || !strings.HasSuffix(rfc3339, "Z") {
			t.Fatalf("JSON time %q is not RFC 3339 in UTC (%v)", rfc3339, err)
		}
		return at.In(loc).Format("2006-01-02 15:04:05 MST")
	}
	check := func(what, text, rfc3339 string) {
		t.Helper()
		if want := shown(rfc3339); !strings.Contains(text, want) {
			t.Errorf("%s:\n%s\nwant the time as %q", what, text, want)
		}
	}

	r := runCLIEnv(t, dir, tz, "", "approvals", "list", "--all", "--json").want(t, 0)
	apr := decode(t, r.stdout)["approvals"].([]any)[0].(map[string]any)
	for _, cmd := range [][]string{{"approvals", "list", "--all"}, {"approvals", "show", "apr_one"}} {
		check(strings.Join(cmd, " "), runCLIEnv(t, dir, tz, "", cmd...).want(t, 0).stdout, apr["expires_at"].(string))
	}
	if _, ok := apr["created_at"].(string); !ok {
		t.Errorf("approval = %v, want created_at", apr)
	}
	shown(apr["created_at"].(string))
	shown(apr["decided_at"].(string))

	r = runCLIEnv(t, dir, tz, "", "recovery", "list", "--all", "--json").want(t, 0)
	rec := decode(t, r.stdout)["records"].([]any)[0].(map[string]any)
	shown(rec["resolved_at"].(string))
	for _, cmd := range [][]string{{"recovery", "list", "--all"}, {"recovery", "show", "rec_one"}} {
		check(strings.Join(cmd, " "), runCLIEnv(t, dir, tz, "", cmd...).want(t, 0).stdout, rec["created_at"].(string))
	}

	r = runCLIEnv(t, dir, tz, "", "audit", "--json").want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	first := decode(t, lines[0])["time"].(string)
	check("audit", runCLIEnv(t, dir, tz, "", "audit").want(t, 0).stdout, first)

	runCLI(t, dir, "", "task", "open", "t1").want(t, 0)
	r = runCLIEnv(t, dir, tz, "", "task", "list", "--json").want(t, 0)
	task := decode(t, r.stdout)["tasks"].([]any)[0].(map[string]any)
	check("task list", runCLIEnv(t, dir, tz, "", "task", "list").want(t, 0).stdout, task["created_at"].(string))
	r = runCLIEnv(t, dir, tz, "", "status", "--task", "t1", "--json").want(t, 0)
	shown(decode(t, r.stdout)["servers"].([]any)[0].(map[string]any)["last_ok"].(string))
	runCLI(t, dir, "", "task", "close", "t1").want(t, 0)
}

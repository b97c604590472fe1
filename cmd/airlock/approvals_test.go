package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestDenyHoldsAndRememberForgets: from the command line, a denied call
// is refused at once when made again (naming who denied it and when);
// approve --remember grants the call and lets later calls of the tool run
// without asking, for that principal only; rules lists what is
// remembered, forget takes it back; both act for their principal, or any
// as an operator.
func TestDenyHoldsAndRememberForgets(t *testing.T) {
	dir := workdir(t)
	as := twoTenancies(t, dir, "read_file")
	read := func(who, path string, extra ...string) []string {
		return as(who, append([]string{"call", "ws__read_file", "--args", `{"path":"` + path + `"}`}, extra...)...)
	}

	// Deny: the same call is denied, other arguments are asked.
	r := runCLI(t, dir, "", read("carol", "nope", "--json")...).want(t, 5)
	id, _ := decode(t, r.stdout)["approval_id"].(string)
	r = runCLI(t, dir, "", as("carol", "approvals", "deny", id)...).want(t, 0)
	if !strings.Contains(r.stdout, "Denied "+id+": the same call (ws__read_file, same arguments) is refused without asking until ") {
		t.Errorf("deny said %q", r.stdout)
	}
	r = runCLI(t, dir, "", read("carol", "nope", "--json")...).want(t, 1)
	out := decode(t, r.stdout)
	msg, _ := out["content"].(string)
	if out["status"] != "denied" || out["approval_id"] != id ||
		!regexp.MustCompile(`^ws__read_file refused: \S+ denied this call at \S+Z \(approval `+id+`\); the same call is refused until \S+Z$`).MatchString(msg) {
		t.Errorf("the denied call again = %s", r.stdout)
	}
	runCLI(t, dir, "", read("eve", "nope")...).want(t, 5)

	// Remember: this call runs on its grant, others of the tool without
	// asking; eve is asked still.
	r = runCLI(t, dir, "", read("carol", "hello.txt", "--json")...).want(t, 5)
	id, _ = decode(t, r.stdout)["approval_id"].(string)
	runCLI(t, dir, "", as("eve", "approvals", "approve", id, "--remember")...).want(t, 2)
	r = runCLI(t, dir, "", as("carol", "approvals", "approve", id, "--remember", "--json")...).want(t, 0)
	approved := decode(t, r.stdout)
	rule, _ := approved["rule"].(map[string]any)
	ruleID, _ := rule["id"].(string)
	if approved["id"] != id || approved["status"] != "granted" || !strings.HasPrefix(ruleID, "rule_") || rule["user"] != "carol" {
		t.Fatalf("approve --remember --json = %s", r.stdout)
	}
	r = runCLI(t, dir, "", read("carol", "hello.txt", "--json")...).want(t, 0)
	if decode(t, r.stdout)["approval_id"] != id {
		t.Errorf("the approved call = %s, want it to run on %s", r.stdout, id)
	}
	if r := runCLI(t, dir, "", read("carol", "missing.txt")...); r.code != 1 || !strings.Contains(r.stderr, "tool_error") {
		t.Errorf("another remembered call: exit %d, %s; want a tool error, not a question", r.code, r.stderr)
	}
	r = runCLI(t, dir, "", read("carol", "hello.txt")...).want(t, 0)
	if !strings.Contains(r.stdout, "hello") {
		t.Errorf("a remembered call = %q", r.stdout)
	}
	runCLI(t, dir, "", read("eve", "hello.txt")...).want(t, 5)
	runCLI(t, dir, "", read("carol", "nope")...).want(t, 1) // the denial is more specific

	// Rules: each principal sees its own; an operator sees all.
	r = runCLI(t, dir, "", as("carol", "approvals", "rules")...).want(t, 0)
	for _, want := range []string{"ID", "SERVER", "TOOL", "FOR", ruleID, "ws__read_file", "acme/carol"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("approvals rules lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, dir, "", as("eve", "approvals", "rules")...).want(t, 0)
	if strings.TrimSpace(r.stdout) != "No answers are remembered." {
		t.Errorf("eve's rules = %q", r.stdout)
	}
	r = runCLI(t, dir, "", as("eve", "approvals", "rules", "--all-principals", "--json")...).want(t, 0)
	if !strings.Contains(r.stdout, ruleID) {
		t.Errorf("the operator's rules = %s", r.stdout)
	}

	// Forget: not eve's to forget; carol's call is asked again.
	r = runCLI(t, dir, "", as("eve", "approvals", "forget", ruleID)...).want(t, 2)
	if !strings.Contains(r.stderr, "rule "+ruleID+": it was asked for another tenant or user than evilcorp/eve") {
		t.Errorf("eve forgetting: %q", r.stderr)
	}
	r = runCLI(t, dir, "", as("carol", "approvals", "forget", ruleID, "--note", "too broad")...).want(t, 0)
	if !strings.Contains(r.stdout, "Forgot "+ruleID+": calls of ws__read_file on ws for acme/carol are asked about again.") {
		t.Errorf("forget said %q", r.stdout)
	}
	runCLI(t, dir, "", as("carol", "approvals", "forget", ruleID)...).want(t, 2)
	runCLI(t, dir, "", read("carol", "hello.txt")...).want(t, 5)

	r = runCLI(t, dir, "", as("carol", "audit", "--json")...).want(t, 0)
	for _, ev := range []string{`"event":"rule_remembered"`, `"event":"rule_used"`, `"event":"rule_forgotten"`, `"note":"too broad"`} {
		if !strings.Contains(r.stdout, ev) {
			t.Errorf("the audit trail lacks %s", ev)
		}
	}
}

// TestRememberRefusedWithHooks: with policy.hooks configured, an answer is
// not remembered: it would answer the hooks' questions too.
func TestRememberRefusedWithHooks(t *testing.T) {
	dir := workdir(t)
	writeFile(t, dir+"/airlock.yaml", `servers:
  - id: ws
    command: airlock
    args: [server, workspace]
    allowed_tools: [read_file]
policy:
  hooks:
    - {command: [/bin/true]}
`)
	r := runCLI(t, dir, "", "approvals", "approve", "apr_0", "--remember").want(t, 2)
	if !strings.Contains(r.stderr, "approve --remember: policy.hooks are configured ("+dir+"/airlock.yaml:8)") ||
		!strings.Contains(r.stderr, "approve without --remember") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

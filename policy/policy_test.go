package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// serversYAML configures the servers the tests' policies name. The policy
// section starts on line 5.
const serversYAML = `servers:
  - {id: fs, command: x, allowed_tools: ["*"]}
  - {id: gh, command: x, allowed_tools: ["*"]}
  - {id: web, command: x, allowed_tools: ["*"]}
`

// compile reads policyYAML through the config package, as the host does,
// with files written beside the configuration.
func compile(t *testing.T, policyYAML string, files map[string]string) *Policy {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte(serversYAML+policyYAML), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(&cfg.Policy, cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// args decodes JSON arguments the way the host does: numbers as
// json.Number.
func args(t *testing.T, text string) map[string]any {
	t.Helper()
	if text == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("test arguments %s: %v", text, err)
	}
	return m
}

// call is a request for a tool with the default local name.
func call(server, remote string, a map[string]any) Request {
	return Request{Server: server, Tool: server + "__" + remote, RemoteTool: remote, Arguments: a,
		Principal: Principal{Tenant: "acme", User: "alice"}}
}

func ptr[T any](v T) *T { return &v }

// checkDecision compares a decision with want; want.Reason is compared only
// when it is set.
func checkDecision(t *testing.T, got, want Decision) {
	t.Helper()
	if want.Reason == "" {
		got.Reason = ""
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decide mismatch (-want +got):\n%s", diff)
	}
}

// ruleCase is a request decided under policy.tools classifying fs's
// read_file, write_file and delete_file, and the rules given.
type ruleCase struct {
	name  string
	rules string // policy.rules entries, starting on line 11
	req   Request
	want  Decision
}

// checkRules decides each case's request under its rules.
func checkRules(t *testing.T, tests []ruleCase) {
	t.Helper()
	const tools = `policy:
  tools:
    - {server: fs, tool: read_file, effect: read}
    - {server: fs, tool: write_file, effect: write, idempotent: true}
    - {server: fs, tool: delete_file, effect: write}
`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tools
			if tt.rules != "" {
				src += "  rules:\n" + tt.rules
			}
			p := compile(t, src, nil)
			checkDecision(t, p.Decide(tt.req), tt.want)
		})
	}
}

func TestDecideRules(t *testing.T) {
	checkRules(t, []ruleCase{
		// No rule: the effect decides.
		{"default read", "", call("fs", "read_file", nil),
			Decision{Verdict: Allow, Effect: Read, Rule: "default", Reason: "no rule matches; a read tool is allowed by default"}},
		{"default write", "", call("fs", "write_file", nil),
			Decision{Verdict: Ask, Effect: Write, Idempotent: true, Rule: "default", Reason: "no rule matches; a write tool needs a person's approval by default"}},
		{"default external", "", call("gh", "create_issue", nil),
			Decision{Verdict: Ask, Effect: External, Rule: "default", Reason: "no rule matches; an external tool (every tool policy.tools does not classify) needs a person's approval by default"}},
		{"rule for another server", "    - {server: gh, decision: deny}\n", call("fs", "write_file", nil),
			Decision{Verdict: Ask, Effect: Write, Idempotent: true, Rule: "default"}},
		{"names are case-sensitive", "    - {tool: Write_File, decision: allow}\n", call("fs", "write_file", nil),
			Decision{Verdict: Ask, Effect: Write, Idempotent: true, Rule: "default"}},

		// The server's annotations change nothing.
		{"read-only hint on a write tool", "", withHints(call("fs", "write_file", nil), &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false)}),
			Decision{Verdict: Ask, Effect: Write, Idempotent: true, Rule: "default"}},
		{"read-only hint on an unclassified tool", "", withHints(call("gh", "list_issues", nil), &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}),
			Decision{Verdict: Ask, Effect: External, Rule: "default"}},
		{"idempotent hint", "", withHints(call("fs", "delete_file", nil), &mcp.ToolAnnotations{IdempotentHint: true}),
			Decision{Verdict: Ask, Effect: Write, Rule: "default"}},

		// The most specific rule wins.
		{"server beats everything", "    - {decision: deny}\n    - {server: fs, decision: allow}\n", call("fs", "read_file", nil),
			Decision{Verdict: Allow, Effect: Read, Rule: "policy.rules[1] (airlock.yaml:12)", Reason: "allowed by policy.rules[1] (airlock.yaml:12)"}},
		{"tool glob beats server", "    - {server: fs, decision: deny}\n    - {server: fs, tool: \"write_*\", decision: allow}\n    - {decision: deny}\n", call("fs", "write_file", nil),
			Decision{Verdict: Allow, Effect: Write, Idempotent: true, Rule: "policy.rules[1] (airlock.yaml:12)"}},
		{"exact beats glob", "    - {tool: write_file, decision: allow}\n    - {tool: \"write_fil*\", decision: deny}\n", call("fs", "write_file", nil),
			Decision{Verdict: Allow, Effect: Write, Idempotent: true, Rule: "policy.rules[0] (airlock.yaml:11)"}},
		{"more literals beat fewer", "    - {tool: \"w*\", decision: allow}\n    - {tool: \"write_*\", decision: deny}\n", call("fs", "write_file", nil),
			Decision{Verdict: Deny, Effect: Write, Idempotent: true, Rule: "policy.rules[1] (airlock.yaml:12)", Reason: "denied by policy.rules[1] (airlock.yaml:12)"}},
		{"local name beats remote name", "    - {tool: write_file, decision: deny}\n    - {tool: fs__write_file, decision: allow}\n", call("fs", "write_file", nil),
			Decision{Verdict: Allow, Effect: Write, Idempotent: true, Rule: "policy.rules[1] (airlock.yaml:12)"}},
		{"tool glob matches the local name", "    - {tool: \"fs__*\", decision: deny}\n", call("fs", "read_file", nil),
			Decision{Verdict: Deny, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)"}},
		{"tool before server", "    - {server: fs, tool: \"*\", decision: allow}\n    - {server: \"*\", tool: \"delete_*\", decision: deny}\n", call("fs", "delete_file", nil),
			Decision{Verdict: Deny, Effect: Write, Rule: "policy.rules[1] (airlock.yaml:12)"}},
		{"server decides between equal tools", "    - {server: fs, tool: read_file, decision: ask}\n    - {server: \"*\", tool: read_file, decision: deny}\n", call("fs", "read_file", nil),
			Decision{Verdict: Ask, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)", Reason: "policy.rules[0] (airlock.yaml:11) asks for a person's approval"}},
		{"longer server glob", "    - {server: \"f*\", tool: read_file, decision: deny}\n    - {server: \"*\", tool: read_file, decision: allow}\n", call("fs", "read_file", nil),
			Decision{Verdict: Deny, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)"}},

		// Ties go to the stricter decision.
		{"tie allow and deny", "    - {server: fs, tool: \"w*\", decision: allow}\n    - {server: fs, tool: \"*e\", decision: deny}\n", call("fs", "write_file", nil),
			Decision{Verdict: Deny, Effect: Write, Idempotent: true, Rule: "policy.rules[1] (airlock.yaml:12)"}},
		{"tie ask and allow", "    - {tool: \"*_file\", decision: ask}\n    - {tool: \"read_*\", decision: allow}\n", call("fs", "read_file", nil),
			Decision{Verdict: Ask, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)"}},
		{"tie of equal decisions goes to the first", "    - {tool: \"read_*\", decision: ask}\n    - {tool: \"*_file\", decision: ask}\n", call("fs", "read_file", nil),
			Decision{Verdict: Ask, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)"}},
		{"tie with a failing constraint", "    - {tool: \"*_file\", decision: ask}\n    - tool: \"read_*\"\n      decision: allow\n      args: [{pointer: /path, allow: [\"src/**\"]}]\n", call("fs", "read_file", map[string]any{"path": "etc/x"}),
			Decision{Verdict: Deny, Effect: Read, Rule: "policy.rules[1] (airlock.yaml:12)",
				Reason: `denied by policy.rules[1] (airlock.yaml:12), args[0] (airlock.yaml:14): /path is outside the allowed paths ("src/**")`}},
		{"a less specific deny does not apply", "    - {decision: deny}\n    - {server: fs, tool: read_file, decision: allow}\n", call("fs", "read_file", nil),
			Decision{Verdict: Allow, Effect: Read, Rule: "policy.rules[1] (airlock.yaml:12)"}},
	})
}

func withHints(r Request, a *mcp.ToolAnnotations) Request {
	r.Annotations = a
	return r
}

func TestClassify(t *testing.T) {
	p := compile(t, "policy:\n  tools:\n    - {server: fs, tool: read_file, effect: read}\n    - {server: fs, tool: write_file, effect: write, idempotent: true}\n    - {server: gh, tool: search, effect: external, idempotent: true}\n", nil)
	tests := []struct {
		server, tool string
		effect       Effect
		idempotent   bool
	}{
		{"fs", "read_file", Read, false},
		{"fs", "write_file", Write, true},
		{"gh", "search", External, true},
		{"gh", "read_file", External, false},     // classified for another server only
		{"fs", "fs__read_file", External, false}, // the server's own name, not the local one
		{"fs", "READ_FILE", External, false},
	}
	for _, tt := range tests {
		e, idem := p.Classify(tt.server, tt.tool)
		if e != tt.effect || idem != tt.idempotent {
			t.Errorf("Classify(%q, %q) = %v, %v; want %v, %v", tt.server, tt.tool, e, idem, tt.effect, tt.idempotent)
		}
	}
}

func TestNilPolicy(t *testing.T) {
	var p *Policy
	checkDecision(t, p.Decide(call("fs", "read_file", nil)),
		Decision{Verdict: Ask, Effect: External, Rule: "default"})
	q, err := New(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	checkDecision(t, q.Decide(call("fs", "read_file", nil)),
		Decision{Verdict: Ask, Effect: External, Rule: "default"})
}

func TestStricter(t *testing.T) {
	tests := []struct{ a, b, want Verdict }{
		{Allow, Allow, Allow},
		{Allow, Ask, Ask},
		{Ask, Allow, Ask},
		{Ask, Deny, Deny},
		{Deny, Allow, Deny},
		{Allow, "bogus", "bogus"}, // an unknown verdict ranks as deny
	}
	for _, tt := range tests {
		if got := Stricter(tt.a, tt.b); got != tt.want {
			t.Errorf("Stricter(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestNewErrors checks a policy built in code rather than read by the
// config package, which checks the same things with line numbers.
func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.cedar"), []byte("permit(principal, action, resource)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rule := func(a ...config.ArgConstraint) config.Policy {
		return config.Policy{Rules: []config.Rule{{Server: "fs", Tool: "t", Decision: "allow", Source: "a.yaml:3", Args: a}}}
	}
	tests := []struct {
		name string
		p    config.Policy
		want string
	}{
		{"effect", config.Policy{Tools: []config.ToolClass{{Server: "fs", Tool: "t", Effect: "safe", Source: "a.yaml:2"}}},
			`policy.tools[0] (a.yaml:2): effect "safe" is not read, write or external`},
		{"duplicate class", config.Policy{Tools: []config.ToolClass{{Server: "fs", Tool: "t", Effect: "read"}, {Server: "fs", Tool: "t", Effect: "write"}}},
			`policy.tools[1]: tool "t" of server "fs" is classified twice`},
		{"decision", config.Policy{Rules: []config.Rule{{Decision: "maybe"}}},
			`policy.rules[0]: decision "maybe" is not allow, ask or deny`},
		{"pointer", rule(config.ArgConstraint{Pointer: "path", Enum: []string{"a"}, Source: "a.yaml:4"}),
			`policy.rules[0] (a.yaml:3): args[0] (a.yaml:4): pointer "path": a JSON Pointer into the arguments starts with /`},
		{"pointer escape", rule(config.ArgConstraint{Pointer: "/a~2", Enum: []string{"a"}}),
			`policy.rules[0] (a.yaml:3): args[0]: pointer "/a~2": ~ must be followed by 0 or 1`},
		{"pattern", rule(config.ArgConstraint{Pointer: "/p", Pattern: "a("}),
			"policy.rules[0] (a.yaml:3): args[0]: pattern: error parsing regexp: missing closing ): `^(?:a()$`"},
		{"glob", rule(config.ArgConstraint{Pointer: "/p", Allow: []string{"src/"}}),
			`policy.rules[0] (a.yaml:3): args[0]: allow glob "src/": ends with /; paths are matched without one`},
		{"unclean glob", rule(config.ArgConstraint{Pointer: "/p", Deny: []string{"a/../b"}}),
			`policy.rules[0] (a.yaml:3): args[0]: deny glob "a/../b": not clean: paths are cleaned before they are matched`},
		{"home glob", rule(config.ArgConstraint{Pointer: "/p", Allow: []string{"~/x"}}),
			`policy.rules[0] (a.yaml:3): args[0]: allow glob "~/x": starts with ~ or a drive letter, which no path is allowed to`},
		{"nothing", rule(config.ArgConstraint{Pointer: "/p"}),
			`policy.rules[0] (a.yaml:3): args[0]: constrains nothing: give allow, deny, enum or pattern`},
		{"cedar missing", config.Policy{Cedar: "nope.cedar", CedarSource: "a.yaml:9"},
			`policy.cedar (a.yaml:9): read "nope.cedar": it does not exist`},
		{"cedar syntax", config.Policy{Cedar: "bad.cedar"},
			`policy.cedar: parse "bad.cedar": parser error: parse error at <input>:2:1 "": exact got  want ;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&tt.p, dir)
			if err == nil {
				t.Fatalf("New succeeded, want %s", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("New error = %s\nwant %s", got, tt.want)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("New error shows the host path %s", dir)
			}
		})
	}
}

package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/config"
)

// read is a request to read the resource at uri from server.
func read(server, uri string) Request {
	return Request{Kind: KindResource, Server: server, Resource: uri, Principal: Principal{Tenant: "acme", User: "alice"}}
}

// prompt is a request to get a prompt with the default local name.
func prompt(server, remote string, a map[string]any) Request {
	return Request{Kind: KindPrompt, Server: server, Tool: server + "__" + remote, RemoteTool: remote, Arguments: a,
		Principal: Principal{Tenant: "acme", User: "alice"}}
}

func TestDecideResourcesAndPrompts(t *testing.T) {
	readDefault := Decision{Verdict: Allow, Effect: Read, Idempotent: true, Rule: "default", Reason: "no rule matches; reading a resource is allowed by default"}
	promptDefault := Decision{Verdict: Allow, Effect: Read, Idempotent: true, Rule: "default", Reason: "no rule matches; getting a prompt is allowed by default"}
	rule := func(i int, v Verdict) Decision {
		return Decision{Verdict: v, Effect: Read, Idempotent: true, Rule: fmt.Sprintf("policy.rules[%d] (airlock.yaml:%d)", i, 11+i)}
	}
	checkRules(t, []ruleCase{
		// No rule: reading and getting are allowed, and policy.tools
		// classifies neither.
		{"default read", "", read("fs", "file:///etc/passwd"), readDefault},
		{"default prompt", "", prompt("fs", "read_file", nil), promptDefault},

		// A rule of one kind never matches a request of another.
		{"resource rule, tool call", "    - {resource: \"*\", decision: deny}\n", call("fs", "read_file", nil),
			Decision{Verdict: Allow, Effect: Read, Rule: "default"}},
		{"resource rule, prompt get", "    - {resource: \"*\", decision: deny}\n", prompt("fs", "p", nil), promptDefault},
		{"prompt rule, tool call", "    - {prompt: \"*\", decision: deny}\n", call("fs", "read_file", nil),
			Decision{Verdict: Allow, Effect: Read, Rule: "default"}},
		{"prompt rule, resource read", "    - {prompt: \"*\", decision: deny}\n", read("fs", "x"), readDefault},
		{"tool rule, resource read", "    - {tool: \"*\", decision: deny}\n", read("fs", "x"), readDefault},
		{"tool rule, prompt get", "    - {server: fs, tool: \"*\", decision: deny}\n", prompt("fs", "p", nil), promptDefault},
		{"tool rule naming the prompt, prompt get", "    - {tool: fs__p, decision: deny}\n", prompt("fs", "p", nil), promptDefault},

		// A rule that names only a server matches all three.
		{"server rule, tool call", "    - {server: fs, decision: deny}\n", call("fs", "read_file", nil),
			Decision{Verdict: Deny, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)"}},
		{"server rule, resource read", "    - {server: fs, decision: deny}\n", read("fs", "file:///a"),
			Decision{Verdict: Deny, Effect: Read, Idempotent: true, Rule: "policy.rules[0] (airlock.yaml:11)", Reason: "denied by policy.rules[0] (airlock.yaml:11)"}},
		{"server rule, prompt get", "    - {server: fs, decision: ask}\n", prompt("fs", "p", nil),
			Decision{Verdict: Ask, Effect: Read, Idempotent: true, Rule: "policy.rules[0] (airlock.yaml:11)", Reason: "policy.rules[0] (airlock.yaml:11) asks for a person's approval"}},
		{"server rule for another server", "    - {server: gh, decision: deny}\n", read("fs", "file:///a"), readDefault},
		// Its args constrain tool calls only.
		{"server rule with args, resource read", "    - server: fs\n      decision: ask\n      args: [{pointer: /path, enum: [a]}]\n", read("fs", "file:///a"),
			rule(0, Ask)},
		{"server rule with args, prompt get", "    - server: fs\n      decision: allow\n      args: [{pointer: /path, enum: [a]}]\n", prompt("fs", "p", map[string]any{"path": "b"}),
			rule(0, Allow)},
		{"server rule with args, tool call", "    - server: fs\n      decision: allow\n      args: [{pointer: /path, enum: [a]}]\n", call("fs", "read_file", map[string]any{"path": "b"}),
			Decision{Verdict: Deny, Effect: Read, Rule: "policy.rules[0] (airlock.yaml:11)"}},

		// Resource globs: * within a segment, ** across.
		{"resource glob", "    - {server: fs, resource: \"file:///etc/**\", decision: deny}\n", read("fs", "file:///etc/a/b"), rule(0, Deny)},
		{"resource glob misses", "    - {server: fs, resource: \"file:///etc/**\", decision: deny}\n", read("fs", "file:///home/a"), readDefault},
		{"resource glob is case-sensitive", "    - {resource: \"file:///etc/**\", decision: deny}\n", read("fs", "file:///ETC/a"), readDefault},
		{"one star stays in a segment", "    - {resource: \"test://static/*\", decision: deny}\n", read("fs", "test://static/x/y"), readDefault},
		{"resource rule for another server", "    - {server: gh, resource: \"*\", decision: deny}\n", read("fs", "x"), readDefault},

		// The most specific rule wins, as for tools.
		{"resource beats server", "    - {server: fs, decision: deny}\n    - {server: fs, resource: \"file:///docs/**\", decision: allow}\n", read("fs", "file:///docs/a"),
			rule(1, Allow)},
		{"every resource ties with server, server decides", "    - {resource: \"*\", decision: ask}\n    - {server: fs, decision: deny}\n", read("fs", "file:///docs/a"),
			rule(1, Deny)},
		{"exact URI beats glob", "    - {resource: \"file:///docs/**\", decision: deny}\n    - {resource: \"file:///docs/a\", decision: allow}\n", read("fs", "file:///docs/a"),
			rule(1, Allow)},
		{"more literals win", "    - {resource: \"file:///**\", decision: deny}\n    - {resource: \"file:///docs/**\", decision: allow}\n", read("fs", "file:///docs/a"),
			rule(1, Allow)},
		{"equal resource rules: stricter", "    - {resource: \"file:///d*/a\", decision: allow}\n    - {resource: \"file:///*s/a\", decision: ask}\n", read("fs", "file:///docs/a"),
			rule(1, Ask)},
		{"prompt glob over the remote name", "    - {server: fs, decision: deny}\n    - {prompt: \"summ*\", decision: allow}\n", prompt("fs", "summarize", nil),
			rule(1, Allow)},
		{"prompt exact local name beats remote", "    - {prompt: summarize, decision: deny}\n    - {prompt: fs__summarize, decision: ask}\n", prompt("fs", "summarize", nil),
			rule(1, Ask)},
		{"prompt glob misses", "    - {prompt: \"summ*\", decision: deny}\n", prompt("fs", "greet", nil), promptDefault},
		// Tool rules stay as they were beside resource and prompt rules.
		{"tool call beside resource rules", "    - {resource: \"*\", decision: allow}\n    - {prompt: \"*\", decision: allow}\n    - {server: fs, tool: \"write_*\", decision: deny}\n", call("fs", "write_file", nil),
			Decision{Verdict: Deny, Effect: Write, Idempotent: true, Rule: "policy.rules[2] (airlock.yaml:13)"}},
	})
}

// TestRulesBuiltInGo: a Rule built in Go without ToolGiven still names a
// tool when its Tool is not "*"; with Tool "*" it names only a server.
func TestRulesBuiltInGo(t *testing.T) {
	p, err := New(&config.Policy{Rules: []config.Rule{
		{Server: "fs", Tool: "note", Decision: "deny", Source: "t:1"},
		{Server: "gh", Tool: "*", Decision: "deny", Source: "t:2"},
		{Server: "web", Resource: "a://**", Decision: "ask", Source: "t:3"},
	}}, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		req  Request
		want string
	}{
		{call("fs", "note", nil), "policy.rules[0] (t:1)"},
		{read("fs", "a://x"), "default"},
		{read("gh", "a://x"), "policy.rules[1] (t:2)"},
		{prompt("gh", "p", nil), "policy.rules[1] (t:2)"},
		{read("web", "a://x/y"), "policy.rules[2] (t:3)"},
		{call("web", "a", nil), "default"},
	}
	for _, tt := range tests {
		if got := p.Decide(tt.req).Rule; got != tt.want {
			t.Errorf("Decide(%+v).Rule = %s, want %s", tt.req, got, tt.want)
		}
	}
}

func TestNewResourceRuleErrors(t *testing.T) {
	tests := []struct {
		name string
		r    config.Rule
		want string
	}{
		{"tool and resource", config.Rule{Tool: "t", Resource: "a://*", Decision: "deny", Source: "a.yaml:3"},
			"policy.rules[0] (a.yaml:3): names more than one of a tool, a resource and a prompt: write one rule for each"},
		{"tool given and prompt", config.Rule{Tool: "*", ToolGiven: true, Prompt: "p", Decision: "deny"},
			"policy.rules[0]: names more than one of a tool, a resource and a prompt: write one rule for each"},
		{"resource and prompt", config.Rule{Resource: "*", Prompt: "p", Decision: "deny"},
			"policy.rules[0]: names more than one of a tool, a resource and a prompt: write one rule for each"},
		{"args on a resource rule", config.Rule{Resource: "*", Decision: "ask", Args: []config.ArgConstraint{{Pointer: "/p", Enum: []string{"a"}}}},
			"policy.rules[0]: args constrain tool calls only: remove them from a rule about a resource or a prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&config.Policy{Rules: []config.Rule{tt.r}}, "")
			if err == nil || err.Error() != tt.want {
				t.Errorf("New error = %v\nwant %s", err, tt.want)
			}
		})
	}
}

const cedarResources = `@id("no-secrets")
forbid (principal, action == Action::"resources/read", resource)
when { context.uri like "file:///secrets/*" };

@id("reads-of-docs")
permit (principal, action in Action::"read", resource == Server::"gh");

@id("no-admin-prompt")
forbid (principal, action == Action::"prompts/get", resource)
when { context.prompt == "fs__admin" || (context.arguments has mode && context.arguments.mode == "root") };
`

func TestCedarResourcesAndPrompts(t *testing.T) {
	p := compile(t, "policy:\n  rules:\n    - {server: fs, resource: \"file:///**\", decision: allow}\n    - {server: fs, prompt: \"*\", decision: allow}\n  cedar: policies.cedar\n",
		map[string]string{"policies.cedar": cedarResources})
	tests := []struct {
		name string
		req  Request
		want Decision
	}{
		{"rule allows", read("fs", "file:///docs/a"),
			Decision{Verdict: Allow, Effect: Read, Idempotent: true, Rule: "policy.rules[0] (airlock.yaml:7)"}},
		{"forbid over the URI overrides the rule", read("fs", "file:///secrets/key"),
			Decision{Verdict: Deny, Effect: Read, Idempotent: true, Rule: `cedar policy "no-secrets" (policies.cedar:1)`, Reason: `forbidden by cedar policy "no-secrets" (policies.cedar:1)`}},
		{"permit through the read group", read("gh", "gh://issues/1"),
			Decision{Verdict: Allow, Effect: Read, Idempotent: true, Rule: `cedar policy "reads-of-docs" (policies.cedar:5)`}},
		{"permit of a prompt through the read group", prompt("gh", "triage", nil),
			Decision{Verdict: Allow, Effect: Read, Idempotent: true, Rule: `cedar policy "reads-of-docs" (policies.cedar:5)`}},
		{"forbid over the prompt name", prompt("fs", "admin", nil),
			Decision{Verdict: Deny, Effect: Read, Idempotent: true, Rule: `cedar policy "no-admin-prompt" (policies.cedar:8)`}},
		{"forbid over a prompt argument", prompt("fs", "greet", map[string]any{"mode": "root"}),
			Decision{Verdict: Deny, Effect: Read, Idempotent: true, Rule: `cedar policy "no-admin-prompt" (policies.cedar:8)`}},
		{"forbid not applying", prompt("fs", "greet", map[string]any{"mode": "user"}),
			Decision{Verdict: Allow, Effect: Read, Idempotent: true, Rule: "policy.rules[1] (airlock.yaml:8)"}},
		// The tool call's action is still its local name: the resource
		// policies say nothing about it.
		{"tool call", call("web", "fetch", nil),
			Decision{Verdict: Ask, Effect: External, Rule: "default"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, p.Decide(tt.req), tt.want)
		})
	}
}

func TestSummaryResourcesAndPrompts(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		d    Decision
		want string
	}{
		{"resource", read("fs", "file:///etc/hosts"), Decision{Verdict: Ask, Effect: Read, Idempotent: true, Reason: "policy.rules[0] (airlock.yaml:9) asks for a person's approval"},
			`read resource "file:///etc/hosts" from server "fs"
decision: ask: policy.rules[0] (airlock.yaml:9) asks for a person's approval
`},
		{"resource with control characters", read("fs", "a://x\x1b[31m"), Decision{},
			`read resource "a://x\u001b[31m" from server "fs"
`},
		{"long resource", read("fs", "a://"+strings.Repeat("x", 3000)), Decision{},
			`read resource "a://` + strings.Repeat("x", maxSummaryURI-5) + `… (1006 more bytes) from server "fs"
`},
		{"prompt", prompt("gh", "triage", map[string]any{"issue": "12", "token": "sk-canary"}), Decision{Verdict: Ask, Effect: Read, Reason: "default asks"},
			`get prompt "gh__triage" (prompt "triage" of server "gh")
decision: ask: default asks
arguments:
  "issue": "12"
  "token": "[redacted]"
`},
		{"prompt without arguments", prompt("gh", "triage", nil), Decision{},
			`get prompt "gh__triage" (prompt "triage" of server "gh")
arguments: none
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Summary(tt.req, tt.d, redactToken)); diff != "" {
				t.Errorf("Summary mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnmatchedResourceRules: rules about resources and prompts name no
// tool, and are never reported as naming one.
func TestUnmatchedResourceRules(t *testing.T) {
	p := compile(t, `policy:
  rules:
    - {server: fs, resource: "file:///nowhere/**", decision: deny}
    - {server: fs, prompt: nothing_like_a_tool, decision: deny}
    - {server: fs, prompt: "x*", decision: deny}
    - {resource: "*", decision: ask}
    - {server: fs, decision: ask}
`, nil)
	cat := Catalog{Ready: []string{"fs", "gh", "web"}, Tools: []CatalogTool{{Server: "fs", Name: "fs__read_file", Remote: "read_file"}}}
	if got := p.Unmatched(cat, config.Audit{}); len(got) != 0 {
		t.Errorf("Unmatched = %v, want none", got)
	}
}

// TestResourceReasonsDoNotQuoteArguments: no reason quotes a prompt's
// argument values or a resource's URI past what the rule itself says.
func TestResourceReasonsDoNotQuoteArguments(t *testing.T) {
	p := compile(t, "policy:\n  rules:\n    - server: fs\n      decision: allow\n      args: [{pointer: /path, enum: [a]}]\n    - {server: gh, prompt: \"*\", decision: deny}\n", nil)
	for _, req := range []Request{
		prompt("fs", "p", map[string]any{"path": "sk-canary"}),
		prompt("gh", "p", map[string]any{"path": "sk-canary"}),
		prompt("web", "p", map[string]any{"path": "sk-canary"}),
		read("web", "file:///sk-canary"),
	} {
		if d := p.Decide(req); strings.Contains(d.Reason, "sk-canary") {
			t.Errorf("Decide(%+v).Reason = %s: quotes a value", req, d.Reason)
		}
	}
}

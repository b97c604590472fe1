package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParsePolicy(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.cedar"), []byte("permit(principal, action, resource);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := server + `  - id: fs
    command: y
    allowed_tools: ["*"]
policy:
  tools:
    - {server: fs, tool: read_file, effect: read}
    - {server: a, tool: "t", effect: write, idempotent: true}
    - {server: fs, tool: get.thing/x, effect: external, idempotent: false}
  rules:
    - {decision: deny}
    - server: "f*"
      tool: fs__write_file
      decision: allow
      args:
        - pointer: /path
          allow: [src/**, /abs/**, "**"]
          deny: ["**/.env"]
        - pointer: /mode
          enum: [a, "1", "true"]
          pattern: "[a-z]+"
        - {pointer: "/a~1b/~0c/0", pattern: x}
  cedar: p.cedar
  hooks:
    - command: [./hook, "--x", 1]
    - {command: [h], timeout: 250ms}
approvals: {ttl: 10m}
audit:
  record_values: [fs__read_file, a__t]
`
	cfg, err := Parse([]byte(src), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{
		Tools: []ToolClass{
			{Server: "fs", Tool: "read_file", Effect: "read", Source: "airlock.yaml:10"},
			{Server: "a", Tool: "t", Effect: "write", Idempotent: true, Source: "airlock.yaml:11"},
			{Server: "fs", Tool: "get.thing/x", Effect: "external", Source: "airlock.yaml:12"},
		},
		Rules: []Rule{
			{Server: "*", Tool: "*", Decision: "deny", Source: "airlock.yaml:14"},
			{Server: "f*", Tool: "fs__write_file", ToolGiven: true, Decision: "allow", Source: "airlock.yaml:15", Args: []ArgConstraint{
				{Pointer: "/path", Allow: []string{"src/**", "/abs/**", "**"}, Deny: []string{"**/.env"}, Source: "airlock.yaml:19"},
				{Pointer: "/mode", Enum: []string{"a", "1", "true"}, Pattern: "[a-z]+", Source: "airlock.yaml:22"},
				{Pointer: "/a~1b/~0c/0", Pattern: "x", Source: "airlock.yaml:25"},
			}},
		},
		Cedar:       "p.cedar",
		CedarSource: "airlock.yaml:26",
		Hooks: []Hook{
			{Command: []string{"./hook", "--x", "1"}, Timeout: 5 * time.Second, Source: "airlock.yaml:28"},
			{Command: []string{"h"}, Timeout: 250 * time.Millisecond, Source: "airlock.yaml:29"},
		},
	}
	if diff := cmp.Diff(want, cfg.Policy); diff != "" {
		t.Errorf("Policy mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Approvals{TTL: 10 * time.Minute}, cfg.Approvals); diff != "" {
		t.Errorf("Approvals mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Audit{RecordValues: []string{"fs__read_file", "a__t"}, RecordValueSources: []string{"airlock.yaml:32", "airlock.yaml:32"}}, cfg.Audit); diff != "" {
		t.Errorf("Audit mismatch (-want +got):\n%s", diff)
	}
}

func TestParsePolicyImportedServer(t *testing.T) {
	// A policy may name servers that an import brings.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{"mcpServers": {"gh": {"command": "gh"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "import: [mcp.json]\npolicy:\n  tools: [{server: gh, tool: x, effect: read}]\n  rules: [{server: g*, decision: ask}]\n"
	cfg, err := Parse([]byte(src), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cfg.Policy.Tools) + len(cfg.Policy.Rules); got != 2 {
		t.Errorf("got %d policy entries, want 2", got)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []errorCase{
		{"policy not mapping", "policy: [a]\n", []string{
			"airlock.yaml:5: policy: must be a mapping (key: value lines), not a list"}},
		{"unknown policy key", "policy: {rule: []}\n", []string{
			`airlock.yaml:5: policy.rule: unknown key; did you mean "rules"?`}},
		{"rules at top", "rules: []\n", []string{
			"airlock.yaml:5: rules: unknown key here: it belongs under policy:"}},
		{"ttl at top", "ttl: 1h\n", []string{
			"airlock.yaml:5: ttl: unknown key here: it belongs under approvals:"}},
		{"effect in a rule", "policy:\n  rules: [{decision: ask, effect: read}]\n", []string{
			"airlock.yaml:6: policy.rules[0].effect: unknown key here: it belongs in an entry under policy.tools"}},

		// policy.tools
		{"tools required keys", "policy:\n  tools: [{}]\n", []string{
			"airlock.yaml:6: policy.tools[0].server: is required: give the id of the server",
			"airlock.yaml:6: policy.tools[0].tool: is required: give the server's own name for the tool",
			"airlock.yaml:6: policy.tools[0].effect: is required: read, write or external"}},
		{"tools bad values", "policy:\n  tools:\n    - {server: b, tool: \"read_*\", effect: safe, idempotent: yes}\n", []string{
			`airlock.yaml:7: policy.tools[0].server: there is no server "b" (servers: a)`,
			`airlock.yaml:7: policy.tools[0].tool: "read_*": patterns are not supported here: classify each tool by its exact name, so that a tool a server adds later is not classified without review`,
			`airlock.yaml:7: policy.tools[0].effect: must be read, write or external, not "safe"`,
			"airlock.yaml:7: policy.tools[0].idempotent: must be true or false"}},
		{"tools bad server id", "policy:\n  tools: [{server: \"a b\", tool: t, effect: read}]\n", []string{
			`airlock.yaml:6: policy.tools[0].server: "a b" is not a valid server id: use 1 to 32 letters, digits, _ or -`}},
		{"tools duplicate", "policy:\n  tools:\n    - {server: a, tool: t, effect: read}\n    - {server: a, tool: t, effect: write}\n", []string{
			`airlock.yaml:8: policy.tools[1]: tool "t" of server "a" is already classified at line 7`}},

		// policy.rules
		{"rule decision missing", "policy:\n  rules: [{tool: x}]\n", []string{
			"airlock.yaml:6: policy.rules[0].decision: is required: allow, ask or deny"}},
		{"rule bad values", "policy:\n  rules:\n    - {server: \"a.b\", tool: \" x\", decision: maybe}\n", []string{
			`airlock.yaml:7: policy.rules[0].server: "a.b" is not a valid server id: use 1 to 32 letters, digits, _ or -`,
			`airlock.yaml:7: policy.rules[0].tool: " x" has leading or trailing spaces`,
			`airlock.yaml:7: policy.rules[0].decision: must be allow, ask or deny, not "maybe"`}},
		{"rule server glob bad", "policy:\n  rules: [{server: \"a.*\", decision: ask}]\n", []string{
			`airlock.yaml:6: policy.rules[0].server: "a.*" is not a server id or a pattern of one: use letters, digits, _, - and *`}},
		{"rule server unknown", "policy:\n  rules:\n    - {server: fss, decision: deny}\n    - {server: \"z*\", decision: deny}\n", []string{
			`airlock.yaml:7: policy.rules[0].server: "fss" matches no server (servers: a)`,
			`airlock.yaml:8: policy.rules[1].server: "z*" matches no server (servers: a)`}},
		{"rule empty globs", "policy:\n  rules: [{server: \"\", tool: \"\", decision: ask}]\n", []string{
			"airlock.yaml:6: policy.rules[0].server: must not be empty: leave the key out to match every server",
			"airlock.yaml:6: policy.rules[0].tool: must not be empty: leave the key out to match every tool"}},
		{"deny with args", "policy:\n  rules: [{decision: deny, args: [{pointer: /p, deny: [x]}]}]\n", []string{
			"airlock.yaml:6: policy.rules[0].args: a deny rule denies whatever the arguments: remove args, or make the rule allow or ask"}},
		{"args empty", "policy:\n  rules: [{decision: ask, args: []}]\n", []string{
			"airlock.yaml:6: policy.rules[0].args: must list at least one constraint; leave the key out for none"}},
		{"arg constrains nothing", "policy:\n  rules:\n    - decision: ask\n      args: [{pointer: /p}]\n", []string{
			"airlock.yaml:8: policy.rules[0].args[0]: constrains nothing: give allow or deny (path globs), enum or pattern"}},
		{"arg pointer", "policy:\n  rules:\n    - decision: ask\n      args:\n        - {enum: [a]}\n        - {pointer: \"\", enum: [a]}\n        - {pointer: path, enum: [a]}\n        - {pointer: /a~2, enum: [a]}\n        - {pointer: /a~, enum: [a]}\n", []string{
			"airlock.yaml:9: policy.rules[0].args[0].pointer: is required: give a JSON Pointer into the arguments, such as /path",
			"airlock.yaml:10: policy.rules[0].args[1].pointer: must not be empty: point into the arguments, such as /path (the arguments as a whole are an object, never a path)",
			`airlock.yaml:11: policy.rules[0].args[2].pointer: "path" is not a JSON Pointer: it starts with /, such as /path`,
			`airlock.yaml:12: policy.rules[0].args[3].pointer: "/a~2" is not a JSON Pointer: ~ must be followed by 0 (for ~) or 1 (for /)`,
			`airlock.yaml:13: policy.rules[0].args[4].pointer: "/a~" is not a JSON Pointer: ~ must be followed by 0 (for ~) or 1 (for /)`}},
		{"arg globs", "policy:\n  rules:\n    - decision: ask\n      args:\n        - pointer: /p\n          allow: [src/, ./src/**, a//b, a/../b, \"[\", \"~/x\", \"C:/x\", \"\", src, src]\n          deny: [\"../**\"]\n", []string{
			`airlock.yaml:10: policy.rules[0].args[0].allow[0]: "src/" ends with /: paths are matched without a trailing slash; write "src", or "src/**" for what is inside`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[1]: "./src/**" is not clean: paths are cleaned (no empty, . or .. segments) before they are matched, so it would never match; write "src/**"`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[2]: "a//b" is not clean: paths are cleaned (no empty, . or .. segments) before they are matched, so it would never match; write "a/b"`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[3]: "a/../b" is not clean: paths are cleaned (no empty, . or .. segments) before they are matched, so it would never match; write "b"`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[4]: "[" is not a valid glob: check its [ ] and { } and escapes`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[5]: "~/x" starts with ~ or a drive letter, which servers may expand; such paths never match an allow glob: use a path relative to the server's root, or an absolute one`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[6]: "C:/x" starts with ~ or a drive letter, which servers may expand; such paths never match an allow glob: use a path relative to the server's root, or an absolute one`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[7]: must not be empty`,
			`airlock.yaml:10: policy.rules[0].args[0].allow[9]: "src" is listed twice (first at line 10)`,
			`airlock.yaml:11: policy.rules[0].args[0].deny[0]: "../**" climbs above the server's root with ..: no glob can name such a path; a path that starts with .. once cleaned never matches an allow glob, so an allow glob (such as "**") refuses every one of them`}},
		{"arg deny empty", "policy:\n  rules:\n    - decision: ask\n      args:\n        - pointer: /p\n          deny: []\n", []string{
			`airlock.yaml:10: policy.rules[0].args[0].deny: must list at least one glob; leave the key out for none`}},
		{"arg enum and pattern", "policy:\n  rules:\n    - decision: ask\n      args:\n        - {pointer: /p, enum: [], pattern: \"a(\"}\n        - {pointer: /q, enum: [[x]], pattern: \"(?P<n\"}\n        - {pointer: /r, pattern: \"a)|(b\"}\n", []string{
			"airlock.yaml:9: policy.rules[0].args[0].enum: must list at least one value; leave the key out for none",
			"airlock.yaml:9: policy.rules[0].args[0].pattern: is not a valid RE2 regular expression: missing closing ): `a(`",
			"airlock.yaml:10: policy.rules[0].args[1].enum[0]: must be a string, not a list",
			"airlock.yaml:10: policy.rules[0].args[1].pattern: is not a valid RE2 regular expression: invalid named capture: `(?P<n`",
			"airlock.yaml:11: policy.rules[0].args[2].pattern: is not a valid RE2 regular expression: unexpected ): `a)|(b`"}},

		// policy.cedar
		{"cedar missing", "policy: {cedar: nope.cedar}\n", []string{
			`airlock.yaml:5: policy.cedar: file "nope.cedar" does not exist`}},
		{"cedar directory", "policy: {cedar: d}\n", []string{
			`airlock.yaml:5: policy.cedar: "d" is not a regular file`}},
		{"cedar empty", "policy: {cedar: \"\"}\n", []string{
			"airlock.yaml:5: policy.cedar: must not be empty: give the file of Cedar policies, or remove the key"}},

		// policy.hooks
		{"hook command string", "policy:\n  hooks: [{command: ./check.sh}]\n", []string{
			"airlock.yaml:6: policy.hooks[0].command: must be a list of the program and its arguments, such as [./check.sh]: no shell splits it"}},
		{"hook command missing", "policy:\n  hooks: [{timeout: 1s}]\n", []string{
			"airlock.yaml:6: policy.hooks[0].command: is required: give the program and its arguments, such as [./check.sh]"}},
		{"hook command empty", "policy:\n  hooks:\n    - {command: []}\n    - {command: [\" \"]}\n", []string{
			"airlock.yaml:7: policy.hooks[0].command: must not be empty: give the program and its arguments, such as [./check.sh]",
			"airlock.yaml:8: policy.hooks[1].command[0]: must not be empty: give the program to run"}},
		{"hook timeout", "policy:\n  hooks: [{command: [x], timeout: 0s}]\n", []string{
			`airlock.yaml:6: policy.hooks[0].timeout: "0s" must be longer than zero`}},

		// approvals and audit
		{"approvals ttl", "approvals: {ttl: forever}\n", []string{
			`airlock.yaml:5: approvals.ttl: "forever" is not a duration: write one such as 30s, 1m30s or 2h`}},
		{"approvals unknown", "approvals: {tll: 1h}\n", []string{
			`airlock.yaml:5: approvals.tll: unknown key; did you mean "ttl"?`}},
		{"audit values", "audit:\n  record_values: [fs__read_file, \"fs__*\", \"a b\", fs__read_file, \"*\"]\n", []string{
			`airlock.yaml:6: audit.record_values[1]: "fs__*": patterns are not supported: list each tool, or use ["*"] alone for every tool`,
			`airlock.yaml:6: audit.record_values[2]: "a b" is not a local tool name: use the name a model sees, such as fs__read_file (see airlock tools)`,
			`airlock.yaml:6: audit.record_values[3]: "fs__read_file" is listed twice (first at line 6)`,
			`airlock.yaml:6: audit.record_values: "*" records every tool and must be alone: write ["*"] or list the tools`}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(server+src), "airlock.yaml", dir)
	})
}

func TestParseSecretEnv(t *testing.T) {
	env := mapEnv(map[string]string{"HOST_TOKEN": "canary-4f1e", "EMPTY": ""})
	src := server + "    env: {PLAIN: x}\n    secret_env: {TOKEN: HOST_TOKEN, OTHER: HOST_TOKEN}\n"
	cfg, err := parseYAML([]byte(src), "airlock.yaml", t.TempDir(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"TOKEN": "HOST_TOKEN", "OTHER": "HOST_TOKEN"}
	if diff := cmp.Diff(want, cfg.Servers[0].SecretEnv); diff != "" {
		t.Errorf("SecretEnv mismatch (-want +got):\n%s", diff)
	}
	bound := cfg.Servers[0].ForWorkspace("/w")
	bound.SecretEnv["TOKEN"] = "changed"
	if cfg.Servers[0].SecretEnv["TOKEN"] != "HOST_TOKEN" {
		t.Errorf("ForWorkspace shares SecretEnv with the configuration")
	}

	tests := []errorCase{
		{"unset", "    secret_env: {TOKEN: NOT_SET}\n", []string{
			"airlock.yaml:5: servers[0].secret_env.TOKEN: the host variable NOT_SET is not set: set it in the environment airlock starts in"}},
		{"empty", "    secret_env: {TOKEN: EMPTY}\n", []string{
			"airlock.yaml:5: servers[0].secret_env.TOKEN: the host variable EMPTY is empty: set it to the secret"}},
		{"bad names", "    secret_env: {1X: HOST_TOKEN, Y: \"a-b\"}\n", []string{
			`airlock.yaml:5: servers[0].secret_env.1X: "1X" is not a valid environment variable name: use letters, digits and _, not starting with a digit`,
			`airlock.yaml:5: servers[0].secret_env.Y: is not the name of an environment variable (letters, digits and _, not starting with a digit): name the variable that holds the secret; the secret itself never goes in this file`}},
		{"also in env", "    env: {TOKEN: x}\n    secret_env: {TOKEN: HOST_TOKEN}\n", []string{
			"airlock.yaml:6: servers[0].secret_env.TOKEN: TOKEN is also set under env: give it in one place (secret_env for a secret)"}},
		{"not mapping", "    secret_env: [HOST_TOKEN]\n", []string{
			"airlock.yaml:5: servers[0].secret_env: must be a mapping (key: value lines), not a list"}},
		{"value not string", "    secret_env: {TOKEN: [HOST_TOKEN]}\n", []string{
			"airlock.yaml:5: servers[0].secret_env.TOKEN: must be a string, not a list"}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return parseYAML([]byte(server+src), "airlock.yaml", t.TempDir(), env)
	}, "canary-4f1e")
}

func TestMatchName(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything/at.all", true},
		{"fs", "fs", true},
		{"fs", "fs2", false},
		{"fs", "FS", false},
		{"f*", "fs", true},
		{"*s", "fs", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"a.b", "aXb", false},
		{"a?", "ab", false},
		{"[a]", "a", false},
		{"[a]", "[a]", true},
	}
	for _, tt := range tests {
		if got := matchName(tt.glob, tt.name); got != tt.want {
			t.Errorf("matchName(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseDefaults(t *testing.T) {
	t.Setenv("USER", "alice")
	dir := t.TempDir()
	cfg, err := Parse([]byte("servers:\n  - id: fs\n    command: airlock\n    allowed_tools: [read_file]\n"), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Dir: dir,
		Servers: []Server{{
			ID:               "fs",
			Transport:        "stdio",
			Scope:            "host",
			Command:          "airlock",
			Cwd:              dir,
			AllowedTools:     []string{"read_file"},
			ProtocolVersions: []string{"2026-07-28", "2025-11-25"},
			RequestTimeout:   30 * time.Second,
			ConnectTimeout:   30 * time.Second,
			ProbeTimeout:     3 * time.Second,
			QueueTimeout:     10 * time.Second,
			MaxConcurrency:   16,
			Source:           "airlock.yaml:2",
		}},
		Limits: Limits{MaxPages: 100, MaxTools: 1000, MaxDescription: 2000, MaxMessageBytes: 16 << 20,
			MaxCallsPerTurn: 32, MaxConcurrentPerTenant: 64, MaxInputRounds: 8, MaxResourceBytes: 8 << 20},
		Tenancy:   Tenancy{Tenant: "default", User: "alice"},
		Approvals: Approvals{TTL: time.Hour},
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEveryKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `development: true
servers:
  - id: fs_1
    transport: stdio
    scope: host
    command: ./bin/server
    args: [--port, 8080, 2025-11-25, true, 1.5, "quoted"]
    cwd: work
    env: {LOG_LEVEL: info, RETRIES: 3, _X: "y"}
    allowed_tools: ["*"]
    allowed_resources: ["file:///etc/**", "test://static/*"]
    allowed_prompts: ["*"]
    tool_prefix: ""
    protocol_versions: [2025-11-25, "2024-11-05"]
    request_timeout: 1m
    connect_timeout: 10s
    probe_timeout: 500ms
    queue_timeout: 1s
    max_concurrency: 10000
  - id: Other-2
    command: other
    allowed_tools:
      - a
      - b
    allowed_resources: []
    allowed_prompts: [summarize, "greet me"]
    tool_prefix: o-
    connect_timeout: 1s
limits:
  max_pages: 10000
  max_tools: 1
  max_description: 100000
  max_message_bytes: 1024
  max_calls_per_turn: 1
  max_concurrent_per_tenant: 100000
  max_input_rounds: 64
  max_resource_bytes: 1024
tenancy: {tenant: "acme.eu", user: "${AIRLOCK_TEST_USER}@acme"}
egress: {proxy: "https://proxy.internal:3128/"}
`
	t.Setenv("AIRLOCK_TEST_USER", "bob")
	cfg, err := Parse([]byte(src), "conf/airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Dir:         dir,
		Development: true,
		Servers: []Server{{
			ID:               "fs_1",
			Transport:        "stdio",
			Scope:            "host",
			Command:          "./bin/server",
			Args:             []string{"--port", "8080", "2025-11-25", "true", "1.5", "quoted"},
			Cwd:              filepath.Join(dir, "work"),
			Env:              map[string]string{"LOG_LEVEL": "info", "RETRIES": "3", "_X": "y"},
			AllowedTools:     []string{"*"},
			AllowedResources: []string{"file:///etc/**", "test://static/*"},
			AllowedPrompts:   []string{"*"},
			ToolPrefix:       ptr(""),
			ProtocolVersions: []string{"2025-11-25", "2024-11-05"},
			RequestTimeout:   time.Minute,
			ConnectTimeout:   10 * time.Second,
			ProbeTimeout:     500 * time.Millisecond,
			QueueTimeout:     time.Second,
			MaxConcurrency:   10000,
			Source:           "conf/airlock.yaml:3",
		}, {
			ID:               "Other-2",
			Transport:        "stdio",
			Scope:            "host",
			Command:          "other",
			Cwd:              dir,
			AllowedTools:     []string{"a", "b"},
			AllowedPrompts:   []string{"summarize", "greet me"},
			ToolPrefix:       ptr("o-"),
			ProtocolVersions: []string{"2026-07-28", "2025-11-25"},
			RequestTimeout:   30 * time.Second,
			ConnectTimeout:   time.Second,
			// A short connect_timeout shortens the default probe.
			ProbeTimeout:   time.Second,
			QueueTimeout:   10 * time.Second,
			MaxConcurrency: 16,
			Source:         "conf/airlock.yaml:20",
		}},
		Limits: Limits{MaxPages: 10000, MaxTools: 1, MaxDescription: 100000, MaxMessageBytes: 1024,
			MaxCallsPerTurn: 1, MaxConcurrentPerTenant: 100000, MaxInputRounds: 64, MaxResourceBytes: 1024},
		Tenancy:   Tenancy{Tenant: "acme.eu", User: "bob@acme"},
		Egress:    Egress{Proxy: "https://proxy.internal:3128/"},
		Approvals: Approvals{TTL: time.Hour},
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

// TestLocalPrefix: without tool_prefix a server's tools are named
// SERVER__TOOL, as they always were; with it, as it says.
func TestLocalPrefix(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       string
	}{
		{"default", server, "a__"},
		{"own names", server + "    tool_prefix: \"\"\n", ""},
		{"prefix", server + "    tool_prefix: x_\n", "x_"},
	} {
		cfg, err := Parse([]byte(tt.yaml), "airlock.yaml", t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := cfg.Servers[0].LocalPrefix(); got != tt.want {
			t.Errorf("%s: LocalPrefix() = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (&Server{ID: "fs"}).LocalPrefix(); got != "fs__" {
		t.Errorf("LocalPrefix() of a Server built in Go = %q, want fs__", got)
	}
}

// TestSampling: a server's sampling requests are refused unless its entry
// says otherwise; only ask and allow may reach a model.
func TestSampling(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       string
		may        bool
	}{
		{"default", server, "", false},
		{"deny", server + "    sampling: deny\n", SamplingDeny, false},
		{"ask", server + "    sampling: ask\n", SamplingAsk, true},
		{"allow", server + "    sampling: allow\n", SamplingAllow, true},
	} {
		cfg, err := Parse([]byte(tt.yaml), "airlock.yaml", t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		s := cfg.Servers[0]
		if s.Sampling != tt.want || s.MaySample() != tt.may {
			t.Errorf("%s: Sampling %q, MaySample %v; want %q, %v", tt.name, s.Sampling, s.MaySample(), tt.want, tt.may)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseCwd(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir()
	tests := []struct {
		cwd  string
		want string
	}{
		{".", dir},
		{"a/b", filepath.Join(dir, "a", "b")},
		{"./a/../c/", filepath.Join(dir, "c")},
		{"a/b/../..", dir},
		{other, other},
		{other + "/", other},
	}
	for _, tt := range tests {
		src := fmt.Sprintf("servers:\n  - {id: a, command: x, allowed_tools: [], cwd: %q}\n", tt.cwd)
		cfg, err := Parse([]byte(src), "airlock.yaml", dir)
		if err != nil {
			t.Errorf("cwd %q: %v", tt.cwd, err)
			continue
		}
		if got := cfg.Servers[0].Cwd; got != tt.want {
			t.Errorf("cwd %q resolved to %q, want %q", tt.cwd, got, tt.want)
		}
	}
}

func TestParseRelativeDir(t *testing.T) {
	// dir may be relative; Config.Dir and cwd are absolute all the same.
	t.Chdir(t.TempDir())
	if err := os.Mkdir("conf", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte("servers:\n  - {id: a, command: x, allowed_tools: []}\n"), "conf/airlock.yaml", "conf")
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, "conf")
	if cfg.Dir != want || cfg.Servers[0].Cwd != want {
		t.Errorf("Dir = %q, Cwd = %q; want both %q", cfg.Dir, cfg.Servers[0].Cwd, want)
	}
}

// server is a valid server entry that error cases extend.
const server = "servers:\n  - id: a\n    command: x\n    allowed_tools: [t]\n"

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []errorCase{
		// The file as a whole.
		{"empty", "", []string{
			"airlock.yaml: is empty: add a servers: list (see the documentation for an example)"}},
		{"blank", "  \n\n", []string{
			"airlock.yaml: is empty: add a servers: list (see the documentation for an example)"}},
		{"only comments", "# servers:\n", []string{
			"airlock.yaml: has no content, only comments: add a servers: list"}},
		{"null document", "---\n~\n", []string{
			"airlock.yaml:2: has no content: add a servers: list"}},
		{"list at top", "- id: a\n", []string{
			"airlock.yaml:1: the top level must be a mapping of keys such as servers:, not a list"}},
		{"string at top", "servers\n", []string{
			"airlock.yaml:1: the top level must be a mapping of keys such as servers:, not a string"}},
		{"two documents", server + "---\nservers: []\n", []string{
			"airlock.yaml:6: a second YAML document starts here: keep everything in one document (remove the ---)"}},
		{"syntax: bad indent", "servers:\n  - id: a\n    command: x\n   allowed_tools: [t]\n", []string{
			"airlock.yaml:4: invalid YAML: did not find expected '-' indicator (check the indentation of this line)"}},
		{"syntax: dedented key", "development: false\nservers:\n  - id: a\n    command: x\n  allowed_tools: [t]\n", []string{
			"airlock.yaml:5: invalid YAML: did not find expected '-' indicator (check the indentation of this line)"}},
		{"syntax: unclosed list", "servers:\n  - id: a\n    args: [a, b\n    command: x\n", []string{
			"airlock.yaml:3: invalid YAML: did not find expected ',' or ']'"}},
		{"syntax: tab", "servers:\n  - id: a\n\tcommand: x\n", []string{
			"airlock.yaml:3: tabs are not allowed for indentation in YAML; use spaces"}},
		{"syntax: tab before a list item", "servers:\n\t- id: a\n", []string{
			"airlock.yaml:2: tabs are not allowed for indentation in YAML; use spaces"}},
		{"syntax: tab after spaces", "servers:\n  - id: a\n    command: x\n  \t  allowed_tools: [t]\n", []string{
			"airlock.yaml:4: tabs are not allowed for indentation in YAML; use spaces"}},
		{"syntax: tab-indented list", "servers:\n  - id: a\n    command: x\n    allowed_tools:\n\t- t\n", []string{
			"airlock.yaml:5: tabs are not allowed for indentation in YAML; use spaces"}},
		{"syntax: tab in a block scalar", "servers:\n  - id: a\n    command: x\n    allowed_tools: [t]\n    env:\n      A: |\n\tfoo\n", []string{
			"airlock.yaml:7: tabs are not allowed for indentation in YAML; use spaces"}},
		{"syntax: unknown anchor", "servers: *nope\n", []string{
			`airlock.yaml:1: invalid YAML: unknown anchor 'nope' referenced`}},

		// Top-level keys.
		{"servers missing", "development: true\n", []string{
			"airlock.yaml:1: servers: is required: list at least one server (see the documentation for an example)"}},
		{"servers empty", "servers: []\n", []string{
			"airlock.yaml:1: servers: is empty: list at least one server, or import an mcpServers file"}},
		{"servers null", "servers:\n", []string{
			"airlock.yaml:1: servers: has no value: give a list such as [a, b], or remove the key"}},
		{"servers mapping", "servers: {id: a}\n", []string{
			"airlock.yaml:1: servers: must be a list such as [a, b], not a mapping"}},
		{"unknown key near", server + "server: []\n", []string{
			`airlock.yaml:5: server: unknown key; did you mean "servers"?`}},
		{"unknown key case", server + "Limits: {}\n", []string{
			`airlock.yaml:5: Limits: unknown key; did you mean "limits"?`}},
		{"unknown key far", server + "frobnicate: 1\n", []string{
			"airlock.yaml:5: frobnicate: unknown key: expected one of servers, limits, development, import, policy, approvals, audit, tenancy, egress, serve, store, agent"}},
		{"unknown key quoted", server + "\"a b\": 1\n", []string{
			`airlock.yaml:5: "a b": unknown key: expected one of servers, limits, development, import, policy, approvals, audit, tenancy, egress, serve, store, agent`}},
		{"key of a server at top", server + "allowed_tools: [x]\n", []string{
			"airlock.yaml:5: allowed_tools: unknown key here: it belongs in a server entry under servers:"}},
		{"key of limits at top", server + "max_tools: 3\n", []string{
			"airlock.yaml:5: max_tools: unknown key here: it belongs under limits:"}},
		{"key of tenancy at top", server + "user: x\n", []string{
			"airlock.yaml:5: user: unknown key here: it belongs under tenancy:"}},
		{"near a policy key", server + "polcy: {}\n", []string{
			`airlock.yaml:5: polcy: unknown key; did you mean "policy"?`}},
		{"near a tenancy key", server + "tenacy: {}\n", []string{
			`airlock.yaml:5: tenacy: unknown key; did you mean "tenancy"?`}},
		{"duplicate key", server + "development: true\ndevelopment: false\n", []string{
			"airlock.yaml:6: development: duplicate key (first set at line 5)"}},
		{"development yes", server + "development: yes\n", []string{
			"airlock.yaml:5: development: must be true or false"}},
		{"development quoted", server + "development: \"true\"\n", []string{
			"airlock.yaml:5: development: must be true or false"}},
		{"non-string key", server + "[a]: 1\n", []string{
			"airlock.yaml:5: keys must be strings, not a list"}},
		{"merge key", "servers:\n  - <<: {id: a}\n    command: x\n    allowed_tools: []\n", []string{
			"airlock.yaml:2: servers[0]: merge keys (<<) are not supported: write the keys out",
			"airlock.yaml:2: servers[0].id: is required: name the server with 1 to 32 letters, digits, _ or -"}},

		// A server entry.
		{"server not mapping", "servers: [fs]\n", []string{
			"airlock.yaml:1: servers[0]: must be a mapping (key: value lines), not a string"}},
		{"required keys", "servers:\n  - {}\n", []string{
			"airlock.yaml:2: servers[0].id: is required: name the server with 1 to 32 letters, digits, _ or -",
			"airlock.yaml:2: servers[0].command: is required: give the program that starts the server",
			`airlock.yaml:2: servers[0].allowed_tools: is required: list the tools to expose, or ["*"] for every tool`}},
		{"allowed_tools missing", server + "  - id: b\n    command: y\n", []string{
			`airlock.yaml:5: servers[1].allowed_tools: is required: list the tools to expose, or ["*"] for every tool`}},
		{"unknown server key", server + "    comand: y\n", []string{
			`airlock.yaml:5: servers[0].comand: unknown key; did you mean "command"?`}},
		{"server key case", server + "    Cwd: .\n", []string{
			`airlock.yaml:5: servers[0].Cwd: unknown key; did you mean "cwd"?`}},
		{"limits key in server", server + "    max_tools: 3\n", []string{
			"airlock.yaml:5: servers[0].max_tools: unknown key here: it belongs under limits: at the top level"}},
		{"duplicate server key", server + "    command: y\n", []string{
			"airlock.yaml:5: servers[0].command: duplicate key (first set at line 3)"}},
		{"id invalid", "servers:\n  - id: my server\n    command: x\n    allowed_tools: []\n", []string{
			`airlock.yaml:2: servers[0].id: "my server" is not a valid server id: use 1 to 32 letters, digits, _ or -`}},
		{"id too long", "servers:\n  - id: " + strings.Repeat("a", 33) + "\n    command: x\n    allowed_tools: []\n", []string{
			`airlock.yaml:2: servers[0].id: "` + strings.Repeat("a", 33) + `" is not a valid server id: use 1 to 32 letters, digits, _ or -`}},
		{"id empty", "servers:\n  - id: \"\"\n    command: x\n    allowed_tools: []\n", []string{
			`airlock.yaml:2: servers[0].id: "" is not a valid server id: use 1 to 32 letters, digits, _ or -`}},
		{"id null", "servers:\n  - id:\n    command: x\n    allowed_tools: []\n", []string{
			"airlock.yaml:2: servers[0].id: has no value: give one, or remove the key"}},
		{"id duplicate", server + "  - id: a\n    command: y\n    allowed_tools: []\n", []string{
			`airlock.yaml:5: servers[1].id: server id "a" is already used by servers[0] (line 2)`}},
		{"id differs in case", server + "  - id: A\n    command: y\n    allowed_tools: []\n", []string{
			`airlock.yaml:5: servers[1].id: server id "A" differs only in letter case from "a" of servers[0] (line 2): ids must differ in more than case`}},
		{"tool_prefix invalid", server + "    tool_prefix: \"my.\"\n", []string{
			`airlock.yaml:5: servers[0].tool_prefix: "my." is not a valid tool name prefix: use at most 32 letters, digits, _ or - ("" keeps the server's own tool names; without the key they start with the server id and __)`}},
		{"tool_prefix too long", server + "    tool_prefix: " + strings.Repeat("p", 33) + "\n", []string{
			`airlock.yaml:5: servers[0].tool_prefix: "` + strings.Repeat("p", 33) + `" is not a valid tool name prefix: use at most 32 letters, digits, _ or - ("" keeps the server's own tool names; without the key they start with the server id and __)`}},
		{"tool_prefix null", server + "    tool_prefix:\n", []string{
			"airlock.yaml:5: servers[0].tool_prefix: has no value: give one, or remove the key"}},
		{"tool_prefix list", server + "    tool_prefix: [a]\n", []string{
			"airlock.yaml:5: servers[0].tool_prefix: must be a string, not a list"}},
		{"transport http with stdio keys", server + "    transport: http\n", []string{
			"airlock.yaml:2: servers[0].allowed_hosts: is required for transport: http: list the hosts url and resource may name, such as [mcp.example.com]",
			"airlock.yaml:2: servers[0].url: is required for transport: http: give the server's MCP endpoint, such as https://mcp.example.com/mcp",
			"airlock.yaml:3: servers[0].command: is only for transport: stdio (a transport: http server is reached at its url): remove it"}},
		{"transport other", server + "    transport: sse\n", []string{
			`airlock.yaml:5: servers[0].transport: must be stdio or http, not "sse"`}},
		{"scope task with cwd", "servers:\n  - id: a\n    scope: task\n    command: x\n    cwd: .\n    allowed_tools: []\n", []string{
			"airlock.yaml:5: servers[0].cwd: a scope: task server runs in its task's worktree; remove cwd (use ${workspace} in args for paths inside it)"}},
		{"scope other", server + "    scope: global\n", []string{
			`airlock.yaml:5: servers[0].scope: must be host or task, not "global"`}},
		{"sampling other", server + "    sampling: yes\n", []string{
			`airlock.yaml:5: servers[0].sampling: must be deny, ask or allow, not "yes"`}},
		{"command empty", "servers:\n  - id: a\n    command: \" \"\n    allowed_tools: []\n", []string{
			"airlock.yaml:3: servers[0].command: must not be empty: give the program to run"}},
		{"command list", "servers:\n  - id: a\n    command: [npx, x]\n    allowed_tools: []\n", []string{
			"airlock.yaml:3: servers[0].command: must be a string, not a list"}},
		{"command NUL", "servers:\n  - id: a\n    command: \"a\\0b\"\n    allowed_tools: []\n", []string{
			"airlock.yaml:3: servers[0].command: must not contain a NUL character"}},
		{"command binary tag", "servers:\n  - id: a\n    command: !!binary eA==\n    allowed_tools: []\n", []string{
			"airlock.yaml:3: servers[0].command: must be a plain string (the tag !!binary is not supported)"}},
		{"command custom tag", "servers:\n  - id: a\n    command: !env HOME\n    allowed_tools: []\n", []string{
			"airlock.yaml:3: servers[0].command: must be a plain string (the tag !env is not supported)"}},
		{"args not list", server + "    args: --verbose\n", []string{
			"airlock.yaml:5: servers[0].args: must be a list such as [a, b], not a string"}},
		{"args mapping item", server + "    args:\n      - ok\n      - {a: b}\n      - [c]\n", []string{
			"airlock.yaml:7: servers[0].args[1]: must be a string, not a mapping",
			"airlock.yaml:8: servers[0].args[2]: must be a string, not a list"}},
		{"args null item", server + "    args: [a, ~]\n", []string{
			"airlock.yaml:5: servers[0].args[1]: has no value: give one, or remove the key"}},
		{"args workspace", server + "    args: [--root, \"${workspace}\", \"${workspace}/src\"]\n", []string{
			"airlock.yaml:5: servers[0].args[1]: ${workspace} is only available to scope: task servers",
			"airlock.yaml:5: servers[0].args[2]: ${workspace} is only available to scope: task servers"}},
		{"env workspace", server + "    env: {ROOT: \"${workspace}\"}\n", []string{
			"airlock.yaml:5: servers[0].env.ROOT: ${workspace} is only available to scope: task servers"}},
		{"cwd missing", server + "    cwd: nope\n", []string{
			`airlock.yaml:5: servers[0].cwd: directory "nope" does not exist`}},
		{"cwd file", server + "    cwd: file.txt\n", []string{
			`airlock.yaml:5: servers[0].cwd: "file.txt" is not a directory`}},
		{"cwd empty", server + "    cwd: \"\"\n", []string{
			"airlock.yaml:5: servers[0].cwd: must not be empty: leave the key out to use the configuration file's directory"}},
		{"cwd workspace", server + "    cwd: \"${workspace}\"\n", []string{
			"airlock.yaml:5: servers[0].cwd: ${workspace} is only available to scope: task servers",
			`airlock.yaml:5: servers[0].cwd: directory "${workspace}" does not exist`}},
		{"env not mapping", server + "    env: [A=1]\n", []string{
			"airlock.yaml:5: servers[0].env: must be a mapping (key: value lines), not a list"}},
		{"env null", server + "    env:\n", []string{
			"airlock.yaml:5: servers[0].env: has no value: give key: value lines, or remove the key"}},
		{"server null", "servers:\n  -\n", []string{
			"airlock.yaml:2: servers[0]: has no value: give key: value lines, or remove the key"}},
		{"env bad names", server + "    env:\n      1A: x\n      A-B: y\n      \"\": z\n", []string{
			`airlock.yaml:6: servers[0].env.1A: "1A" is not a valid environment variable name: use letters, digits and _, not starting with a digit`,
			`airlock.yaml:7: servers[0].env.A-B: "A-B" is not a valid environment variable name: use letters, digits and _, not starting with a digit`,
			`airlock.yaml:8: servers[0].env."": "" is not a valid environment variable name: use letters, digits and _, not starting with a digit`}},
		{"env bad values", server + "    env:\n      A: ~\n      B: [x]\n      C: {x: y}\n", []string{
			"airlock.yaml:6: servers[0].env.A: has no value: give one, or remove the key",
			"airlock.yaml:7: servers[0].env.B: must be a string, not a list",
			"airlock.yaml:8: servers[0].env.C: must be a string, not a mapping"}},
		{"env duplicate", server + "    env:\n      A: x\n      A: y\n", []string{
			"airlock.yaml:7: servers[0].env.A: duplicate key (first set at line 6)"}},
		{"allowed_tools not list", "servers:\n  - id: a\n    command: x\n    allowed_tools: \"*\"\n", []string{
			"airlock.yaml:4: servers[0].allowed_tools: must be a list such as [a, b], not a string"}},
		{"allowed_tools null", "servers:\n  - id: a\n    command: x\n    allowed_tools:\n", []string{
			"airlock.yaml:4: servers[0].allowed_tools: has no value: give a list such as [a, b], or remove the key"}},
		{"allowed_tools entries", "servers:\n  - id: a\n    command: x\n    allowed_tools:\n      - read\n      - \"\"\n      - read\n      - \"write_*\"\n      - \" x\"\n      - {a: b}\n", []string{
			"airlock.yaml:6: servers[0].allowed_tools[1]: must not be empty",
			`airlock.yaml:7: servers[0].allowed_tools[2]: "read" is listed twice (first at line 5)`,
			`airlock.yaml:8: servers[0].allowed_tools[3]: "write_*": patterns are not supported: list each tool, or use ["*"] alone for every tool`,
			`airlock.yaml:9: servers[0].allowed_tools[4]: " x" has leading or trailing spaces`,
			"airlock.yaml:10: servers[0].allowed_tools[5]: must be a string, not a mapping"}},
		{"allowed_tools star not alone", "servers:\n  - id: a\n    command: x\n    allowed_tools: [read, \"*\"]\n", []string{
			`airlock.yaml:4: servers[0].allowed_tools: "*" allows every tool and must be alone: write ["*"] or list the tools`}},
		{"protocol_versions empty", server + "    protocol_versions: []\n", []string{
			`airlock.yaml:5: servers[0].protocol_versions: must list at least one version, such as ["2026-07-28"]; leave the key out for the default`}},
		{"protocol_versions bad", server + "    protocol_versions: [2025-11-25, 2025-01-01, \"2025-11-25\", 1]\n", []string{
			`airlock.yaml:5: servers[0].protocol_versions[1]: "2025-01-01" is not a supported protocol version: use 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`,
			`airlock.yaml:5: servers[0].protocol_versions[2]: "2025-11-25" is listed twice (first at line 5)`,
			`airlock.yaml:5: servers[0].protocol_versions[3]: "1" is not a supported protocol version: use 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`}},
		{"request_timeout no unit", server + "    request_timeout: 30\n", []string{
			`airlock.yaml:5: servers[0].request_timeout: "30" has no unit: write a duration such as 30s or 2m`}},
		{"request_timeout zero", server + "    request_timeout: 0s\n", []string{
			`airlock.yaml:5: servers[0].request_timeout: "0s" must be longer than zero`}},
		{"connect_timeout negative", server + "    connect_timeout: -5s\n", []string{
			`airlock.yaml:5: servers[0].connect_timeout: "-5s" must be longer than zero`}},
		{"connect_timeout too long", server + "    connect_timeout: 48h\n", []string{
			`airlock.yaml:5: servers[0].connect_timeout: "48h" is longer than the limit of 24h`}},
		{"probe_timeout garbage", server + "    probe_timeout: fast\n", []string{
			`airlock.yaml:5: servers[0].probe_timeout: "fast" is not a duration: write one such as 30s, 1m30s or 2h`}},
		{"probe_timeout list", server + "    probe_timeout: [1s]\n", []string{
			`airlock.yaml:5: servers[0].probe_timeout: must be a string, not a list`}},
		{"probe longer than connect", server + "    connect_timeout: 2s\n    probe_timeout: 1h\n", []string{
			"airlock.yaml:6: servers[0].probe_timeout: 1h is longer than connect_timeout (2s): the probe is part of connecting"}},
		{"probe longer than default connect", server + "    probe_timeout: 1m30s\n", []string{
			"airlock.yaml:5: servers[0].probe_timeout: 1m30s is longer than connect_timeout (30s): the probe is part of connecting"}},

		// limits.
		{"limits not mapping", server + "limits: 100\n", []string{
			"airlock.yaml:5: limits: must be a mapping (key: value lines), not a number"}},
		{"limits out of range", server + "limits:\n  max_pages: 0\n  max_tools: 100001\n  max_description: -1\n  max_message_bytes: 1023\n", []string{
			"airlock.yaml:6: limits.max_pages: must be a whole number of pages from 1 to 10000",
			"airlock.yaml:7: limits.max_tools: must be a whole number of tools from 1 to 100000",
			"airlock.yaml:8: limits.max_description: must be a whole number of characters from 1 to 100000",
			"airlock.yaml:9: limits.max_message_bytes: must be a whole number of bytes from 1024 to 1073741824"}},
		{"limits not integers", server + "limits: {max_pages: \"10\", max_tools: 1.5, max_message_bytes: 16MiB, max_description: 99999999999999999999}\n", []string{
			"airlock.yaml:5: limits.max_pages: must be a whole number of pages from 1 to 10000",
			"airlock.yaml:5: limits.max_tools: must be a whole number of tools from 1 to 100000",
			"airlock.yaml:5: limits.max_description: must be a whole number of characters from 1 to 100000",
			"airlock.yaml:5: limits.max_message_bytes: must be a whole number of bytes from 1024 to 1073741824"}},
		{"call limits out of range", server + "limits:\n  max_calls_per_turn: 0\n  max_concurrent_per_tenant: 100001\n", []string{
			"airlock.yaml:6: limits.max_calls_per_turn: must be a whole number of calls from 1 to 100000",
			"airlock.yaml:7: limits.max_concurrent_per_tenant: must be a whole number of calls from 1 to 100000"}},
		{"call limits not integers", server + "limits: {max_calls_per_turn: \"32\", max_concurrent_per_tenant: 6.4}\n", []string{
			"airlock.yaml:5: limits.max_calls_per_turn: must be a whole number of calls from 1 to 100000",
			"airlock.yaml:5: limits.max_concurrent_per_tenant: must be a whole number of calls from 1 to 100000"}},
		{"input rounds out of range", server + "limits:\n  max_input_rounds: 0\n", []string{
			"airlock.yaml:6: limits.max_input_rounds: must be a whole number of rounds from 1 to 64"}},
		{"input rounds past the bound", server + "limits: {max_input_rounds: 65}\n", []string{
			"airlock.yaml:5: limits.max_input_rounds: must be a whole number of rounds from 1 to 64"}},
		{"call limit in a server", server + "    max_calls_per_turn: 3\n", []string{
			"airlock.yaml:5: servers[0].max_calls_per_turn: unknown key here: it belongs under limits: at the top level"}},
		{"limits unknown", server + "limits: {max_page: 3}\n", []string{
			`airlock.yaml:5: limits.max_page: unknown key; did you mean "max_pages"?`}},

		// Several problems come back together, in line order.
		{"several", "limits: {max_pages: 0}\nservers:\n  - id: a\n    command: x\n  - id: a\n    command: y\n    allowed_tools: []\ntenancy: {tenant: \"\"}\n", []string{
			"airlock.yaml:1: limits.max_pages: must be a whole number of pages from 1 to 10000",
			`airlock.yaml:3: servers[0].allowed_tools: is required: list the tools to expose, or ["*"] for every tool`,
			`airlock.yaml:5: servers[1].id: server id "a" is already used by servers[0] (line 3)`,
			`airlock.yaml:8: tenancy.tenant: "" is not a valid tenant: use 1 to 128 letters, digits, ., _, @, + or -`}},
		{"tasks", "servers:\n  - id: a\n    command: x\n    allowed_tools: []\n    tasks:\n      tools: [\"build_*\", \"\", \"build_*\"]\n      ttl: 1m\n      poll_interval: 2m\n      max_result_bytes: 10\n      nope: 1\n  - {id: b, command: x, allowed_tools: [], tasks: {}}\n", []string{
			`airlock.yaml:6: servers[0].tasks.tools[1]: must not be empty: give a tool name, or a pattern such as "build_*"`,
			`airlock.yaml:6: servers[0].tasks.tools[2]: "build_*" is listed twice (first at line 6)`,
			"airlock.yaml:8: servers[0].tasks.poll_interval: 2m is longer than the ttl (1m): a task would be gone before its client polls it",
			"airlock.yaml:9: servers[0].tasks.max_result_bytes: must be a whole number of bytes from 1024 to 1073741824",
			"airlock.yaml:10: servers[0].tasks.nope: unknown key: expected one of tools, required, ttl, poll_interval, max_result_bytes",
			`airlock.yaml:11: servers[1].tasks: names no tool: list the tools to run as tasks under tools (patterns such as "build_*" match the server's own tool names)`}},
		{"aliases are followed", "servers:\n  - &s {id: a, command: x, allowed_tools: []}\n  - *s\n", []string{
			`airlock.yaml:2: servers[1].id: server id "a" is already used by servers[0] (line 2)`}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(src), "airlock.yaml", dir)
	})
}

// TestParseTransportKeys checks that every key of one transport is
// refused by name on a server of the other.
func TestParseTransportKeys(t *testing.T) {
	for _, key := range httpOnlyKeys {
		src := server + "    " + key + ": x\n"
		_, err := Parse([]byte(src), "airlock.yaml", t.TempDir())
		want := []string{"airlock.yaml:5: servers[0]." + key + ": is only for transport: http: set transport: http, or remove it"}
		if diff := cmp.Diff(want, errLines(err)); diff != "" {
			t.Errorf("%s on stdio: errors mismatch (-want +got):\n%s", key, diff)
		}
	}
	for _, key := range stdioOnlyKeys {
		src := remoteServer + "    " + key + ": x\n"
		_, err := Parse([]byte(src), "airlock.yaml", t.TempDir())
		want := []string{"airlock.yaml:7: servers[0]." + key + ": is only for transport: stdio (a transport: http server is reached at its url): remove it"}
		if diff := cmp.Diff(want, errLines(err)); diff != "" {
			t.Errorf("%s on http: errors mismatch (-want +got):\n%s", key, diff)
		}
	}
	// Every server key is either common or belongs to one transport.
	for _, key := range append(slices.Clone(httpOnlyKeys), stdioOnlyKeys...) {
		if !slices.Contains(serverKeys.known, key) {
			t.Errorf("%s is not a known server key", key)
		}
	}
}

func TestParseLargeFile(t *testing.T) {
	src := server + "# " + strings.Repeat("x", maxFileBytes) + "\n"
	_, err := Parse([]byte(src), "airlock.yaml", t.TempDir())
	want := []string{"airlock.yaml: is larger than 4 MiB; a configuration file is a few kilobytes"}
	if diff := cmp.Diff(want, errLines(err)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

func TestParseLargeSyntaxError(t *testing.T) {
	// A syntax error at the end of a large file still gets an answer: the
	// search for its line gives up rather than parse the file thousands of
	// times.
	var b strings.Builder
	b.WriteString(server)
	line := "# " + strings.Repeat("x", 2000) + "\n"
	for b.Len()+len(line) < maxFileBytes-100 {
		b.WriteString(line)
	}
	b.WriteString("servers: [\n")
	_, err := Parse([]byte(b.String()), "airlock.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "invalid YAML") {
		t.Fatalf("Parse error = %v, want invalid YAML", err)
	}
}

// TestParseSameLineOrder checks that problems on one line come out in the
// order reading meets them, including those found by the checks that run
// once the whole file is read.
func TestParseSameLineOrder(t *testing.T) {
	env := mapEnv(map[string]string{"HOST_TOKEN": "x"})
	tests := []errorCase{
		{"server entry", "servers:\n  - {id: a, command: x, allowed_tools: []}\n  - {id: a, comand: y, allowed_tools: [t, t], max_call_duration: 1s, request_timeout: 2s, health_check: {interval: 1s, timeout: bad}}\n", []string{
			`airlock.yaml:3: servers[1].comand: unknown key; did you mean "command"?`,
			`airlock.yaml:3: servers[1].id: server id "a" is already used by servers[0] (line 2)`,
			"airlock.yaml:3: servers[1].command: is required: give the program that starts the server",
			`airlock.yaml:3: servers[1].allowed_tools[1]: "t" is listed twice (first at line 3)`,
			"airlock.yaml:3: servers[1].max_call_duration: 1s is shorter than request_timeout (2s): it is how far progress may stretch a call past that",
			`airlock.yaml:3: servers[1].health_check.timeout: "bad" is not a duration: write one such as 30s, 1m30s or 2h`,
			"airlock.yaml:3: servers[1].health_check.timeout: 5s is longer than the interval (1s): checks would overlap"}},
		{"env names and values", server + "    env: {1A: x, B: [x], 2C: \"${workspace}\"}\n    secret_env: {T: NOT_SET, 1X: HOST_TOKEN}\n", []string{
			`airlock.yaml:5: servers[0].env.1A: "1A" is not a valid environment variable name: use letters, digits and _, not starting with a digit`,
			"airlock.yaml:5: servers[0].env.B: must be a string, not a list",
			`airlock.yaml:5: servers[0].env.2C: "2C" is not a valid environment variable name: use letters, digits and _, not starting with a digit`,
			"airlock.yaml:6: servers[0].secret_env.T: the host variable NOT_SET is not set: set it in the environment airlock starts in",
			`airlock.yaml:6: servers[0].secret_env.1X: "1X" is not a valid environment variable name: use letters, digits and _, not starting with a digit`}},
		{"remote entry", "servers:\n  - {id: r, transport: http, scope: task, url: \"http://x\", allowed_hosts: [], stream_read_timeout: 1s, request_timeout: 2s, scopes: [], oauth: {client_secret_env: HOST_TOKEN, dynamic_registration: maybe}, allowed_tools: [t]}\n", []string{
			"airlock.yaml:2: servers[0].scope: a transport: http server is shared by every task: remove scope: task",
			"airlock.yaml:2: servers[0].allowed_hosts: must list at least one host, such as [mcp.example.com]: an empty list allows nothing",
			"airlock.yaml:2: servers[0].stream_read_timeout: 1s is shorter than request_timeout (2s): a stream may go quiet at least as long as a request may take",
			"airlock.yaml:2: servers[0].resource: is required with oauth: give the OAuth resource of the server, such as https://mcp.example.com; it is never guessed from url, which may differ",
			"airlock.yaml:2: servers[0].scopes: must list at least one scope, such as [mcp:issues.read]",
			"airlock.yaml:2: servers[0].oauth.dynamic_registration: must be true or false"}},
		{"policy entries", "servers:\n  - {id: a, command: x, allowed_tools: []}\npolicy:\n  tools: [{server: b, tool: t, effect: read}, {server: a, tool: \"\", effect: read}, {server: a, tool: t, effect: read, decision: ask}, {server: a, tool: t, effect: write}]\n  rules: [{server: \"b*\", tool: \"\", decision: deny, args: []}]\n", []string{
			`airlock.yaml:4: policy.tools[0].server: there is no server "b" (servers: a)`,
			"airlock.yaml:4: policy.tools[1].tool: must not be empty",
			"airlock.yaml:4: policy.tools[2].decision: unknown key here: it belongs in an entry under policy.rules",
			`airlock.yaml:4: policy.tools[3]: tool "t" of server "a" is already classified at line 4`,
			`airlock.yaml:5: policy.rules[0].server: "b*" matches no server (servers: a)`,
			"airlock.yaml:5: policy.rules[0].tool: must not be empty: leave the key out to match every tool",
			"airlock.yaml:5: policy.rules[0].args: a deny rule denies whatever the arguments: remove args, or make the rule allow or ask"}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return parseYAML([]byte(src), "airlock.yaml", t.TempDir(), env)
	})
}

// TestSecretPastedForItsVariable: a secret pasted where the name of the
// variable holding it belongs is refused, and never quoted back.
func TestSecretPastedForItsVariable(t *testing.T) {
	secrets := []string{"ghp_Q2xhdWRlU2VjcmV0VG9rZW4xMjM0", "hunter2-correct-horse!"}
	for _, secret := range secrets {
		for _, src := range []string{
			"servers:\n  - {id: s, command: x, allowed_tools: [t], secret_env: {TOKEN: " + quoteYAML(secret) + "}}\n",
			"servers:\n  - {id: s, command: x, allowed_tools: [t]}\nserve: {metrics_token_env: " + quoteYAML(secret) + "}\n",
			"servers:\n  - {id: s, command: x, allowed_tools: [t]}\nstore: {url: 'postgres://db.example/airlock', password_env: " + quoteYAML(secret) + "}\n",
			"servers:\n  - {id: s, transport: http, url: 'https://mcp.example/mcp', allowed_hosts: [mcp.example], resource: 'https://mcp.example', allowed_tools: [t], oauth: {client_id: a, client_secret_env: " + quoteYAML(secret) + "}}\n",
		} {
			_, err := parseYAML([]byte(src), "airlock.yaml", t.TempDir(), func(string) (string, bool) { return "set", true })
			if err == nil {
				t.Errorf("accepted a secret for a variable's name:\n%s", src)
				continue
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the secret: %v", err)
			}
			if !strings.Contains(err.Error(), "the secret itself never goes in this file") && !strings.Contains(err.Error(), "the secret never goes in this file") {
				t.Errorf("the error does not say where the secret goes: %v", err)
			}
		}
	}
}

func quoteYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestShortSecretIsNoticed: redaction ignores values shorter than
// MinRedactedSecret, so a secret_env value that short would show wherever a
// server repeats it; the configuration says so, naming the variable and
// never its value.
func TestShortSecretIsNoticed(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_PIN", "4711")
	t.Setenv("AIRLOCK_TEST_KEY", "long-enough-secret")
	yaml := `servers:
  - id: a
    command: x
    allowed_tools: [t]
    secret_env: {PIN: AIRLOCK_TEST_PIN, KEY: AIRLOCK_TEST_KEY}
`
	cfg, err := Parse([]byte(yaml), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, n := range cfg.Notices() {
		if strings.Contains(n, "too short to be redacted") {
			found = append(found, n)
		}
		if strings.Contains(n, "4711") {
			t.Errorf("a notice quotes the secret: %s", n)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "AIRLOCK_TEST_PIN") || !strings.Contains(found[0], "airlock.yaml:5") {
		t.Errorf("notices = %q, want one naming AIRLOCK_TEST_PIN at airlock.yaml:5", cfg.Notices())
	}
}

package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeFiles creates files under dir, making directories as needed.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"mcp/servers.json": `{"mcpServers": {
  "github": {"command": "gh-mcp", "env": {"TOKEN": "${GH_TOKEN}"}},
  "memory": {"command": "mem", "cwd": "."},
  "off": {"disabled": true}
}}`,
		"desktop.json": `{"mcpServers": {"notes": {"command": "notes", "args": ["--ro"]}}}`,
		"remote.json":  `{"mcpServers": {"local": {"type": "streamable-http", "url": "http://127.0.0.1:9000/mcp"}}}`,
	})
	src := `servers:
  - id: fs
    command: airlock
    allowed_tools: [read_file]
import:
  - file: mcp/servers.json
    allowed_tools:
      github: [search_issues, get_issue]
      off: ["*"]
  - desktop.json
  - file: remote.json
    allowed_tools: {local: [t]}
development: true
`
	cfg, err := parseYAML([]byte(src), "conf/airlock.yaml", dir, mapEnv(map[string]string{"GH_TOKEN": "t0ken", "USER": "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	fs := newServer(dir, "conf/airlock.yaml:2")
	fs.ID, fs.Command, fs.AllowedTools = "fs", "airlock", []string{"read_file"}
	mcpDir := filepath.Join(dir, "mcp")
	github := newServer(mcpDir, "conf/mcp/servers.json:2")
	github.ID, github.Command = "github", "gh-mcp"
	github.Env, github.SecretEnv = map[string]string{}, map[string]string{"TOKEN": "GH_TOKEN"}
	github.AllowedTools = []string{"search_issues", "get_issue"}
	memory := newServer(mcpDir, "conf/mcp/servers.json:3")
	memory.ID, memory.Command = "memory", "mem"
	notes := newServer(dir, "conf/desktop.json:1")
	notes.ID, notes.Command, notes.Args = "notes", "notes", []string{"--ro"}
	// An imported remote server's URL is its allowlist; development: comes
	// from the importing file, after the import.
	local := newServer(dir, "conf/remote.json:1")
	local.makeRemote()
	local.ID, local.URL, local.AllowedTools = "local", "http://127.0.0.1:9000/mcp", []string{"t"}
	local.AllowedHosts = []string{"127.0.0.1"}
	want := &Config{
		Dir:         dir,
		Development: true,
		Servers:     []Server{fs, github, memory, notes, local},
		Limits:      defaultLimits(),
		Tenancy:     Tenancy{Tenant: "default", User: "alice"},
		Approvals:   Approvals{TTL: time.Hour},
		notices: []string{
			`server "memory" exposes no tools: list its tools under import[0].allowed_tools.memory in conf/airlock.yaml:6`,
			`server "notes" exposes no tools: list its tools under import[1].allowed_tools.notes in conf/airlock.yaml:10`,
		},
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestImportOnly(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"mcp.json": `{"mcpServers": {"a": {"command": "x"}}}`})
	for _, src := range []string{
		"import: [mcp.json]\n",
		"servers: []\nimport: [{file: mcp.json, allowed_tools: {a: [\"*\"]}}]\n",
		"import: [" + filepath.Join(dir, "mcp.json") + "]\n",
	} {
		cfg, err := Parse([]byte(src), "airlock.yaml", dir)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got := len(cfg.Servers); got != 1 {
			t.Errorf("%q: %d servers, want 1", src, got)
		}
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.json":        `{"mcpServers": {"a": {"command": "x"}, "off": {"disabled": true}}}`,
		"fs.json":       `{"mcpServers": {"fs": {"command": "x"}}}`,
		"FS.json":       `{"mcpServers": {"FS": {"command": "x"}}}`,
		"off.json":      `{"mcpServers": {"off": {"disabled": true}}}`,
		"bad.json":      "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n \"url\": \"https://x\"},\n  \"b\": {}\n}}",
		"env.json":      `{"mcpServers": {"a": {"command": "${NOT_SET}"}}}`,
		"remote.json":   "{\"mcpServers\": {\n\"local\": {\"url\": \"http://127.0.0.1:9000/mcp\"}}}",
		"sub/dir/.keep": "",
	})
	tests := []errorCase{
		{"not a list", "import: a.json\n", []string{
			"airlock.yaml:1: import: must be a list such as [a, b], not a string"}},
		{"entry is a list", "import:\n  - [a.json]\n", []string{
			"airlock.yaml:2: import[0]: must be a file name or a mapping with file: and allowed_tools:, not a list"}},
		{"entry null", "import:\n  - ~\n", []string{
			"airlock.yaml:2: import[0]: has no value: give one, or remove the key"}},
		{"entry empty", "import: [\"\"]\n", []string{
			"airlock.yaml:1: import[0]: the file name must not be empty"}},
		{"file missing in mapping", "import:\n  - allowed_tools: {a: [t]}\n", []string{
			"airlock.yaml:2: import[0].file: is required: give the path of an mcpServers JSON file"}},
		{"unknown key in entry", "import:\n  - file: a.json\n    allowed: {a: [t]}\n", []string{
			`airlock.yaml:3: import[0].allowed: unknown key: expected one of file, allowed_tools`}},
		{"misspelt key in entry", "import:\n  - file: a.json\n    allowed_tool: {a: [t]}\n", []string{
			`airlock.yaml:3: import[0].allowed_tool: unknown key; did you mean "allowed_tools"?`}},
		{"file does not exist", "import: [nope.json]\n", []string{
			`airlock.yaml:1: import[0]: cannot import "nope.json": it does not exist`}},
		{"file is a directory", "import: [sub/dir]\n", []string{
			`airlock.yaml:1: import[0]: cannot import "sub/dir": it is not a regular file`}},
		{"same file twice", "import:\n  - a.json\n  - ./sub/../a.json\n", []string{
			`airlock.yaml:3: import[1]: "./sub/../a.json" is already imported at line 2`}},
		{"problems inside the file", "servers:\n  - {id: x, command: x, allowed_tools: []}\nimport:\n  - bad.json\nlimits: {max_pages: 0}\n", []string{
			"bad.json:2: mcpServers.a.command: is only for local (stdio) servers: a remote server is reached at its url; remove it",
			"bad.json:4: mcpServers.b.command: is required: give the program that starts the server",
			"airlock.yaml:5: limits.max_pages: must be a whole number of pages from 1 to 10000"}},
		{"remote outside development", "servers:\n  - {id: x, command: x, allowed_tools: []}\nimport:\n  - remote.json\nlimits: {max_pages: 0}\n", []string{
			`remote.json:2: mcpServers.local.url: URL "http://127.0.0.1:9000/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`,
			"airlock.yaml:5: limits.max_pages: must be a whole number of pages from 1 to 10000"}},
		{"unset variable", "import: [env.json]\n", []string{
			"env.json:1: mcpServers.a.command: ${NOT_SET} is not set in the environment and has no default: set NOT_SET, or write ${NOT_SET:-default}"}},
		{"allowed_tools not mapping", "import:\n  - file: a.json\n    allowed_tools: [t]\n", []string{
			"airlock.yaml:3: import[0].allowed_tools: must be a mapping (key: value lines), not a list"}},
		{"allowed_tools unknown server", "import:\n  - file: a.json\n    allowed_tools:\n      a: [t]\n      b: [t]\n", []string{
			`airlock.yaml:5: import[0].allowed_tools.b: there is no server "b" in a.json (it has: a)`}},
		{"allowed_tools bad list", "import:\n  - file: a.json\n    allowed_tools:\n      a: [t, t, \"x*\"]\n", []string{
			`airlock.yaml:4: import[0].allowed_tools.a[1]: "t" is listed twice (first at line 4)`,
			`airlock.yaml:4: import[0].allowed_tools.a[2]: "x*": patterns are not supported: list each tool, or use ["*"] alone for every tool`}},
		{"allowed_tools not a list", "import:\n  - file: a.json\n    allowed_tools: {a: t}\n", []string{
			"airlock.yaml:3: import[0].allowed_tools.a: must be a list such as [a, b], not a string"}},
		{"collides with servers", "servers:\n  - {id: fs, command: x, allowed_tools: []}\nimport: [fs.json]\n", []string{
			`airlock.yaml:3: import[0]: fs.json:1: server id "fs" is already used by servers[0] (line 2)`}},
		{"collides in case", "servers:\n  - {id: fs, command: x, allowed_tools: []}\nimport: [FS.json]\n", []string{
			`airlock.yaml:3: import[0]: FS.json:1: server id "FS" differs only in letter case from "fs" of servers[0] (line 2): ids must differ in more than case`}},
		{"imports collide", "import:\n  - fs.json\n  - FS.json\n", []string{
			`airlock.yaml:3: import[1]: FS.json:1: server id "FS" differs only in letter case from "fs" of fs.json:1: ids must differ in more than case`}},
		{"imports no servers", "import:\n  - off.json\n", []string{
			"airlock.yaml:1: import: imports no servers: list at least one server under servers:"}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return parseYAML([]byte(src), "airlock.yaml", dir, noEnv)
	})
}

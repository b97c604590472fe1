package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseMCPServers(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `{
  "mcpServers": {
    "github": {
      "command": "${BIN_DIR}/github-mcp-server",
      "args": ["stdio", "--toolsets=${TOOLSETS:-issues}", "${EMPTY:-unused}"],
      "env": {"GITHUB_TOKEN": "${TOKEN}", "PLAIN": "x", "AUTH": "Bearer ${TOKEN}", "DEF": "${UNSET:-d}", "BLANK": "${EMPTY}"}
    },
    "memory": {"type": "stdio", "command": "npx", "args": [], "cwd": "srv"},
    "old": {"disabled": true, "type": "http", "url": "https://example.com/mcp", "command": "${MISSING}"},
    "fs": {"command": "fs-server", "disabled": false}
  }
}
`
	env := mapEnv(map[string]string{"BIN_DIR": "/opt/bin", "TOKEN": "s3cret", "EMPTY": "", "USER": "alice"})
	allow := []string{"github:search_issues, github:get_issue", "github:search_issues", "fs:*", "fs:read"}
	cfg, err := parseMCPServers([]byte(src), "mcp.json", dir, allow, env)
	if err != nil {
		t.Fatal(err)
	}
	base := func(id, command string, line int) Server {
		s := newServer(dir, "mcp.json:"+strconv.Itoa(line))
		s.ID, s.Command = id, command
		return s
	}
	github := base("github", "/opt/bin/github-mcp-server", 3)
	github.Args = []string{"stdio", "--toolsets=issues", ""}
	// A value that is one reference to a set variable is a secret, as
	// secret_env; any other value is passed on as it is.
	github.Env = map[string]string{"PLAIN": "x", "AUTH": "Bearer s3cret", "DEF": "d", "BLANK": ""}
	github.SecretEnv = map[string]string{"GITHUB_TOKEN": "TOKEN"}
	github.AllowedTools = []string{"search_issues", "get_issue"}
	memory := base("memory", "npx", 8)
	memory.Args = []string{}
	memory.Cwd = filepath.Join(dir, "srv")
	fs := base("fs", "fs-server", 10)
	fs.AllowedTools = []string{"*"}
	want := &Config{
		Dir:       dir,
		Servers:   []Server{github, memory, fs},
		Limits:    defaultLimits(),
		Tenancy:   Tenancy{Tenant: "default", User: "alice"},
		Approvals: Approvals{TTL: time.Hour},
		notices:   []string{`server "memory" exposes no tools: pass --allow memory:TOOL,... or import it from an airlock.yaml with allowed_tools`},
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("ParseMCPServers mismatch (-want +got):\n%s", diff)
	}
}

func TestParseMCPServersErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := mapEnv(map[string]string{"SECRET": "canary-value", "USER": "alice"})
	tests := []struct {
		name  string
		src   string
		allow []string
		want  []string
	}{
		{"empty", "", nil, []string{`mcp.json: is empty: it should hold {"mcpServers": {...}}`}},
		{"invalid UTF-8", "{\n\"mcpServers\": {\"a\xff\": {}}}", nil, []string{"mcp.json:2: is not valid UTF-8"}},
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\": {\"command\" \"x\"}\n  }\n}\n", nil, []string{
			"mcp.json:3: invalid JSON: invalid character '\"' after object key"}},
		{"syntax on a later line", "{\"mcpServers\": {\n\"a\": {\"command\":\n\n x}}}", nil, []string{
			"mcp.json:4: invalid JSON: invalid character 'x' looking for beginning of value"}},
		{"newline in string", "{\"mcpServers\": {\n\"a\": {\"command\": \"x\n\"}}}", nil, []string{
			`mcp.json:2: invalid JSON: invalid character '\n' in string literal`}},
		{"trailing comma", "{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n}}\n", nil, []string{
			"mcp.json:3: invalid JSON: invalid character '}' looking for beginning of object key string"}},
		{"truncated", "{\"mcpServers\": {\n\"a\": {\"command\": \"x\"\n\n", nil, []string{
			"mcp.json:2: invalid JSON: the file ends in the middle of a value"}},
		{"trailing data", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}\n{}\n", nil, []string{
			"mcp.json:2: invalid JSON: unexpected data after the end of the top-level object"}},
		{"too deep", `{"mcpServers": {"a": {"command": "x", "args": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`, nil, []string{
			"mcp.json:1: invalid JSON: nested too deeply"}},
		{"array at top", "[]", nil, []string{
			`mcp.json:1: must be a JSON object such as {"mcpServers": {...}}, not an array`}},
		{"mcpServers missing", "{}", nil, []string{
			`mcp.json:1: mcpServers: is required: {"mcpServers": {"NAME": {"command": "...", "args": [...]}}}`}},
		{"mcpServers misspelt", "{\"mcpservers\": {}}", nil, []string{
			`mcp.json:1: mcpservers: unknown key; did you mean "mcpServers"?`,
			`mcp.json:1: mcpServers: is required: {"mcpServers": {"NAME": {"command": "...", "args": [...]}}}`}},
		{"other top key", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}},\n\"globalShortcut\": \"\"}", nil, []string{
			"mcp.json:2: globalShortcut: unknown key: expected one of mcpServers"}},
		{"mcpServers array", "{\"mcpServers\": []}", nil, []string{
			`mcp.json:1: mcpServers: must be an object of "NAME": {"command": ...}, not an array`}},
		{"no servers", "{\n\"mcpServers\": {}}", nil, []string{
			"mcp.json:2: mcpServers: has no servers: add one under mcpServers"}},
		{"all disabled", "{\n\"mcpServers\": {\"a\": {\"disabled\": true}}}", nil, []string{
			`mcp.json:2: mcpServers: has no enabled servers: every server is "disabled": true`}},
		{"duplicate server", "{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}}}", nil, []string{
			"mcp.json:3: mcpServers.a: duplicate key (first at line 2)"}},
		{"servers differ in case", "{\"mcpServers\": {\n\"git\": {\"command\": \"x\"},\n\"Git\": {\"command\": \"y\"}}}", nil, []string{
			`mcp.json:3: mcpServers.Git: server id "Git" differs only in letter case from "git" of mcp.json:2: ids must differ in more than case`}},
		{"servers differ in case, one line", `{"mcpServers": {"git": {"command": "x"}, "Git": {"command": 1, "type": "ws"}}}`, nil, []string{
			`mcp.json:1: mcpServers.Git: server id "Git" differs only in letter case from "git" of mcp.json:1: ids must differ in more than case`,
			`mcp.json:1: mcpServers.Git.type: must be "stdio" or "http", not "ws"`,
			"mcp.json:1: mcpServers.Git.command: must be a string, not a number"}},
		{"bad name", "{\"mcpServers\": {\n\"my server.v2\": {\"command\": \"x\"}}}", nil, []string{
			`mcp.json:2: mcpServers."my server.v2": "my server.v2" is not a valid server id: use 1 to 32 letters, digits, _ or -; rename it, for example to "my-server-v2"`}},
		{"server not object", "{\"mcpServers\": {\"a\": \"npx x\"}}", nil, []string{
			`mcp.json:1: mcpServers.a: must be an object such as {"command": "...", "args": [...]}, not a string`}},
		{"unknown server key", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n\"arg\": []}}}", nil, []string{
			`mcp.json:2: mcpServers.a.arg: unknown key; did you mean "args"?`}},
		{"unknown server key far", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n\"autoApprove\": []}}}", nil, []string{
			"mcp.json:2: mcpServers.a.autoApprove: unknown key: expected one of command, args, env, cwd, type, disabled, url, headers"}},
		{"duplicate server key", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n\"command\": \"y\"}}}", nil, []string{
			"mcp.json:2: mcpServers.a.command: duplicate key (first at line 1)"}},
		{"type sse", "{\"mcpServers\": {\"a\": {\"type\": \"sse\", \"url\": \"https://x/sse\", \"headers\": {}}}}", nil, []string{
			"mcp.json:1: mcpServers.a.type: the legacy HTTP+SSE transport is not supported: use the server's Streamable HTTP endpoint"}},
		{"type http without url", "{\"mcpServers\": {\n\"a\": {\"type\": \"streamable-http\"}}}", nil, []string{
			"mcp.json:2: mcpServers.a.url: is required for a remote server: give its Streamable HTTP endpoint, such as https://mcp.example.com/mcp"}},
		{"headers", "{\"mcpServers\": {\"a\": {\"url\": \"https://x\",\n\"headers\": {\"Authorization\": \"Bearer ${SECRET}\"}}}}", nil, []string{
			"mcp.json:2: mcpServers.a.headers: static headers (often credentials) are not accepted: configure the server in an airlock.yaml, with oauth: for its credentials"}},
		{"headers on stdio", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n\"headers\": {}}}}", nil, []string{
			"mcp.json:2: mcpServers.a.headers: static headers (often credentials) are not accepted: configure the server in an airlock.yaml, with oauth: for its credentials"}},
		{"url on stdio", "{\"mcpServers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\",\n\"url\": \"https://x\"}}}", nil, []string{
			`mcp.json:2: mcpServers.a.url: is only for remote servers: remove it, or "type": "stdio"`}},
		{"stdio keys on remote", "{\"mcpServers\": {\"a\": {\"url\": \"https://x\",\n\"command\": \"x\",\n\"args\": [],\n\"env\": {},\n\"cwd\": \".\"}}}", nil, []string{
			"mcp.json:2: mcpServers.a.command: is only for local (stdio) servers: a remote server is reached at its url; remove it",
			"mcp.json:3: mcpServers.a.args: is only for local (stdio) servers: a remote server is reached at its url; remove it",
			"mcp.json:4: mcpServers.a.env: is only for local (stdio) servers: a remote server is reached at its url; remove it",
			"mcp.json:5: mcpServers.a.cwd: is only for local (stdio) servers: a remote server is reached at its url; remove it"}},
		{"url plain http", "{\"mcpServers\": {\"a\": {\"type\": \"http\",\n\"url\": \"http://127.0.0.1:8080/mcp\"}}}", nil, []string{
			`mcp.json:2: mcpServers.a.url: URL "http://127.0.0.1:8080/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)` +
				`; an mcpServers file is in development mode only when an airlock.yaml with development: true imports it (development: true, import: [FILE])`}},
		{"url plain http elsewhere", "{\"mcpServers\": {\"a\": {\"type\": \"http\",\n\"url\": \"http://10.0.0.1:8080/mcp\"}}}", nil, []string{
			`mcp.json:2: mcpServers.a.url: URL "http://10.0.0.1:8080/mcp" must use https (plain http is allowed only to a loopback address with an explicit port, in development mode)`}},
		{"url relative", "{\"mcpServers\": {\"a\": {\"url\": \"/mcp\"}}}", nil, []string{
			"mcp.json:1: mcpServers.a.url: must be an absolute https URL, such as https://mcp.example.com/mcp"}},
		{"url not a string", "{\"mcpServers\": {\"a\": {\"url\": 1}}}", nil, []string{
			"mcp.json:1: mcpServers.a.url: must be a string, not a number"}},
		{"url query", "{\"mcpServers\": {\"a\": {\"url\": \"https://x/mcp?k=v\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.url: URL "https://x/mcp?k=v" must not contain a query`}},
		// A URL with variables is shown as written: the value may hold a
		// secret.
		{"url expanded", "{\"mcpServers\": {\"a\": {\"url\": \"https://x/mcp?key=${SECRET}\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.url: URL "https://x/mcp?key=${SECRET}" (with its variables expanded) must not contain a query`}},
		{"url user information", "{\"mcpServers\": {\"a\": {\"url\": \"https://u:${SECRET}@x/mcp\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.url: URL "https://u:${SECRET}@x/mcp" (with its variables expanded) must not contain user information; use the server's credentials settings`}},
		{"url unset variable", "{\"mcpServers\": {\"a\": {\"url\": \"https://${HOST}/mcp\"}}}", nil, []string{
			"mcp.json:1: mcpServers.a.url: ${HOST} is not set in the environment and has no default: set HOST, or write ${HOST:-default}"}},
		{"type other", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"type\": \"ws\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.type: must be "stdio" or "http", not "ws"`}},
		{"type number", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"type\": 1}}}", nil, []string{
			`mcp.json:1: mcpServers.a.type: must be "stdio" or "http", not a number`}},
		{"disabled not bool", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"disabled\": \"yes\"}}}", nil, []string{
			"mcp.json:1: mcpServers.a.disabled: must be true or false"}},
		{"command missing", "{\"mcpServers\": {\n\"a\": {\"args\": []}}}", nil, []string{
			"mcp.json:2: mcpServers.a.command: is required: give the program that starts the server"}},
		{"command wrong type", "{\"mcpServers\": {\"a\": {\"command\": [\"npx\"]}}}", nil, []string{
			"mcp.json:1: mcpServers.a.command: must be a string, not an array"}},
		{"command empty", "{\"mcpServers\": {\"a\": {\"command\": \"\"}}}", nil, []string{
			"mcp.json:1: mcpServers.a.command: must not be empty: give the program to run"}},
		{"command NUL", "{\"mcpServers\": {\"a\": {\"command\": \"a\\u0000b\"}}}", nil, []string{
			"mcp.json:1: mcpServers.a.command: must not contain a NUL character"}},
		{"args not array", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": \"-v\"}}}", nil, []string{
			"mcp.json:1: mcpServers.a.args: must be an array of strings, not a string"}},
		{"args items", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"ok\",\n 8080,\n null]}}}", nil, []string{
			"mcp.json:2: mcpServers.a.args[1]: must be a string, not a number",
			"mcp.json:3: mcpServers.a.args[2]: must be a string, not null"}},
		{"env not object", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": [\"A=1\"]}}}", nil, []string{
			`mcp.json:1: mcpServers.a.env: must be an object of "NAME": "value", not an array`}},
		{"env entries", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\n\"1A\": \"x\",\n\"B\": 1,\n\"B\": \"y\"}}}}", nil, []string{
			`mcp.json:2: mcpServers.a.env.1A: "1A" is not a valid environment variable name: use letters, digits and _, not starting with a digit`,
			"mcp.json:3: mcpServers.a.env.B: must be a string, not a number",
			"mcp.json:4: mcpServers.a.env.B: duplicate key (first at line 3)"}},
		{"cwd missing", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": \"nope\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.cwd: directory "nope" does not exist`}},
		{"cwd names the value as written", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": \"${SECRET}/x\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.cwd: directory "${SECRET}/x" does not exist`}},
		{"cwd file", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": \"file.txt\"}}}", nil, []string{
			`mcp.json:1: mcpServers.a.cwd: "file.txt" is not a directory`}},
		{"variable missing", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n\"env\": {\"T\": \"${SECRET}:${GITHUB_TOKEN}\"}}}}", nil, []string{
			"mcp.json:2: mcpServers.a.env.T: ${GITHUB_TOKEN} is not set in the environment and has no default: set GITHUB_TOKEN, or write ${GITHUB_TOKEN:-default}"}},
		{"variable invalid", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"${A B}\", \"${}\"]}}}", nil, []string{
			`mcp.json:1: mcpServers.a.args[0]: "${A B}" is not a variable reference: write ${NAME} or ${NAME:-default}`,
			`mcp.json:1: mcpServers.a.args[1]: "${}" is not a variable reference: write ${NAME} or ${NAME:-default}`}},

		// The allow list.
		{"allow malformed", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}", []string{"a", ":t", "a:", "a:b:c"}, []string{
			`--allow "a": write SERVER:TOOL, such as github:search_issues, or SERVER:* for every tool`,
			`--allow ":t": write SERVER:TOOL, such as github:search_issues, or SERVER:* for every tool`,
			`--allow "a:": write SERVER:TOOL, such as github:search_issues, or SERVER:* for every tool`}},
		{"allow unknown server", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"b\": {\"command\": \"y\"}}}", []string{"a:t,c:t"}, []string{
			`--allow "c:t": there is no server "c" in mcp.json (it has: a, b)`}},
		{"allow disabled server", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"off\": {\"disabled\": true}}}", []string{"a:t,off:t"}, []string{
			`--allow "off:t": server "off" is disabled in mcp.json ("disabled": true), so it is not started: enable it there, or leave it out of --allow`}},
		{"allow pattern", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}", []string{"a:read_*"}, []string{
			`--allow "a:read_*": "read_*": patterns are not supported: list each tool, or use ["*"] alone for every tool`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseMCPServers([]byte(tt.src), "mcp.json", dir, tt.allow, env)
			if err == nil {
				t.Fatalf("ParseMCPServers succeeded with %d servers, want errors:\n%s", len(cfg.Servers), strings.Join(tt.want, "\n"))
			}
			if diff := cmp.Diff(tt.want, errLines(err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), "canary-value") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the value of an environment variable: %v", err)
			}
		})
	}
}

func TestParseMCPServersRemote(t *testing.T) {
	dir := t.TempDir()
	src := `{"mcpServers": {
  "a": {"url": "https://MCP.example.com:8443/mcp"},
  "b": {"type": "http", "url": "https://${REMOTE_HOST}/mcp"},
  "c": {"type": "streamable-http", "url": "https://[2001:db8::1]/mcp"},
  "d": {"type": "streamableHttp", "url": "https://d.example.com/mcp"},
  "e": {"type": "streamable_http", "url": "https://e.example.com/mcp"},
  "f": {"type": "sse", "url": "https://f.example.com/sse", "disabled": true}
}}`
	cfg, err := parseMCPServers([]byte(src), "mcp.json", dir, []string{"a:*"}, mapEnv(map[string]string{"REMOTE_HOST": "b.example.com", "USER": "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	remote := func(id, u, host string, line int) Server {
		s := newServer(dir, "mcp.json:"+strconv.Itoa(line))
		s.makeRemote()
		s.ID, s.URL, s.AllowedHosts = id, u, []string{host}
		return s
	}
	a := remote("a", "https://MCP.example.com:8443/mcp", "mcp.example.com", 2)
	a.AllowedTools = []string{"*"}
	want := []Server{
		a,
		remote("b", "https://b.example.com/mcp", "b.example.com", 3),
		remote("c", "https://[2001:db8::1]/mcp", "2001:db8::1", 4),
		remote("d", "https://d.example.com/mcp", "d.example.com", 5),
		remote("e", "https://e.example.com/mcp", "e.example.com", 6),
	}
	if diff := cmp.Diff(want, cfg.Servers); diff != "" {
		t.Errorf("Servers mismatch (-want +got):\n%s", diff)
	}
	for _, s := range cfg.Servers {
		if !s.Remote() || s.OAuth != nil || s.StartTimeout() != 65*time.Second {
			t.Errorf("server %s: Remote() = %v, OAuth = %v, StartTimeout() = %v; want true, nil, 65s", s.ID, s.Remote(), s.OAuth, s.StartTimeout())
		}
	}
}

func TestExpand(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/home/u", "EMPTY": "", "X": "${HOME}"})
	tests := []struct {
		in, want, msg string
	}{
		{"plain", "plain", ""},
		{"${HOME}", "/home/u", ""},
		{"${HOME}/bin:${HOME}", "/home/u/bin:/home/u", ""},
		{"a${HOME}b", "a/home/ub", ""},
		{"${NOPE:-fallback}", "fallback", ""},
		{"${NOPE:-}", "", ""},
		{"${NOPE:-a:-b}", "a:-b", ""},
		{"${EMPTY:-fallback}", "", ""}, // set but empty: the variable wins
		{"${X}", "${HOME}", ""},        // values are not expanded again
		{"$HOME", "$HOME", ""},         // only the braced form
		{"${HOME", "${HOME", ""},       // unterminated: kept as written
		{"$${HOME}", "$/home/u", ""},
		{"${NOPE}", "", "${NOPE} is not set in the environment and has no default: set NOPE, or write ${NOPE:-default}"},
		{"${1X}", "", `"${1X}" is not a variable reference: write ${NAME} or ${NAME:-default}`},
	}
	for _, tt := range tests {
		got, msg := expand(tt.in, env)
		if got != tt.want || msg != tt.msg {
			t.Errorf("expand(%q) = %q, %q; want %q, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
}

func TestParseMCPServersUsesProcessEnvironment(t *testing.T) {
	t.Setenv("AIRLOCK_CONFIG_TEST_BIN", "/usr/local/bin/server")
	cfg, err := ParseMCPServers([]byte(`{"mcpServers": {"a": {"command": "${AIRLOCK_CONFIG_TEST_BIN}"}}}`), "mcp.json", t.TempDir(), []string{"a:t"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Servers[0].Command, "/usr/local/bin/server"; got != want {
		t.Errorf("Command = %q, want %q", got, want)
	}
	if got, want := cfg.Servers[0].AllowedTools, []string{"t"}; !cmp.Equal(got, want) {
		t.Errorf("AllowedTools = %q, want %q", got, want)
	}
	if got := cfg.Notices(); len(got) != 0 {
		t.Errorf("Notices() = %q, want none", got)
	}
}

package config

import (
	"os"
	"testing"

	"github.com/airlockhq/airlock/auth/egress"
)

// FuzzParse checks that no airlock.yaml, however malformed, panics the
// reader, and that every rejection is described.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, seed := range []string{
		"",
		server,
		"servers:\n  - &a {id: a, command: x, allowed_tools: [\"*\"]}\n  - *a\n",
		"servers: &s [*s]\n",
		"a: &a [*a, *a]\nservers: *a\n",
		"servers:\n  - <<: {id: a}\n",
		"servers:\n  - id: a\n   command: x\n",
		"--- \n---\n",
		"servers: [{id: a, command: x, allowed_tools: [], env: {A: !!binary eA==}, args: [!!int 1]}]\n",
		"limits: {max_pages: 0x10, max_tools: 1_000, max_description: .inf}\n",
		"import: [{file: mcp.json, allowed_tools: {github: [\"*\"]}}]\n",
		"servers: [{id: a, command: x, allowed_tools: [], protocol_versions: [2025-11-25], probe_timeout: 1h}]\n",
		"? [a]\n: b\n",
		"servers:\n- id: \"\\u0000\"\n",
		withOAuth,
		"servers: [{id: r, transport: http, url: \"http://u:p@[::1%25x]:0/\", allowed_hosts: [\"[::1]\", \"::1\"], allowed_tools: [], " +
			"scopes: [\"\\x7f\"], oauth: {redirect_uri: \"http://[::ffff:127.0.0.1]:1\", client_metadata_url: \"https://a/\"}}]\n" +
			"development: true\ntenancy: {user: \"${USER}\", tenant: \"${T:-x}\"}\negress: {proxy: \"http://[::1\"}\n",
		"servers: [{id: r, transport: http, scope: task, command: x, url: https://a, allowed_hosts: [A], stream_read_timeout: 1s}]\n",
		"agent: {provider: openai, base_url: \"http://[::1]:0/v1?\", api_key_env: gsk_AbCdEfGhIjKlMnOpQr, max_steps: 0x10, key: x}\n" + server +
			"    instructions: include\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir() // imports and cwd resolve here and find nothing
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseYAML(data, "airlock.yaml", dir, noEnv)
		switch {
		case err != nil && cfg != nil:
			t.Fatalf("Parse returned both a config and an error: %v", err)
		case err == nil && len(cfg.Servers) == 0:
			t.Fatalf("Parse accepted a config without servers")
		case err != nil && err.Error() == "":
			t.Fatalf("Parse returned an empty error")
		}
		if err == nil {
			checkAccepted(t, cfg)
		}
	})
}

// checkAccepted checks what every accepted configuration promises.
func checkAccepted(t *testing.T, cfg *Config) {
	t.Helper()
	if cfg.Tenancy.Tenant == "" || cfg.Tenancy.User == "" {
		t.Fatalf("accepted a configuration without a tenancy: %+v", cfg.Tenancy)
	}
	for _, s := range cfg.Servers {
		if !s.Remote() {
			continue
		}
		if s.URL == "" || len(s.AllowedHosts) == 0 || s.TaskScoped() || s.Command != "" {
			t.Fatalf("accepted a remote server without url or allowed_hosts, or with stdio keys: %+v", s)
		}
		if err := egress.ValidateURL(s.URL, &egress.URLOptions{AllowedHosts: s.AllowedHosts, Development: cfg.Development}); err != nil {
			t.Fatalf("accepted a URL that egress refuses: %v", err)
		}
		if (s.OAuth != nil) != (s.Resource != "") || (s.OAuth != nil) != (len(s.Scopes) > 0) {
			t.Fatalf("accepted OAuth settings that do not go together: %+v", s)
		}
		if s.StreamReadTimeout < s.RequestTimeout {
			t.Fatalf("accepted a stream_read_timeout shorter than request_timeout: %+v", s)
		}
	}
}

// FuzzParseMCPServers does the same for mcpServers JSON.
func FuzzParseMCPServers(f *testing.F) {
	example, err := os.ReadFile("testdata/mcp.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example, "github:*")
	for _, seed := range []string{
		"",
		"{}",
		`{"mcpServers": {"a": {"command": "x"}}}`,
		`{"mcpServers": {"a": {"command": "x", "args": ["${A:-b}", "${"], "env": {"A": "${B}"}}}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
		`{"mcpServers": {"a b": {"type": "sse", "url": "x"}}}`,
		`[[[[[[[[[[]]]]]]]]]]`,
		"{\"mcpServers\": {\"a\": {\"command\": \"\xff\"}}}",
		`{"mcpServers": {"a": {"command": "x"}}} {}`,
		`{"mcpServers": {"a": {"url": "https://${H:-x}/mcp", "type": "streamable-http"}, "b": {"type": "http", "url": "http://[::1]:1/"}}}`,
		`{"mcpServers": {"a": {"url": "https://u:${P:-p}@x/?q#f", "headers": {"A": "b"}, "command": "x"}}}`,
	} {
		f.Add([]byte(seed), "a:t,a:*")
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, allow string) {
		cfg, err := parseMCPServers(data, "mcp.json", dir, []string{allow}, noEnv)
		switch {
		case err != nil && cfg != nil:
			t.Fatalf("ParseMCPServers returned both a config and an error: %v", err)
		case err == nil && len(cfg.Servers) == 0:
			t.Fatalf("ParseMCPServers accepted a file without servers")
		}
		if err == nil {
			checkAccepted(t, cfg)
		}
	})
}

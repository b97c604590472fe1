package config

import (
	"os"
	"testing"
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
	})
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
	})
}

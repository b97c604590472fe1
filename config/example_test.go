package config

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestExample checks that the documented example parses to what it says.
func TestExample(t *testing.T) {
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseYAML(data, "example.yaml", dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	fs := newServer(dir, "example.yaml:17")
	fs.ID, fs.Command = "fs", "airlock"
	fs.Args = []string{"server", "workspace", "--root", "."}
	fs.Env = map[string]string{"LOG_LEVEL": "info"}
	fs.AllowedTools = []string{"read_file"}
	everything := newServer(dir, "example.yaml:58")
	everything.ID, everything.Command = "everything", "npx"
	everything.Args = []string{"-y", "@modelcontextprotocol/server-everything"}
	everything.AllowedTools = []string{"*"}
	everything.RequestTimeout = time.Minute
	github := newServer(dir, "mcp.json:3")
	github.ID, github.Command = "github", "github-mcp-server"
	github.Args = []string{"stdio", "--toolsets", "issues"}
	github.Env = map[string]string{"GITHUB_HOST": "github.com"}
	github.AllowedTools = []string{"search_issues", "get_issue"}
	memory := newServer(dir, "mcp.json:8")
	memory.ID, memory.Command = "memory", "npx"
	memory.Args = []string{"-y", "@modelcontextprotocol/server-memory"}
	memory.AllowedTools = []string{"*"}
	want := &Config{
		Dir:     dir,
		Servers: []Server{fs, everything, github, memory},
		Limits:  defaultLimits(),
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("example mismatch (-want +got):\n%s", diff)
	}
}

// TestExampleIsComplete keeps the example showing every key this version
// accepts.
func TestExampleIsComplete(t *testing.T) {
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, ks := range []keySet{topKeys, serverKeys, limitKeys, importKeys} {
		keys = append(keys, ks.known...)
	}
	for _, key := range keys {
		if !regexp.MustCompile(`(?m)^[ -]*` + key + `:`).Match(data) {
			t.Errorf("testdata/example.yaml does not show the key %s", key)
		}
	}
}

// TestExampleMCPServers checks the mcpServers example on its own.
func TestExampleMCPServers(t *testing.T) {
	cfg, err := Load("testdata/mcp.json", &LoadOptions{Allow: []string{"github:search_issues"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range cfg.Servers {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"github", "memory"}, ids); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	want := []string{`server "memory" exposes no tools: pass --allow memory:TOOL,... or import it from an airlock.yaml with allowed_tools`}
	if diff := cmp.Diff(want, cfg.Notices()); diff != "" {
		t.Errorf("Notices() mismatch (-want +got):\n%s", diff)
	}
}

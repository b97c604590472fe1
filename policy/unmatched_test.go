package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/config"
)

// TestUnmatched: entries that name no tool of a ready server are reported
// with their file:line and a suggestion; entries that match, patterns
// that guard every server, and entries about servers whose tools are
// unknown are not.
func TestUnmatched(t *testing.T) {
	const yaml = serversYAML + `policy:
  tools:
    - {server: fs, tool: read_fil, effect: read}
    - {server: fs, tool: read_file, effect: read}
    - {server: gh, tool: create_isue, effect: write}
  rules:
    - {server: fs, tool: raed_file, decision: deny}
    - {server: "*", tool: fs__write_file, decision: ask}
    - {server: "*", tool: delete_*, decision: deny}
    - {server: fs, tool: wirte_*, decision: ask}
    - {server: fs, tool: list_*, decision: allow}
    - {server: "*", tool: wrte_file, decision: deny}
audit:
  record_values: [fs__read_file, read_file, fs__nope, gh__create_issue, "web__x"]
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "airlock.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(yaml), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(&cfg.Policy, cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cat := Catalog{
		Ready:    []string{"fs", "web"},
		NotReady: []string{"gh"},
		Tools: []CatalogTool{
			{Server: "fs", Name: "fs__read_file", Remote: "read_file"},
			{Server: "fs", Name: "fs__write_file", Remote: "write_file"},
			{Server: "fs", Name: "fs__list_dir", Remote: "list_dir"},
		},
	}
	got := p.Unmatched(cat, cfg.Audit)
	want := []Warning{
		{Entry: "policy.tools[0]", Source: "airlock.yaml:7",
			Msg: `policy.tools[0] (airlock.yaml:7): server fs has no tool "read_fil" in the catalog, so this entry classifies nothing; did you mean "read_file"?`},
		{Entry: "policy.rules[0]", Source: "airlock.yaml:11",
			Msg: `policy.rules[0] (airlock.yaml:11): no tool named "raed_file" on server fs, so this rule never applies; did you mean "read_file"?`},
		{Entry: "policy.rules[3]", Source: "airlock.yaml:14",
			Msg: `policy.rules[3] (airlock.yaml:14): "wirte_*" matches none of the 3 tools of server fs, so this rule never applies`},
		{Entry: "policy.rules[5]", Source: "airlock.yaml:16",
			Msg: `policy.rules[5] (airlock.yaml:16): no tool named "wrte_file" on the ready servers it names (fs, web), so this rule never applies; did you mean "write_file"? (not checked: gh, not ready)`},
		{Entry: "audit.record_values[1]", Source: "airlock.yaml:18",
			Msg: `audit.record_values[1] (airlock.yaml:18): no tool named "read_file" in the catalog, so no values are recorded for it; "read_file" is what server fs calls it: its local name is "fs__read_file"`},
		{Entry: "audit.record_values[2]", Source: "airlock.yaml:18",
			Msg: `audit.record_values[2] (airlock.yaml:18): no tool named "fs__nope" in the catalog, so no values are recorded for it`},
		{Entry: "audit.record_values[4]", Source: "airlock.yaml:18",
			Msg: `audit.record_values[4] (airlock.yaml:18): no tool named "web__x" in the catalog, so no values are recorded for it`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Unmatched (-want +got):\n%s", diff)
	}

	// Everything matches once the names are right.
	var nilPolicy *Policy
	if got := nilPolicy.Unmatched(cat, config.Audit{RecordValues: []string{"*"}}); len(got) != 0 {
		t.Errorf("the default policy: %v", got)
	}
}

// TestUnmatchedRecordValuesPrefixes: an audit.record_values entry whose
// name starts with the tool_prefix of a server that is not ready is not
// reported (its tools are unknown); with the default prefix, a name that
// only looks like SERVER__TOOL of a ready server is.
func TestUnmatchedRecordValuesPrefixes(t *testing.T) {
	var p *Policy
	audit := config.Audit{RecordValues: []string{"gh-create", "fs__nope", "echo"}}
	cat := Catalog{
		Ready:    []string{"fs"},
		NotReady: []string{"gh", "own"},
		Prefixes: map[string]string{"fs": "fs__", "gh": "gh-"},
		Tools:    []CatalogTool{{Server: "fs", Name: "fs__read_file", Remote: "read_file"}},
	}
	var got []string
	for _, w := range p.Unmatched(cat, audit) {
		got = append(got, w.Entry)
	}
	// "echo" may be a tool of own, whose default prefix it lacks: reported.
	want := []string{"audit.record_values[1]", "audit.record_values[2]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	cat.Prefixes["own"] = ""
	got = nil
	for _, w := range p.Unmatched(cat, audit) {
		got = append(got, w.Entry)
	}
	// Now any name may be one of own's tools, which are unknown.
	if len(got) != 0 {
		t.Errorf("with own's tools under their own names, warnings = %v, want none", got)
	}
}

// TestUnmatchedLocalNameInPolicyTools: policy.tools names the server's own
// tools; an entry that gives a local name, which the catalog does list, is
// reported as classifying nothing with the name it should give instead, not
// as a tool missing from the catalog.
func TestUnmatchedLocalNameInPolicyTools(t *testing.T) {
	p, err := New(&config.Policy{Tools: []config.ToolClass{
		{Server: "fs", Tool: "fs__write_file", Effect: "write", Source: "airlock.yaml:3"}}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat := Catalog{Ready: []string{"fs"}, Tools: []CatalogTool{
		{Server: "fs", Name: "fs__read_file", Remote: "read_file"},
		{Server: "fs", Name: "fs__write_file", Remote: "write_file"},
		{Server: "fs", Name: "fs__tool_with_dots_d1c8cf0a", Remote: "tool.with.dots"}}}
	got := p.Unmatched(cat, config.Audit{})
	want := []Warning{{Entry: "policy.tools[0]", Source: "airlock.yaml:3",
		Msg: `policy.tools[0] (airlock.yaml:3): server fs has no tool "fs__write_file" in the catalog, so this entry classifies nothing; "fs__write_file" is the tool's local name: policy.tools names the server's own, "write_file"`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Unmatched (-want +got):\n%s", diff)
	}
}

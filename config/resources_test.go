package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestMatchResource(t *testing.T) {
	tests := []struct {
		glob, uri string
		want      bool
	}{
		{"*", "file:///etc/passwd", true},
		{"*", "", true},
		{"file:///etc/**", "file:///etc/a/b", true},
		{"file:///etc/**", "file:///etc/", true},
		{"file:///etc/**", "file:///etc", false},
		{"file:///etc/**", "file:///etcetera/a", false},
		{"file:///etc/**", "FILE:///etc/a", false},
		{"test://static/*", "test://static/x", true},
		{"test://static/*", "test://static/", true},
		{"test://static/*", "test://static/x/y", false},
		{"test://static/*/y", "test://static/x/y", true},
		{"test://*/x", "test://a/b/x", false},
		{"test://**/x", "test://a/b/x", true},
		{"test://***/x", "test://a/b/x", true},
		{"**", "anything/at/all", true},
		{"**.md", "docs://a/b.md", true},
		{"*.md", "docs://a/b.md", false},
		{"demo://resource/1", "demo://resource/1", true},
		{"demo://resource/1", "demo://resource/10", false},
		{"demo://resource/?", "demo://resource/1", false}, // ? is literal
		{"demo://resource/?", "demo://resource/?", true},
		{"demo://[a]", "demo://a", false}, // so are [ ]
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY/c", false},
		{"a*b**c", "aXbY/c", true},
		{"é/*", "é/ü", true},
	}
	for _, tt := range tests {
		if got := MatchResource(tt.glob, tt.uri); got != tt.want {
			t.Errorf("MatchResource(%q, %q) = %v, want %v", tt.glob, tt.uri, got, tt.want)
		}
	}
}

// TestMatchResourceLong: a glob of many stars against a long URI that it
// does not match takes no more than the product of their lengths.
func TestMatchResourceLong(t *testing.T) {
	glob := strings.Repeat("a*", 50) + "b"
	uri := strings.Repeat("a", 100000)
	if MatchResource(glob, uri) {
		t.Error("matched, want no match")
	}
}

func TestAllowsResourcesAndPrompts(t *testing.T) {
	tests := []struct {
		allowed []string
		uri     string
		all     bool
		want    bool
	}{
		{nil, "file:///a", false, false},
		{[]string{}, "file:///a", false, false},
		{[]string{"*"}, "file:///etc/a/b", true, true},
		{[]string{"file:///etc/**"}, "file:///etc/a/b", false, true},
		{[]string{"test://static/*"}, "test://static/x", false, true},
		{[]string{"test://static/*"}, "test://static/x/y", false, false},
		{[]string{"test://static/*", "file:///etc/**"}, "file:///etc/x/y", false, true},
		{[]string{"**"}, "file:///etc/x/y", false, true},
	}
	for _, tt := range tests {
		s := Server{AllowedResources: tt.allowed}
		if got := s.AllowsAllResources(); got != tt.all {
			t.Errorf("%v: AllowsAllResources() = %v, want %v", tt.allowed, got, tt.all)
		}
		if got := s.AllowsResource(tt.uri); got != tt.want {
			t.Errorf("%v: AllowsResource(%q) = %v, want %v", tt.allowed, tt.uri, got, tt.want)
		}
	}

	prompts := []struct {
		allowed []string
		name    string
		all     bool
		want    bool
	}{
		{nil, "p", false, false},
		{[]string{}, "p", false, false},
		{[]string{"*"}, "p", true, true},
		{[]string{"p", "q"}, "q", false, true},
		{[]string{"p"}, "P", false, false},
		{[]string{"p"}, "p2", false, false},
	}
	for _, tt := range prompts {
		s := Server{AllowedPrompts: tt.allowed}
		if got := s.AllowsAllPrompts(); got != tt.all {
			t.Errorf("%v: AllowsAllPrompts() = %v, want %v", tt.allowed, got, tt.all)
		}
		if got := s.AllowsPrompt(tt.name); got != tt.want {
			t.Errorf("%v: AllowsPrompt(%q) = %v, want %v", tt.allowed, tt.name, got, tt.want)
		}
	}
}

// TestResourcesDefaultToNone: a server that leaves allowed_resources and
// allowed_prompts out, or lists none, exposes none; so does a server of an
// mcpServers file, imported or given with --config.
func TestResourcesDefaultToNone(t *testing.T) {
	dir := t.TempDir()
	json := `{"mcpServers": {"m": {"command": "x"}}}`
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	src := server + "  - {id: b, command: x, allowed_tools: [], allowed_resources: [], allowed_prompts: []}\nimport:\n  - {file: mcp.json, allowed_tools: {m: [\"*\"]}}\n"
	cfg, err := Parse([]byte(src), "airlock.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Load(filepath.Join(dir, "mcp.json"), &LoadOptions{Allow: []string{"m:*"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(cfg.Servers, fromJSON.Servers...) {
		if s.AllowedResources != nil || s.AllowedPrompts != nil || s.AllowsResource("file:///a") || s.AllowsPrompt("p") {
			t.Errorf("server %s: resources %v, prompts %v: want none", s.ID, s.AllowedResources, s.AllowedPrompts)
		}
	}
	if got := cfg.Limits.MaxResourceBytes; got != 8<<20 {
		t.Errorf("MaxResourceBytes = %d, want %d", got, 8<<20)
	}
}

// TestForWorkspaceCopiesResources: a task server's lists are its own.
func TestForWorkspaceCopiesResources(t *testing.T) {
	s := Server{Scope: "task", AllowedResources: []string{"a://*"}, AllowedPrompts: []string{"p"}}
	b := s.ForWorkspace("/w")
	b.AllowedResources[0], b.AllowedPrompts[0] = "x", "y"
	if diff := cmp.Diff([]string{"a://*", "p"}, []string{s.AllowedResources[0], s.AllowedPrompts[0]}); diff != "" {
		t.Errorf("ForWorkspace shares its lists (-want +got):\n%s", diff)
	}
}

func TestParseResourceRules(t *testing.T) {
	src := server + `policy:
  rules:
    - {server: a, resource: "file:///etc/**", decision: deny}
    - {resource: "*", decision: ask}
    - {server: a, prompt: "summarize*", decision: allow}
    - {server: a, decision: deny}
    - {tool: "*", decision: ask}
`
	cfg, err := Parse([]byte(src), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Server: "a", Tool: "*", Resource: "file:///etc/**", Decision: "deny", Source: "airlock.yaml:7"},
		{Server: "*", Tool: "*", Resource: "*", Decision: "ask", Source: "airlock.yaml:8"},
		{Server: "a", Tool: "*", Prompt: "summarize*", Decision: "allow", Source: "airlock.yaml:9"},
		{Server: "a", Tool: "*", Decision: "deny", Source: "airlock.yaml:10"},
		{Server: "*", Tool: "*", ToolGiven: true, Decision: "ask", Source: "airlock.yaml:11"},
	}
	if diff := cmp.Diff(want, cfg.Policy.Rules); diff != "" {
		t.Errorf("rules mismatch (-want +got):\n%s", diff)
	}
}

func TestParseResourceErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []errorCase{
		// servers[].allowed_resources and allowed_prompts
		{"resources not a list", "    allowed_resources: \"*\"\n    allowed_prompts: {a: b}\n", []string{
			`airlock.yaml:5: servers[0].allowed_resources: must be a list such as [a, b], not a string`,
			`airlock.yaml:6: servers[0].allowed_prompts: must be a list such as [a, b], not a mapping`}},
		{"resource entries", "    allowed_resources: [\"\", \" file:///a\", \"a\\tb\", \"x://*\", \"x://*\", [y]]\n", []string{
			"airlock.yaml:5: servers[0].allowed_resources[0]: must not be empty",
			`airlock.yaml:5: servers[0].allowed_resources[1]: " file:///a" has leading or trailing spaces`,
			`airlock.yaml:5: servers[0].allowed_resources[2]: "a\tb" contains a control character`,
			`airlock.yaml:5: servers[0].allowed_resources[4]: "x://*" is listed twice (first at line 5)`,
			"airlock.yaml:5: servers[0].allowed_resources[5]: must be a string, not a list"}},
		{"resource star not alone", "    allowed_resources: [\"*\", \"file:///a\"]\n", []string{
			`airlock.yaml:5: servers[0].allowed_resources: "*" allows every resource and must be alone: write ["*"] or list the resources`}},
		{"prompt entries", "    allowed_prompts: [\"\", \"sum*\", \"p \", \"a\\x7fb\", p, p]\n", []string{
			"airlock.yaml:5: servers[0].allowed_prompts[0]: must not be empty",
			`airlock.yaml:5: servers[0].allowed_prompts[1]: "sum*": patterns are not supported: list each prompt, or use ["*"] alone for every prompt`,
			`airlock.yaml:5: servers[0].allowed_prompts[2]: "p " has leading or trailing spaces`,
			`airlock.yaml:5: servers[0].allowed_prompts[3]: "a\x7fb" contains a control character`,
			`airlock.yaml:5: servers[0].allowed_prompts[5]: "p" is listed twice (first at line 5)`}},
		{"prompt star not alone", "    allowed_prompts: [p, \"*\"]\n", []string{
			`airlock.yaml:5: servers[0].allowed_prompts: "*" allows every prompt and must be alone: write ["*"] or list the prompts`}},
		{"allowed_resources at top", "allowed_resources: []\n", []string{
			"airlock.yaml:5: allowed_resources: unknown key here: it belongs in a server entry under servers:"}},
		{"allowed_prompts misspelt", "    allowed_prompt: []\n", []string{
			`airlock.yaml:5: servers[0].allowed_prompt: unknown key; did you mean "allowed_prompts"?`}},

		// limits.max_resource_bytes
		{"max_resource_bytes low", "limits: {max_resource_bytes: 1023}\n", []string{
			"airlock.yaml:5: limits.max_resource_bytes: must be a whole number of bytes from 1024 to 1073741824"}},
		{"max_resource_bytes high", "limits: {max_resource_bytes: 1073741825}\n", []string{
			"airlock.yaml:5: limits.max_resource_bytes: must be a whole number of bytes from 1024 to 1073741824"}},
		{"max_resource_bytes in a server", "    max_resource_bytes: 2048\n", []string{
			"airlock.yaml:5: servers[0].max_resource_bytes: unknown key here: it belongs under limits: at the top level"}},
		{"max_resource_bytes at top", "max_resource_bytes: 2048\n", []string{
			"airlock.yaml:5: max_resource_bytes: unknown key here: it belongs under limits:"}},

		// policy.rules with resource and prompt
		{"rule tool and resource", "policy:\n  rules: [{tool: t, resource: \"file:///a\", decision: deny}]\n", []string{
			"airlock.yaml:6: policy.rules[0].resource: a rule names a tool or a resource, not both: write one rule for the tool calls and one for the resource reads"}},
		{"rule tool star and prompt", "policy:\n  rules:\n    - tool: \"*\"\n      prompt: p\n      decision: deny\n", []string{
			"airlock.yaml:8: policy.rules[0].prompt: a rule names a tool or a prompt, not both: write one rule for the tool calls and one for the prompt gets"}},
		{"rule resource and prompt", "policy:\n  rules: [{resource: \"*\", prompt: p, decision: deny}]\n", []string{
			"airlock.yaml:6: policy.rules[0].prompt: a rule names a resource or a prompt, not both: write one rule for the resource reads and one for the prompt gets"}},
		{"resource rule args", "policy:\n  rules:\n    - resource: \"file:///**\"\n      decision: ask\n      args: [{pointer: /p, enum: [x]}]\n", []string{
			"airlock.yaml:9: policy.rules[0].args: constrains a tool call's arguments, and this rule is about resource reads: remove args"}},
		{"prompt rule args on deny", "policy:\n  rules:\n    - prompt: p\n      decision: deny\n      args: []\n", []string{
			"airlock.yaml:9: policy.rules[0].args: constrains a tool call's arguments, and this rule is about prompt gets: remove args"}},
		{"rule empty resource and prompt", "policy:\n  rules:\n    - {resource: \"\", decision: ask}\n    - {prompt: \"\", decision: ask}\n", []string{
			`airlock.yaml:7: policy.rules[0].resource: must not be empty: give a URI glob such as "file:///docs/**", or "*" for every resource`,
			`airlock.yaml:8: policy.rules[1].prompt: must not be empty: give a prompt name, or a glob such as "*" for every prompt`}},
		{"rule resource and prompt characters", "policy:\n  rules:\n    - {resource: \"file:///a \", decision: ask}\n    - {prompt: \"a\\nb\", decision: ask}\n    - {resource: [x], decision: ask}\n", []string{
			`airlock.yaml:7: policy.rules[0].resource: "file:///a " has leading or trailing spaces`,
			`airlock.yaml:8: policy.rules[1].prompt: "a\nb" contains a control character`,
			"airlock.yaml:9: policy.rules[2].resource: must be a string, not a list"}},
		{"resource in a tool class", "policy:\n  tools: [{server: a, resource: x, effect: read}]\n", []string{
			"airlock.yaml:6: policy.tools[0].resource: unknown key here: it belongs in an entry under policy.rules",
			"airlock.yaml:6: policy.tools[0].tool: is required: give the server's own name for the tool"}},
		{"prompt under policy", "policy: {prompt: x}\n", []string{
			"airlock.yaml:5: policy.prompt: unknown key here: it belongs in an entry under policy.rules"}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(server+src), "airlock.yaml", dir)
	})
}

// FuzzMatchResource compares MatchResource with the regular expression
// its glob stands for.
func FuzzMatchResource(f *testing.F) {
	f.Add("file:///etc/**", "file:///etc/a/b")
	f.Add("test://static/*", "test://static/x/y")
	f.Add("a*b**c***", "a/b/c")
	f.Fuzz(func(t *testing.T, glob, uri string) {
		if glob == "*" || !utf8.ValidString(glob) {
			return
		}
		var re strings.Builder
		re.WriteString(`^(?s:`)
		for i := 0; i < len(glob); {
			n := 0
			for i+n < len(glob) && glob[i+n] == '*' {
				n++
			}
			switch {
			case n == 1:
				re.WriteString(`[^/]*`)
			case n > 1:
				re.WriteString(`.*`)
			default:
				_, size := utf8.DecodeRuneInString(glob[i:])
				re.WriteString(regexp.QuoteMeta(glob[i : i+size]))
				n = size
			}
			i += n
		}
		re.WriteString(`)$`)
		want := regexp.MustCompile(re.String()).MatchString(uri)
		if got := MatchResource(glob, uri); got != want {
			t.Errorf("MatchResource(%q, %q) = %v, want %v (%s)", glob, uri, got, want, re.String())
		}
	})
}

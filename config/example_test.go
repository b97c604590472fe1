package config

import (
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
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
	cfg, err := parseYAML(data, "example.yaml", dir, mapEnv(map[string]string{"EVERYTHING_API_KEY": "canary-secret", "USER": "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	fs := newServer(dir, "example.yaml:17")
	fs.ID, fs.Command = "fs", "airlock"
	fs.Args = []string{"server", "workspace", "--root", "."}
	fs.Env = map[string]string{"LOG_LEVEL": "info"}
	fs.AllowedTools = []string{"read_file"}
	fs.HealthCheck = HealthCheck{Interval: 30 * time.Second, Timeout: 5 * time.Second}
	fs.MaxCallDuration = 10 * time.Minute
	fs.Tasks = &Tasks{Tools: []string{"read_*"}, Required: []string{}, TTL: time.Hour, PollInterval: time.Second, MaxResultBytes: 1 << 20}
	issues := newServer(dir, "example.yaml:92")
	issues.makeRemote()
	issues.ID = "issues"
	issues.URL, issues.Resource = "https://mcp.example.com/mcp", "https://mcp.example.com"
	issues.AllowedHosts = []string{"mcp.example.com"}
	issues.Scopes = []string{"mcp:issues.read"}
	issues.OAuth = &OAuth{Grant: GrantAuthorizationCode, ClientMetadataURL: "https://airlock.example.com/client.json", RedirectURI: "http://127.0.0.1:8765/callback"}
	issues.AllowedTools = []string{"get_issue", "search_issues"}
	issues.CAFile = filepath.Join(dir, "internal-ca.pem")
	everything := newServer(dir, "example.yaml:155")
	everything.ID, everything.Command = "everything", "npx"
	everything.Args = []string{"-y", "@modelcontextprotocol/server-everything"}
	everything.AllowedTools = []string{"*"}
	everything.ToolPrefix = ptr("everything__")
	everything.RequestTimeout = time.Minute
	everything.SecretEnv = map[string]string{"API_KEY": "EVERYTHING_API_KEY"}
	everything.Sampling = SamplingDeny
	everything.AllowedResources = []string{"demo://resource/static/document/*"}
	everything.AllowedPrompts = []string{"simple-prompt", "args-prompt"}
	everything.Instructions = InstructionsOmit
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
		Servers: []Server{fs, issues, everything, github, memory},
		Limits:  defaultLimits(),
		Tenancy: Tenancy{Tenant: "default", User: "alice"},
		Egress:  Egress{Proxy: "http://proxy.internal:3128"},
		Policy: Policy{
			Tools: []ToolClass{
				{Server: "fs", Tool: "read_file", Effect: "read", Source: "example.yaml:224"},
				{Server: "everything", Tool: "echo", Effect: "read", Idempotent: true, Source: "example.yaml:225"},
			},
			Rules: []Rule{
				{Server: "fs", Tool: "write_*", ToolGiven: true, Decision: "ask", Source: "example.yaml:246", Args: []ArgConstraint{{
					Pointer: "/path", Allow: []string{"src/**", "docs/**"}, Deny: []string{"**/.env", "**/.git/**"},
					Source: "example.yaml:250"}}},
				{Server: "everything", Tool: "echo", ToolGiven: true, Decision: "allow", Source: "example.yaml:253", Args: []ArgConstraint{{
					Pointer: "/message", Pattern: "[A-Za-z0-9 .,!?-]{1,200}", Source: "example.yaml:257"}}},
				{Server: "everything", Tool: "get-annotated-message", ToolGiven: true, Decision: "allow", Source: "example.yaml:259", Args: []ArgConstraint{{
					Pointer: "/messageType", Enum: []string{"error", "success", "debug"}, Source: "example.yaml:263"}}},
				{Server: "*", Tool: "delete_*", ToolGiven: true, Decision: "deny", Source: "example.yaml:265"},
				{Server: "everything", Tool: "*", Resource: "demo://resource/static/document/*", Decision: "allow", Source: "example.yaml:266"},
				{Server: "everything", Tool: "*", Prompt: "args-*", Decision: "ask", Source: "example.yaml:267"},
			},
			Cedar:       "policies.cedar",
			CedarSource: "example.yaml:274",
			Hooks:       []Hook{{Command: []string{"./check-call.sh", "--strict"}, Timeout: 5 * time.Second, Source: "example.yaml:280"}},
		},
		Approvals: Approvals{TTL: time.Hour},
		Audit:     Audit{RecordValues: []string{"fs__read_file"}, RecordValueSources: []string{"example.yaml:292"}},
		Serve: Serve{Auth: &ServeAuth{Issuer: "https://id.example.com", Resource: "https://airlock.example.com/mcp",
			Scopes: []string{"mcp:tools"}, TenantClaim: "tenant", UserClaim: "sub"},
			Console: &ServeConsole{ClientID: "airlock-console", ClientSecretEnv: "AIRLOCK_CONSOLE_SECRET", Scopes: []string{"profile"},
				Operators: []ConsoleOperator{{Tenant: "acme", User: "alice"}}},
			AllowedOrigins: []string{"http://localhost:6274"}, MaxSessions: 1000, MaxSessionsPerUser: 100, SessionIdleTimeout: 30 * time.Minute, MetricsTokenEnv: "AIRLOCK_METRICS_TOKEN"},
		Agent: Agent{Provider: ProviderOpenAI, Model: "qwen3:8b", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: DefaultOpenAIKeyEnv,
			System: "You work in this repository through its tools. Say what you changed.", MaxSteps: DefaultAgentMaxSteps, MaxToolsInPrompt: DefaultMaxToolsInPrompt},
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("example mismatch (-want +got):\n%s", diff)
	}
}

// TestExampleWithoutUSER: the example works where USER is unset (cron,
// containers, services), as the default it shows does: its ${USER} is then
// the account's name.
func TestExampleWithoutUSER(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.Username == "" {
		t.Skip("no account name to fall back to")
	}
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseYAML(data, "example.yaml", "testdata", mapEnv(map[string]string{"EVERYTHING_API_KEY": "canary-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tenancy.User != u.Username {
		t.Errorf("tenancy.user = %q, want the account's name %q", cfg.Tenancy.User, u.Username)
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
	for _, ks := range []keySet{topKeys, serverKeys, limitKeys, importKeys, policyKeys,
		toolClassKeys, ruleKeys, argKeys, hookKeys, approvalKeys, auditKeys, healthKeys, taskKeys,
		oauthKeys, tenancyKeys, egressKeys, serveKeys, serveAuthKeys, serveConsoleKeys, storeKeys, agentKeys} {
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

// TestDocsShowExample keeps the complete example in docs/config.md equal to
// the one tested here.
func TestDocsShowExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"testdata/example.yaml", "testdata/policies.cedar"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "\n"+string(data)+"```\n") {
			t.Errorf("docs/config.md does not show %s as it is: copy it into the complete example", name)
		}
	}
}

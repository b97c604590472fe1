package airlock_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/airlockhq/airlock"

// allowedImports lists, for each package, the Airlock packages it may
// import (ARCHITECTURE.md). A package not listed may import none.
var allowedImports = map[string][]string{
	"":                          {"auth/egress", "auth/oauth", "auth/secrets", "config", "internal/artifact", "internal/audit", "internal/canonical", "internal/catalog", "internal/redact", "internal/schema", "internal/telemetry", "internal/upstream", "internal/worktree", "metrics", "policy", "store", "store/postgres", "store/sqlite"},
	"cmd/airlock":               {"", "agent", "auth/bearer", "auth/egress", "auth/oauth", "config", "console", "gateway", "internal/lines", "metrics", "servers/issues", "servers/workspace", "store"},
	"agent":                     {"", "config", "store"},
	"console":                   {"", "config", "store"},
	"agent/agenttest":           nil,
	"gateway":                   {"", "auth/bearer", "config", "internal/lines", "metrics", "policy", "store"},
	"bench/callbench":           {"", "agent", "config", "store"},
	"conformance/client":        {"", "auth/oauth", "auth/secrets", "config", "internal/testenv"},
	"conformance/taskserver":    {},
	"internal/catalog":          {"config", "internal/schema", "policy"},
	"internal/upstream":         {"config", "internal/schema"},
	"internal/worktree":         {"internal/upstream"},
	"config":                    {"auth/egress"},
	"internal/schema":           nil,
	"internal/lines":            nil,
	"metrics":                   nil,
	"internal/artifact":         nil,
	"internal/testenv":          nil,
	"servers/workspace":         nil,
	"servers/issues":            {"auth/bearer", "internal/schema"},
	"servers/issues/issuestest": {"auth/bearer", "auth/bearer/bearertest", "servers/issues"},
	"auth/bearer":               {"auth/egress", "internal/schema"},
	"auth/bearer/bearertest":    nil,
	"policy":                    {"config", "internal/canonical"},
	"store":                     nil,
	"store/sqlite":              {"store", "store/internal/sqlrow"},
	"store/postgres":            {"store", "store/internal/sqlrow"},
	"store/internal/sqlrow":     {"store"},
	"store/storetest":           {"store"},
	"internal/redact":           {"internal/canonical"},
	"internal/canonical":        nil,
	"internal/telemetry":        {"store"},
	"internal/audit":            {"internal/canonical", "internal/redact", "store"},
	"auth/egress":               nil,
	"auth/secrets":              nil,
	"auth/oauth":                {"auth/bearer", "auth/egress", "auth/secrets", "internal/schema"},
	"auth/oauth/oauthtest":      {"auth/bearer"},
}

// modelSDKs are the model providers' SDKs, which only package agent
// imports: the rest of Airlock never talks to a model.
var modelSDKs = []string{"github.com/openai/openai-go/v3", "github.com/anthropics/anthropic-sdk-go/v2"}

// TestLayers keeps the layers from leaking into each other, and every
// package documented.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Doc        string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if p.Doc == "" {
			t.Errorf("package %s has no package comment", p.ImportPath)
		}
		allowed, known := allowedImports[rel]
		if !known {
			t.Errorf("package %s is not in the layer table: add it to allowedImports and ARCHITECTURE.md", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			for _, sdk := range modelSDKs {
				if (imp == sdk || strings.HasPrefix(imp, sdk+"/")) && rel != "agent" {
					t.Errorf("%s imports %s: only package agent speaks to model providers", p.ImportPath, imp)
				}
			}
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			target := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if !slices.Contains(allowed, target) {
				t.Errorf("%s imports %s, which its layer may not", p.ImportPath, imp)
			}
		}
	}
}

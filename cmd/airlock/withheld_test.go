package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestTaskRequiredToolIsWithheld: a tool that can only be called as an
// MCP task (the reference server's simulate-research-query) is left out
// of the catalog, and airlock tools says why, in text and in JSON.
func TestTaskRequiredToolIsWithheld(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), fmt.Sprintf(
		"servers:\n  - id: everything\n    command: %q\n    args: [%q, stdio]\n    connect_timeout: 60s\n"+
			"    allowed_tools: [echo, simulate-research-query]\n", node, script))

	r := runCLI(t, dir, "", "tools", "--json").want(t, 0)
	out := decode(t, r.stdout)
	tools := out["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "everything__echo" {
		t.Errorf("tools = %v, want only everything__echo", tools)
	}
	withheld, _ := out["withheld"].([]any)
	if len(withheld) != 1 {
		t.Fatalf("withheld = %v, want simulate-research-query", out["withheld"])
	}
	w := withheld[0].(map[string]any)
	if w["server"] != "everything" || w["tool"] != "simulate-research-query" || w["flag"] != "task_required" ||
		!strings.Contains(w["reason"].(string), "can only be called as an MCP task (execution.taskSupport: required)") {
		t.Errorf("withheld = %v", w)
	}

	r = runCLI(t, dir, "", "tools").want(t, 0)
	want := "airlock: warning: server everything's tool simulate-research-query can only be called as an MCP task"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if strings.Contains(r.stdout, "simulate-research-query") {
		t.Errorf("stdout lists the withheld tool:\n%s", r.stdout)
	}
}

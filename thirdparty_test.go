package airlock_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// These tests run real third-party servers, no mocks: the TypeScript
// reference server from the npm registry (it speaks 2025-11-25 only) and the
// go-sdk's conformance server (it speaks 2026-07-28).

// everythingStdio is server-everything as a stdio server with allowed
// tools.
func everythingStdio(t *testing.T, node, script string, allowed ...string) config.Server {
	return config.Server{
		ID:               "everything",
		Transport:        "stdio",
		Scope:            "host",
		Command:          node,
		Args:             []string{script, "stdio"},
		Cwd:              t.TempDir(),
		AllowedTools:     allowed,
		ProtocolVersions: bothVersions,
		RequestTimeout:   30 * time.Second,
		ConnectTimeout:   60 * time.Second,
		ProbeTimeout:     5 * time.Second,
	}
}

func TestServerEverything(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	h := open(t, newConfig(t, everythingStdio(t, node, script, "echo", "get-sum", "get-tiny-image")))
	st := h.Servers()[0]
	if st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v: %v", st, st.Err)
	}
	if st.ProtocolVersion != "2025-11-25" {
		t.Errorf("protocol = %s, want 2025-11-25 (the TypeScript SDK has no 2026-07-28 yet)", st.ProtocolVersion)
	}
	if got := len(h.Snapshot().Tools()); got != 3 {
		t.Errorf("%d tools, want the 3 allowed", got)
	}

	r := call(t, h, "everything__echo", `{"message":"hello from airlock"}`)
	wantContent(t, r, airlock.OK, "hello from airlock")
	r = call(t, h, "everything__get-sum", `{"a":2,"b":40}`)
	wantContent(t, r, airlock.OK, "42")
	wantStatus(t, call(t, h, "everything__get-sum", `{"a":"two","b":40}`), airlock.InvalidArguments)

	r = call(t, h, "everything__get-tiny-image", `{}`)
	wantStatus(t, r, airlock.OK)
	if len(r.Artifacts) == 0 || r.Artifacts[0].MediaType != "image/png" || strings.Contains(r.Content, "iVBOR") {
		t.Errorf("image result = %q with %+v, want a PNG artifact and no base64", r.Content, r.Artifacts)
	}
}

func TestGoSDKEverythingServer(t *testing.T) {
	bin := testenv.GoSDKEverythingServer(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			srv := config.Server{
				ID:               "gosdk",
				Transport:        "stdio",
				Scope:            "host",
				Command:          bin,
				Cwd:              t.TempDir(),
				AllowedTools:     []string{"test_simple_text", "test_image_content", "test_error_handling", "json_schema_2020_12_tool"},
				ProtocolVersions: []string{version},
				RequestTimeout:   30 * time.Second,
				ConnectTimeout:   30 * time.Second,
				ProbeTimeout:     5 * time.Second,
			}
			h := open(t, newConfig(t, srv))
			st := h.Servers()[0]
			if st.Status != airlock.StatusReady || st.ProtocolVersion != version {
				t.Fatalf("server = %+v (%v), want ready on %s", st, st.Err, version)
			}
			r := call(t, h, "gosdk__test_simple_text", `{}`)
			wantContent(t, r, airlock.OK, "This is a simple text response for testing.")
			r = call(t, h, "gosdk__test_image_content", `{}`)
			wantStatus(t, r, airlock.OK)
			if len(r.Artifacts) != 1 || r.Artifacts[0].MediaType != "image/png" {
				t.Errorf("artifacts = %+v, want one PNG", r.Artifacts)
			}
			wantStatus(t, call(t, h, "gosdk__test_error_handling", `{}`), airlock.ToolError)
		})
	}
}

// TestExampleNamesEverythingsTools keeps the complete example of
// docs/config.md (config/testdata/example.yaml) true to the server-everything
// that scripts/setup-node.sh pins: every tool its policy names for the
// server "everything" is one the server has.
func TestExampleNamesEverythingsTools(t *testing.T) {
	t.Setenv("EVERYTHING_API_KEY", "canary-value")
	t.Setenv("USER", "alice")
	example, err := config.Load(filepath.Join("config", "testdata", "example.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, c := range example.Policy.Tools {
		if c.Server == "everything" {
			named = append(named, c.Tool)
		}
	}
	for _, r := range example.Policy.Rules {
		if r.Server == "everything" && !strings.Contains(r.Tool, "*") {
			named = append(named, r.Tool)
		}
	}
	if len(named) == 0 {
		t.Fatal("the example names no tool of server everything")
	}

	node, script := testenv.EverythingServer(t)
	srv := config.Server{ID: "everything", Transport: "stdio", Scope: "host", Command: node, Args: []string{script, "stdio"},
		Cwd: t.TempDir(), AllowedTools: []string{"*"}, ProtocolVersions: bothVersions,
		RequestTimeout: 30 * time.Second, ConnectTimeout: 60 * time.Second, ProbeTimeout: 5 * time.Second}
	h := open(t, newConfig(t, srv))
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v: %v", st, st.Err)
	}
	has := map[string]bool{}
	for _, tool := range h.Snapshot().Tools() {
		has[tool.RemoteName] = true
	}
	for _, name := range named {
		if !has[name] {
			t.Errorf("the example names tool %q of server-everything, which has no such tool (it has %v)", name, slices.Sorted(maps.Keys(has)))
		}
	}
}

// TestNpxServerUsesTheUsersPackageCache: a server started with `npx -y
// PACKAGE` has a private HOME but the user's npm cache, so that its second
// start, in any project or task, needs no download. Here npm is offline and
// the package is only in the cache that scripts/setup-node.sh filled: a
// server that looked in its private HOME (a fresh state directory) would
// not start at all.
func TestNpxServerUsesTheUsersPackageCache(t *testing.T) {
	npx, node, cache, pkg := testenv.EverythingNpx(t)
	t.Setenv("npm_config_cache", cache) // the user's npm cache
	t.Setenv("PATH", filepath.Dir(node)+string(filepath.ListSeparator)+os.Getenv("PATH"))
	srv := config.Server{ID: "everything", Transport: "stdio", Scope: "host", Command: npx, Args: []string{"-y", pkg, "stdio"},
		Env: map[string]string{"npm_config_offline": "true", "npm_config_update_notifier": "false"},
		Cwd: t.TempDir(), AllowedTools: []string{"echo"}, ProtocolVersions: bothVersions,
		RequestTimeout: 30 * time.Second, ConnectTimeout: 60 * time.Second, ProbeTimeout: 5 * time.Second}
	cfg := newConfig(t, srv)
	h := open(t, cfg)
	st := h.Servers()[0]
	if st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v: %v", st, st.Err)
	}
	t.Logf("npx -y %s started from the user's cache in %s", pkg, st.Took)
	wantStatus(t, call(t, h, "everything__echo", `{"message":"cached"}`), airlock.OK)
	if _, err := os.Stat(filepath.Join(h.StateDir(), "run", "everything", "home", ".npm")); err == nil {
		t.Errorf("the server made an npm cache in its private HOME")
	}
}

// A tool that can only be called as an MCP task is left out of the
// catalog, with the reason, instead of being listed for calls that would
// all fail; the server's other tools are unaffected, and so is a warm
// start from the tool list cache.
func TestServerEverythingTaskRequired(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	cfg := newConfig(t, everythingStdio(t, node, script, "echo", "simulate-research-query"))
	check := func(t *testing.T, h *airlock.Host) {
		t.Helper()
		snap := h.Snapshot()
		var names []string
		for _, tool := range snap.Tools() {
			names = append(names, tool.Name)
		}
		if want := []string{"everything__echo"}; !slices.Equal(names, want) {
			t.Errorf("tools = %v, want %v", names, want)
		}
		w := snap.Withheld()
		if len(w) != 1 || w[0].Server != "everything" || w[0].Tool != "simulate-research-query" || w[0].Flag != "task_required" ||
			!strings.Contains(w[0].Reason, "execution.taskSupport: required") {
			t.Errorf("withheld = %+v, want simulate-research-query, task_required", w)
		}
		wantStatus(t, call(t, h, "everything__simulate-research-query", `{"topic":"x"}`), airlock.UnknownTool)
	}
	state := t.TempDir()
	for _, warm := range []bool{false, true} {
		h, err := airlock.Open(t.Context(), cfg, &airlock.Options{StateDir: state, WarmStart: warm, StopGrace: 500 * time.Millisecond})
		if err != nil {
			t.Fatalf("Open (warm start %v): %v", warm, err)
		}
		check(t, h) // warm: the first snapshot is the cached list's
		h.Close()
	}
}

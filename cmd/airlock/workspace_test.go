package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/config"
)

// TestBuiltInDefaultRoot: without a configuration, Airlock serves the
// working directory only when it is a project, and never the home
// directory or /; nothing is created in a directory it refuses.
func TestBuiltInDefaultRoot(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".ssh-key"), "PRIVATE KEY\n")
	gitInit(t, home) // a dotfiles repository makes no project of the directories below
	below := filepath.Join(home, "Downloads")
	plain := t.TempDir()
	worktree := t.TempDir()
	writeFile(t, filepath.Join(worktree, ".git"), "gitdir: /elsewhere\n")
	parent := t.TempDir()
	// A command run below it uses it (config.Find), so it is a valid one.
	writeFile(t, filepath.Join(parent, "airlock.yml"), "servers:\n  - id: ws\n    command: airlock\n    args: [server, workspace, --root, .]\n    allowed_tools: [read_file]\n")
	child := filepath.Join(parent, "src")
	for _, d := range []string{below, child} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home}

	tests := []struct {
		name string
		dir  string
		why  string // empty: served
	}{
		{"home directory", home, "it is your home directory"},
		{"below a home that is a repository", below, "it is not a project"},
		{"root of the file system", "/", "it is the root of the file system"},
		{"not a project", plain, "it is not a project"},
		{"git repository", workdir(t), ""},
		{"git worktree", worktree, ""},
		{"below an airlock.yml", child, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.why == "" {
				runCLIEnv(t, tt.dir, env, "", "tools", "--json").want(t, 0)
				return
			}
			r := runCLIEnv(t, tt.dir, env, "", "tools", "--json").want(t, 2)
			for _, want := range []string{"refusing to serve " + tt.dir + " with the built-in default: " + tt.why, "--config", "--root, DIR"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr = %q, want it to say %q", r.stderr, want)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			r = runCLIEnv(t, tt.dir, env, "", "tools").want(t, 2)
			if strings.Contains(r.stderr, "using the built-in default") {
				t.Errorf("stderr = %q: says the default is used, then refuses it", r.stderr)
			}
			if _, err := os.Lstat(filepath.Join(tt.dir, ".airlock")); err == nil {
				t.Errorf("a state directory was created in %s", tt.dir)
			}
		})
	}

	// A configuration chooses what to serve, wherever it is.
	writeFile(t, filepath.Join(plain, "airlock.yaml"), "servers:\n  - id: ws\n    command: airlock\n    args: [server, workspace, --root, .]\n    allowed_tools: [read_file]\n")
	runCLIEnv(t, plain, env, "", "tools", "--json").want(t, 0)
}

// TestWorkspaceServerImplicitRoot: `airlock server workspace` started
// without --root in the home directory or / refuses to serve it; with
// --root it serves what it was given.
func TestWorkspaceServerImplicitRoot(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "AGENT_WORKSPACE_ROOT="}
	for dir, why := range map[string]string{home: "it is your home directory", "/": "it is the root of the file system"} {
		r := runCLIEnv(t, dir, env, "", "server", "workspace").want(t, 2)
		if want := "refusing to serve " + dir + ", the working directory: " + why + ". Choose the directory to serve with --root DIR"; !strings.Contains(r.stderr, want) {
			t.Errorf("in %s: stderr = %q, want %q", dir, r.stderr, want)
		}
	}
	// Chosen explicitly, the directory is served (until stdin ends).
	runCLIEnv(t, home, env, "", "server", "workspace", "--root", ".").want(t, 0)
	runCLIEnv(t, "/", append(env, "AGENT_WORKSPACE_ROOT="+home), "", "server", "workspace").want(t, 0)
}

// protectedReason is the workspace server's refusal of Airlock's own files.
const protectedReason = "is Airlock's own state or configuration, which the workspace tools do not read, list, search or write"

// callTool runs one tool call with --json in dir and returns its output.
func callTool(t *testing.T, dir string, code int, name, args string, flags ...string) map[string]any {
	t.Helper()
	r := runCLI(t, dir, "", append([]string{"call", name, "--args", args, "--json"}, flags...)...).want(t, code)
	return decode(t, r.stdout)
}

// TestWorkspaceProtectsState: the host's log, database and configuration
// are out of the model's reach through the workspace server, with the
// built-in default, with a state directory chosen by --state, and with a
// configuration of any name and the files it reads: imports, Cedar
// policies, hooks.
func TestWorkspaceProtectsState(t *testing.T) {
	dir := workdir(t)
	refused := func(t *testing.T, out map[string]any, path string) {
		t.Helper()
		want := "path \"" + path + "\": " + protectedReason
		if out["status"] != "tool_error" || out["content"] != want {
			t.Errorf("output = %v, want tool_error %q", out, want)
		}
		if s := out["content"].(string); strings.Contains(s, dir) {
			t.Errorf("output shows the host path %s: %s", dir, s)
		}
	}

	// The built-in default: .airlock beside it.
	for _, path := range []string{".airlock/log/airlock.log", ".airlock/airlock.db", "./.AIRLOCK/log/"} {
		refused(t, callTool(t, dir, 1, "workspace__read_file", `{"path":"`+path+`"}`), path)
	}
	refused(t, callTool(t, dir, 1, "workspace__list_dir", `{"path":".airlock"}`), ".airlock")
	list := callTool(t, dir, 0, "workspace__list_dir", `{}`)
	if s, _ := list["content"].(string); strings.Contains(s, ".airlock") {
		t.Errorf("list_dir shows the state directory: %s", s)
	}
	// The log names the server; the search does not look there.
	search := callTool(t, dir, 0, "workspace__search_text", `{"pattern":"workspace"}`)
	if s, _ := search["content"].(string); strings.Contains(s, "airlock.log") {
		t.Errorf("search_text looked into the state directory: %s", s)
	}

	// A state directory of another name, given with --state.
	refused(t, callTool(t, dir, 1, "workspace__read_file", `{"path":"st/log/airlock.log"}`, "--state", "st"), "st/log/airlock.log")
	list = callTool(t, dir, 0, "workspace__list_dir", `{}`, "--state", "st")
	if s, _ := list["content"].(string); strings.Contains(s, `"st"`) {
		t.Errorf("list_dir shows the state directory: %s", s)
	}

	// A configuration of another name, with write_file allowed, and the
	// mcpServers file it imports.
	writeFile(t, filepath.Join(dir, "team.yaml"), `servers:
  - id: ws
    command: airlock
    args: [server, workspace, --root, .]
    allowed_tools: ["*"]
import:
  - file: extra.json
    allowed_tools: {ws2: [read_file]}
policy:
  rules:
    - {server: "*", tool: "*", decision: allow}
  cedar: policies.cedar
  hooks:
    - command: [./hook.sh]
`)
	writeFile(t, filepath.Join(dir, "extra.json"), `{"mcpServers": {"ws2": {"command": "airlock", "args": ["server", "workspace", "--root", "."]}}}`)
	writeFile(t, filepath.Join(dir, "policies.cedar"), "permit (principal, action, resource);\n")
	writeFile(t, filepath.Join(dir, "hook.sh"), "#!/bin/sh\necho '{\"decision\": \"allow\"}'\n")
	if err := os.Chmod(filepath.Join(dir, "hook.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := []string{"--config", "team.yaml"}
	own := []string{"team.yaml", "extra.json", "policies.cedar", "hook.sh"}
	for _, path := range append([]string{"airlock.yaml", ".airlock/airlock.db", ".airlock/log/airlock.log"}, own...) {
		refused(t, callTool(t, dir, 1, "ws__write_file", `{"path":"`+path+`","content":"servers: []"}`, cfg...), path)
	}
	for _, path := range own {
		refused(t, callTool(t, dir, 1, "ws__read_file", `{"path":"`+path+`"}`, cfg...), path)
		refused(t, callTool(t, dir, 1, "ws2__read_file", `{"path":"`+path+`"}`, cfg...), path)
	}
	if _, err := os.Lstat(filepath.Join(dir, "airlock.yaml")); err == nil {
		t.Error("write_file created airlock.yaml")
	}
	// Other files are written as before.
	callTool(t, dir, 0, "ws__write_file", `{"path":"notes.txt","content":"hi"}`, cfg...)
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "hi" {
		t.Errorf("notes.txt = %q, %v; want hi", b, err)
	}
}

// TestDocsNameTheDefaultsTools keeps the documents that describe the
// built-in default true to default.yaml: somewhere they describe it, they
// name every tool it allows.
func TestDocsNameTheDefaultsTools(t *testing.T) {
	cfg, err := config.Parse(defaultConfig, "(built-in default)", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tools := cfg.Servers[0].AllowedTools
	for _, doc := range []string{"../../README.md", "../../docs/cli.md", "../../docs/config.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, para := range strings.Split(string(b), "\n\n") {
			if para = strings.ReplaceAll(para, "\n", " "); !strings.Contains(para, "built-in default") {
				continue
			}
			names := 0
			for _, tool := range tools {
				if strings.Contains(para, "`"+tool+"`") {
					names++
				}
			}
			found = found || names == len(tools)
		}
		if !found {
			t.Errorf("%s: no paragraph about the built-in default names its tools %v", doc, tools)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// airlockBin is the airlock binary under test, built once by TestMain: the
// CLI is tested as scripts use it, a real process with real servers.
var airlockBin string

func TestMain(m *testing.M) {
	if os.Getenv(envTestServer) != "" {
		serveTestServer()
		return
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "airlock-cli-test")
	if err != nil {
		panic(err)
	}
	airlockBin = filepath.Join(dir, "airlock")
	out, err := exec.Command("go", "build", "-o", airlockBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs the binary in dir with args and stdin.
func runCLI(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	return runCLIEnv(t, dir, nil, stdin, args...)
}

// wantUsage runs airlock with args in dir, and checks that it fails as a
// usage error whose message contains want.
func wantUsage(t *testing.T, dir, want string, args ...string) {
	t.Helper()
	r := runCLI(t, dir, "", args...).want(t, exitUsage)
	if !strings.Contains(r.stderr, want) {
		t.Errorf("airlock %s: stderr = %q, want it to contain %q", strings.Join(args, " "), r.stderr, want)
	}
}

// runCLIEnv runs the binary in dir with env added to the environment.
func runCLIEnv(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(airlockBin, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Minute
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("airlock %v: %v", args, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// workdir makes a project (a git repository, which the built-in default
// serves) with a text file to serve.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitInit(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gitInit makes dir a git repository.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, s)
	}
	return v
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

var durations = regexp.MustCompile(`\b[0-9.]+(ms|µs|s)\b|"duration_ms":[0-9]+`)

// snapshotIDs matches snapshot ids. They cover how each server is
// launched, its working directory included, so the built-in default's id
// depends on the directory it serves; golden files have snap_ID instead,
// and tests check that the ids of one directory agree.
var snapshotIDs = regexp.MustCompile(`snap_[0-9a-f]{16}`)

// sameSnapshot returns s with its snapshot ids replaced by snap_ID, after
// checking that they are all want (or, if want is "", all one).
func sameSnapshot(t *testing.T, s, want string) string {
	t.Helper()
	for _, id := range snapshotIDs.FindAllString(s, -1) {
		if want == "" {
			want = id
		}
		if id != want {
			t.Errorf("snapshot id %s, want %s", id, want)
		}
	}
	return snapshotIDs.ReplaceAllString(s, "snap_ID")
}

func TestToolsOnTheBuiltInDefault(t *testing.T) {
	dir := workdir(t)
	r := runCLI(t, dir, "", "tools", "--json").want(t, 0)
	snap, _ := decode(t, r.stdout)["snapshot"].(string)
	if !snapshotIDs.MatchString(snap) {
		t.Fatalf("snapshot = %q, want snap_ and 16 hex digits", snap)
	}
	golden(t, "tools.json", sameSnapshot(t, r.stdout, snap))
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing in --json mode", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".airlock", "log", "airlock.log")); err != nil {
		t.Errorf("no host log in the state directory: %v", err)
	}

	r = runCLI(t, dir, "", "tools").want(t, 0)
	golden(t, "tools.txt", sameSnapshot(t, durations.ReplaceAllString(r.stdout, "DURATION"), snap))
	if !strings.Contains(r.stderr, "built-in default") {
		t.Errorf("stderr = %q, want a notice about the built-in default", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "\x1b[") || strings.Contains(r.stderr, "starting") {
		t.Errorf("colour or progress on a non-terminal:\n%s%s", r.stdout, r.stderr)
	}
}

func TestCall(t *testing.T) {
	dir := workdir(t)
	snap, _ := decode(t, runCLI(t, dir, "", "tools", "--json").want(t, 0).stdout)["snapshot"].(string)
	r := runCLI(t, dir, "", "call", "workspace__read_file", "--args", `{"path":"hello.txt","line_limit":1}`, "--json").want(t, 0)
	golden(t, "call.json", sameSnapshot(t, durations.ReplaceAllString(r.stdout, `"duration_ms":0`), snap))

	// Flags may come first; arguments from a file or stdin.
	writeFile(t, filepath.Join(dir, "args.json"), `{"path":"hello.txt"}`)
	r = runCLI(t, dir, "", "call", "--args", "@args.json", "workspace__read_file").want(t, 0)
	if !strings.Contains(r.stdout, `"content":"hello\nworld"`) {
		t.Errorf("stdout = %q, want the tool's text", r.stdout)
	}
	r = runCLI(t, dir, `{"path":"hello.txt"}`, "call", "workspace__read_file", "--args", "-", "--json").want(t, 0)
	if got := decode(t, r.stdout)["structured"].(map[string]any)["content"]; got != "hello\nworld" {
		t.Errorf("structured content = %q", got)
	}
}

// TestCallShowsEscapes: a server's text goes to the terminal with what a
// terminal would obey (escape sequences, a bell, a carriage return, a
// bidirectional override) written out, so that it is seen, not obeyed.
// --json keeps the text as the server sent it.
func TestCallShowsEscapes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, "[greet]")+
		"policy:\n  rules:\n    - {server: w, tool: greet, decision: allow}\n")
	name := "\x1b]0;pwned\x07\x1b[2J\rover\u202eevil\r\nline\ttab ünï"
	args, _ := json.Marshal(map[string]string{"name": name})
	r := runCLI(t, dir, "", "call", "w__greet", "--args", string(args)).want(t, 0)
	want := `hello \x1b]0;pwned\a\x1b[2J\rover\u202eevil` + "\r\nline\ttab ünï\n"
	if r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	r = runCLI(t, dir, "", "call", "w__greet", "--args", string(args), "--json").want(t, 0)
	if got := decode(t, r.stdout)["content"]; got != "hello "+name {
		t.Errorf("--json content = %q, want the server's text as it is", got)
	}
}

func TestCallFailures(t *testing.T) {
	dir := workdir(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		status string
	}{
		{"unknown tool", []string{"call", "nope", "--json"}, 1, "unknown_tool"},
		{"schema mismatch", []string{"call", "workspace__read_file", "--args", `{"path":"hello.txt","line_limit":0}`, "--json"}, 1, "invalid_arguments"},
		{"case-variant key", []string{"call", "workspace__read_file", "--args", `{"path":"hello.txt","Path":"/etc/passwd"}`, "--json"}, 1, "invalid_arguments"},
		{"tool error", []string{"call", "workspace__read_file", "--args", `{"path":"../outside"}`, "--json"}, 1, "tool_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, dir, "", tt.args...).want(t, tt.code)
			out := decode(t, r.stdout)
			if out["status"] != tt.status || out["content"] == "" {
				t.Errorf("output = %v, want status %s with content for the model", out, tt.status)
			}
			if strings.Contains(r.stdout, dir) {
				t.Errorf("output reveals the host path %s: %s", dir, r.stdout)
			}
		})
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "bad.yaml"), "servers:\n  - id: fs\n    comand: node\n    allowed_tools: [\"*\"]\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage:"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"tools", "--jsno"}, "-jsno"},
		{"call without a name", []string{"call"}, "exactly one tool name"},
		{"missing config", []string{"tools", "--config", "nope.yaml"}, "nope.yaml"},
		{"bad config", []string{"tools", "--config", "bad.yaml"}, `bad.yaml:3`},
		{"unreadable args", []string{"call", "x", "--args", "@missing.json"}, "missing.json"},
		{"read without a URI", []string{"read"}, "read takes exactly one resource URI (see airlock resources), got 0 arguments"},
		{"read with two", []string{"read", "a://b", "c://d"}, "got 2 arguments"},
		{"read unknown flag", []string{"read", "a://b", "--srv", "x"}, "-srv"},
		{"prompt without a name", []string{"prompt"}, "prompt takes exactly one prompt name (see airlock prompts)"},
		{"prompt unreadable args", []string{"prompt", "x", "--args", "@missing.json"}, "missing.json"},
		{"resources with an argument", []string{"resources", "x"}, `resources takes no arguments, got "x"`},
		{"complete of nothing", []string{"complete", "--argument", "a"}, "complete needs one of --prompt or --template"},
		{"complete of both", []string{"complete", "--prompt", "p", "--template", "t", "--argument", "a"}, "complete needs one of --prompt or --template"},
		{"complete without an argument", []string{"complete", "--prompt", "p"}, "complete needs --argument"},
		{"complete of a prompt on a server", []string{"complete", "--prompt", "p", "--server", "s", "--argument", "a"}, "--server goes with --template only"},
		{"complete with a bad context", []string{"complete", "--prompt", "p", "--argument", "a", "--context", `{"b":1}`}, `--context: "b" is not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsage(t, dir, tt.want, tt.args...)
		})
	}
}

func TestFailedServer(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), `servers:
  - id: ws
    command: airlock
    args: [server, workspace]
    allowed_tools: [read_file]
  - id: broken
    command: ./no-such-server
    allowed_tools: ["*"]
    allowed_prompts: ["*"]
    allowed_resources: ["*"]
`)
	r := runCLI(t, dir, "", "tools", "--json").want(t, 3)
	out := decode(t, r.stdout)
	servers := out["servers"].([]any)
	if len(servers) != 2 || servers[0].(map[string]any)["status"] != "ready" || servers[1].(map[string]any)["status"] != "failed" {
		t.Fatalf("servers = %v, want ws ready and broken failed", servers)
	}
	if msg, _ := servers[1].(map[string]any)["error"].(string); !strings.Contains(msg, "no-such-server") {
		t.Errorf("error = %q, want it to name the command", msg)
	}
	if tools := out["tools"].([]any); len(tools) != 1 {
		t.Errorf("tools = %v, want the working server's tool", tools)
	}
	r = runCLI(t, dir, "", "status").want(t, 3)
	if !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stderr, "no-such-server") {
		t.Errorf("status output:\n%s\n%s", r.stdout, r.stderr)
	}
	// A call of a tool the failed server would offer is a connection
	// error (exit 3) that says why, not a tool that does not exist; a
	// name that no allowed tool of any server has is still unknown.
	r = runCLI(t, dir, "", "call", "broken__anything", "--json").want(t, 3)
	if out := decode(t, r.stdout); out["status"] != "connection_error" || !strings.Contains(r.stdout, "server broken is not running") ||
		!strings.Contains(r.stdout, "no-such-server") {
		t.Errorf("a call of the failed server's tool: %s", r.stdout)
	}
	runCLI(t, dir, "", "call", "ws__write_file", "--json").want(t, 1)
	// So are its prompts and its resources.
	for _, args := range [][]string{{"prompt", "broken__review"}, {"complete", "--prompt", "broken__review", "--argument", "x", "--value", ""},
		{"read", "file:///x", "--server", "broken"}} {
		r = runCLI(t, dir, "", append(args, "--json")...)
		if r.code != 3 || !strings.Contains(r.stdout+r.stderr, "broken") || !strings.Contains(r.stdout+r.stderr, "no-such-server") {
			t.Errorf("%v: exit %d, %s%s; want a connection error that says why server broken is down", args, r.code, r.stdout, r.stderr)
		}
	}
}

func TestMCPServersJSON(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"ws": {"command": "airlock", "args": ["server", "workspace"]}}}`)
	r := runCLI(t, dir, "", "tools", "--config", ".mcp.json").want(t, 0)
	if !strings.Contains(r.stderr, "--allow") || strings.Contains(r.stdout, "ws__read_file") {
		t.Errorf("without --allow: stdout %q, stderr %q; want no tools and a hint", r.stdout, r.stderr)
	}
	// No local policy classifies the tool: it is external, and a person
	// must approve each call.
	args := []string{"call", "ws__read_file", "--config", ".mcp.json", "--allow", "ws:read_file", "--args", `{"path":"hello.txt"}`, "--json"}
	r = runCLI(t, dir, "", args...).want(t, 5)
	out := decode(t, r.stdout)
	id, _ := out["approval_id"].(string)
	if out["status"] != "approval_required" || !strings.HasPrefix(id, "apr_") {
		t.Fatalf("call = %v, want approval_required with an approval id", out)
	}
	r = runCLI(t, dir, "", "approvals", "list", "--config", ".mcp.json", "--json").want(t, 0)
	if list := decode(t, r.stdout)["approvals"].([]any); len(list) != 1 || list[0].(map[string]any)["id"] != id ||
		list[0].(map[string]any)["status"] != "pending" || !strings.Contains(list[0].(map[string]any)["summary"].(string), "hello.txt") {
		t.Fatalf("approvals list = %v", list)
	}
	runCLI(t, dir, "", "approvals", "approve", id, "--config", ".mcp.json").want(t, 0)
	r = runCLI(t, dir, "", args...).want(t, 0)
	if !strings.Contains(r.stdout, `hello\nworld`) || !strings.Contains(r.stdout, id) {
		t.Errorf("approved call = %s", r.stdout)
	}
	// The grant was for one call.
	r = runCLI(t, dir, "", args...).want(t, 5)
	if next := decode(t, r.stdout)["approval_id"]; next == id {
		t.Errorf("the used grant %s was asked again", id)
	}
	// A used grant cannot be granted again.
	runCLI(t, dir, "", "approvals", "approve", id, "--config", ".mcp.json").want(t, 2)
}

// TestMCPServersJSONNoticeInJSONMode: a script that asks for JSON is told on
// stderr, as a person is, why an mcpServers file exposes no tools, while
// stdout stays one JSON object.
func TestMCPServersJSONNoticeInJSONMode(t *testing.T) {
	dir := t.TempDir()
	writeTestServerJSON(t, filepath.Join(dir, "servers.json"))

	r := runCLI(t, dir, "", "tools", "--json", "--config", "servers.json").want(t, 0)
	out := decode(t, r.stdout)
	if tools := out["tools"].([]any); len(tools) != 0 {
		t.Errorf("tools = %v, want none without --allow", tools)
	}
	if !strings.Contains(r.stderr, "--allow w:TOOL") {
		t.Errorf("stderr = %q, want it to say how to allow the server's tools", r.stderr)
	}
}

func TestShellJSON(t *testing.T) {
	dir := workdir(t)
	input := strings.Join([]string{
		`{"id":1,"cmd":"call","name":"workspace__read_file","args":{"path":"hello.txt"}}`,
		`{"id":"two","cmd":"call","name":"workspace__read_file","args":{"path":"nope.txt"}}`,
		`{"id":{"n":3},"cmd":"tools"}`,
		`{"id":4,"cmd":"turn"}`,
		`{"id":5,"cmd":"call","name":"workspace__read_file","args":{"path":"hello.txt","path":"x"}}`,
		`not json`,
		`{"id":6,"cmd":"fly"}`,
		`{"id":9,"cmd":"approve"}`,
		`{"id":7,"cmd":"quit"}`,
		`{"id":8,"cmd":"tools"}`,
	}, "\n")
	r := runCLI(t, dir, input, "shell", "--json").want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	byID := map[string]map[string]any{}
	for _, l := range lines {
		v := decode(t, l)
		id, _ := json.Marshal(v["id"])
		byID[string(id)] = v
	}
	checks := []struct {
		id, key string
		want    any
	}{
		{`1`, "status", "ok"},
		{`"two"`, "status", "tool_error"},
		{`4`, "generation", float64(1)},
		{`5`, "status", "invalid_arguments"},
		{`6`, "error", `unknown cmd "fly": use tools, status, call, resources, read, prompts, prompt, complete, subscribe, unsubscribe, approve, deny, answer, turn or quit`},
		{`9`, "error", `approve needs "name": the approval request's id (apr_…)`},
	}
	for _, c := range checks {
		if got := byID[c.id][c.key]; got != c.want {
			t.Errorf("id %s: %s = %v, want %v", c.id, c.key, got, c.want)
		}
	}
	if tools, ok := byID[`{"n":3}`]["tools"].([]any); !ok || len(tools) != 3 {
		t.Errorf("tools reply = %v", byID[`{"n":3}`])
	}
	if e, _ := byID["null"]["error"].(string); !strings.Contains(e, "not a valid JSON command") {
		t.Errorf("bad line reply = %v", byID["null"])
	}
	if _, ok := byID["8"]; ok || len(lines) != 8 {
		t.Errorf("got %d replies (%v), want 8 and nothing after quit", len(lines), lines)
	}
}

func TestShellText(t *testing.T) {
	dir := workdir(t)
	r := runCLI(t, dir, "help\ncall workspace__read_file {\"path\":\"hello.txt\"}\ncall nope\nturn\nstatus\n", "shell").want(t, 0)
	for _, want := range []string{"commands, one per line", `"content":"hello\nworld"`, `unknown_tool: unknown tool "nope"`, "snapshot snap_", "workspace  ready"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

// onTerminal runs the binary under a pseudo-terminal, through util-linux's
// script(1), and returns what the terminal showed.
func onTerminal(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("script(1) from util-linux is needed to test terminal output")
		}
		t.Skip("script(1) is not installed")
	}
	line := airlockBin
	for _, a := range args {
		line += " '" + a + "'"
	}
	cmd := exec.Command(script, "-qec", line, "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

func TestTerminalProgressAndColour(t *testing.T) {
	dir := workdir(t)
	out := onTerminal(t, dir, nil, "tools")
	for _, want := range []string{"workspace starting…", "workspace ready in ", "(2026-07-28, 3 tools)", "\x1b[32mready\x1b[0m"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, out)
		}
	}
	out = onTerminal(t, dir, []string{"NO_COLOR=1"}, "tools")
	if strings.Contains(out, "\x1b[") || !strings.Contains(out, "workspace starting…") {
		t.Errorf("with NO_COLOR, want progress without colour:\n%s", out)
	}
	out = onTerminal(t, dir, nil, "tools", "--json")
	if strings.Contains(out, "starting…") || strings.Contains(out, "\x1b[") {
		t.Errorf("--json on a terminal shows progress or colour:\n%s", out)
	}
}

// taskRepo makes a git repository whose airlock.yaml runs the workspace
// server per task.
func taskRepo(t *testing.T) string {
	t.Helper()
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), `servers:
  - id: ws
    scope: task
    command: airlock
    args: [server, workspace, --root, "${workspace}"]
    allowed_tools: [read_file]
policy:
  tools:
    - {server: ws, tool: read_file, effect: read}
`)
	writeFile(t, filepath.Join(dir, ".gitignore"), ".airlock/\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@example.com", "-c", "user.name=T", "add", "."},
		{"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func TestTaskCommands(t *testing.T) {
	dir := taskRepo(t)
	r := runCLI(t, dir, "", "task", "open", "t1", "--json").want(t, 0)
	opened := decode(t, r.stdout)
	wt, _ := opened["worktree"].(string)
	if opened["id"] != "t1" || opened["status"] != "open" || wt != filepath.Join(dir, ".airlock", "tasks", "t1", "worktree") || opened["created_at"] == nil {
		t.Fatalf("task open = %v", opened)
	}
	if _, err := os.Stat(filepath.Join(wt, "hello.txt")); err != nil {
		t.Errorf("the worktree lacks the repository's files: %v", err)
	}

	r = runCLI(t, dir, "", "tools").want(t, 0)
	if !strings.Contains(r.stderr, "ws run only inside a task") || strings.Contains(r.stdout, "ws__read_file") {
		t.Errorf("tools without --task: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = runCLI(t, dir, "", "tools", "--task", "t1", "--json").want(t, 0)
	if tools := decode(t, r.stdout)["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["name"] != "ws__read_file" {
		t.Errorf("tools --task = %v", tools)
	}
	writeFile(t, filepath.Join(wt, "task-only.txt"), "made in the task\n")
	r = runCLI(t, dir, "", "call", "ws__read_file", "--task", "t1", "--args", `{"path":"task-only.txt"}`, "--json").want(t, 0)
	if !strings.Contains(r.stdout, "made in the task") {
		t.Errorf("call --task = %s", r.stdout)
	}
	r = runCLI(t, dir, `{"id":1,"cmd":"call","name":"ws__read_file","args":{"path":"task-only.txt"}}`, "shell", "--json", "--task", "t1").want(t, 0)
	if !strings.Contains(r.stdout, `"status":"ok"`) {
		t.Errorf("shell --task = %s", r.stdout)
	}

	r = runCLI(t, dir, "", "task", "list", "--json").want(t, 0)
	tasks := decode(t, r.stdout)["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["status"] != "open" || tasks[0].(map[string]any)["in_use"] != false {
		t.Errorf("task list = %v", tasks)
	}
	runCLI(t, dir, "", "task", "open", "t1").want(t, 2)

	r = runCLI(t, dir, "", "task", "close", "t1", "--json").want(t, 0)
	closed := decode(t, r.stdout)
	if closed["status"] != "closed" || len(closed["steps"].([]any)) < 5 {
		t.Errorf("task close = %v", closed)
	}
	if !strings.Contains(r.stdout, "saved as stash") {
		t.Errorf("the untracked file of the task was not saved: %s", r.stdout)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree remains: %v", err)
	}
	r = runCLI(t, dir, "", "task", "list").want(t, 0)
	if !strings.Contains(r.stdout, "No tasks are open.") {
		t.Errorf("task list after close = %q", r.stdout)
	}
}

func TestTaskCommandErrors(t *testing.T) {
	dir := taskRepo(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"task"}, "open ID, list, or close ID"},
		{"unknown task", []string{"tools", "--task", "nope"}, "no task nope"},
		{"bad id", []string{"task", "open", "../x"}, `task id "../x"`},
		{"close unknown", []string{"task", "close", "nope"}, "no task nope"},
		{"not a repository", []string{"task", "open", "t", "--repo", t.TempDir()}, "not inside a git repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsage(t, dir, tt.want, tt.args...)
		})
	}
}

func TestKilledHostLeavesAnUnknownRecord(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "mark")
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`, envTestMark, mark)+`policy:
  rules:
    - {server: w, tool: "*", decision: allow}
`)

	// The host sends the write, then dies before any answer.
	cmd := startSlowWrite(t, dir, mark, nil)
	cmd.Process.Kill() // kill -9
	cmd.Wait()

	r := runCLI(t, dir, "", "recovery", "list", "--json").want(t, 0)
	recs := decode(t, r.stdout)["records"].([]any)
	if len(recs) != 1 {
		t.Fatalf("recovery list = %v, want one record", recs)
	}
	rec := recs[0].(map[string]any)
	id, _ := rec["id"].(string)
	if rec["status"] != "unknown" || rec["tool"] != "w__slow_write" || rec["resolved"] != false || rec["args_hash"] == "" {
		t.Errorf("record = %v, want an unresolved unknown outcome", rec)
	}
	if b, _ := os.ReadFile(mark); strings.Count(string(b), "called") != 1 {
		t.Errorf("the server saw %q, want exactly one call", b)
	}
	runCLI(t, dir, "", "recovery", "resolve", id).want(t, 2)
	runCLI(t, dir, "", "recovery", "resolve", id, "--outcome", "applied", "--note", "checked the target").want(t, 0)
	r = runCLI(t, dir, "", "recovery", "list", "--json").want(t, 0)
	if recs := decode(t, r.stdout)["records"].([]any); len(recs) != 0 {
		t.Errorf("after resolving, recovery list = %v", recs)
	}
	runCLI(t, dir, "", "recovery", "resolve", id, "--outcome", "applied").want(t, 2)
	r = runCLI(t, dir, "", "recovery", "show", id).want(t, 0)
	if !strings.Contains(r.stdout, "resolved as applied") {
		t.Errorf("recovery show = %q", r.stdout)
	}
	// The audit trail is written in the background, so the killed process
	// may have lost its last events; the journal kept the call.
	r = runCLI(t, dir, "", "audit", "--json").want(t, 0)
	for _, ev := range []string{`"event":"recovery_resolved"`} {
		if !strings.Contains(r.stdout, ev) {
			t.Errorf("audit lacks %s:\n%s", ev, r.stdout)
		}
	}
}

// startSlowWrite starts `airlock call w__slow_write --json` in dir, its
// stdout going to stdout (when not nil), and returns once the test server
// has recorded the call in mark.
func startSlowWrite(t *testing.T, dir, mark string, stdout io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(airlockBin, "call", "w__slow_write", "--json")
	cmd.Dir = dir
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, _ := os.ReadFile(mark); strings.Contains(string(b), "called") {
			return cmd
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the call never reached the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAudit(t *testing.T) {
	dir := workdir(t)
	runCLI(t, dir, "", "call", "workspace__read_file", "--args", `{"path":"hello.txt"}`).want(t, 0)
	r := runCLI(t, dir, "", "audit", "--json", "--since", "1h").want(t, 0)
	var events []string
	var result map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		ev := decode(t, line)
		for _, key := range []string{"time", "event", "server", "tool", "snapshot", "class", "duration_ms"} {
			if _, ok := ev[key]; !ok {
				t.Errorf("event %v lacks %q", ev, key)
			}
		}
		events = append(events, ev["event"].(string))
		if ev["event"] == "result" {
			result = ev
		}
	}
	got := strings.Join(events, ",")
	if want := "server_start,server_ready,discovery,result"; got != want {
		t.Errorf("audit events %s, want %s (a read allowed without asking leaves one result event)", got, want)
	}
	// The result carries the decision and the send.
	for key, want := range map[string]any{"class": "ok", "decision": "allow", "rule": "default", "effect": "read", "attempt": 1.0} {
		if result[key] != want {
			t.Errorf("result event %s = %v, want %v", key, result[key], want)
		}
	}
	for _, key := range []string{"reason", "args_shape", "args_hash", "generation", "call"} {
		if _, ok := result[key]; !ok {
			t.Errorf("result event lacks %q: %v", key, result)
		}
	}
	if strings.Contains(r.stdout, "hello\\nworld") {
		t.Errorf("the audit trail holds a result value it was not asked to keep:\n%s", r.stdout)
	}
	r = runCLI(t, dir, "", "audit").want(t, 0)
	if !strings.Contains(r.stdout, "decision=allow") {
		t.Errorf("audit table = %q", r.stdout)
	}
	runCLI(t, dir, "", "audit", "--since", "-1h").want(t, 2)
}

func TestShellApprovals(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"ws": {"command": "airlock", "args": ["server", "workspace"]}}}`)
	flags := []string{"--config", ".mcp.json", "--allow", "ws:read_file"}

	// On a terminal the shell asks, and the next line answers.
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed")
	}
	input := "call ws__read_file {\"path\":\"hello.txt\"}\ny\ncall ws__read_file {\"path\":\"nope\"}\nn\nquit\n"
	cmd := exec.Command("script", "-qec", airlockBin+" shell "+strings.Join(flags, " "), "/dev/null")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(input)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shell on a terminal: %v\n%s", err, b)
	}
	got := string(b)
	for _, want := range []string{"ws__read_file needs your approval", `"path": "hello.txt"`, "server ws: airlock server workspace\r\n",
		`hello\nworld`, "denied: ws__read_file refused: a person denied approval"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal shell lacks %q:\n%s", want, got)
		}
	}

	// In --json mode nobody is asked: the call reports the request, and the
	// approve command grants it.
	input = `{"id":1,"cmd":"call","name":"ws__read_file","args":{"path":"hello.txt"}}` + "\n"
	r := runCLI(t, dir, input, append([]string{"shell", "--json"}, flags...)...).want(t, 0)
	first := decode(t, strings.TrimSpace(r.stdout))
	id, _ := first["approval_id"].(string)
	if first["status"] != "approval_required" || id == "" {
		t.Fatalf("json call = %v", first)
	}
	input = `{"id":"a","cmd":"approve","name":"` + id + `"}` + "\n" + `{"id":2,"cmd":"call","name":"ws__read_file","args":{"path":"hello.txt"}}` + "\n"
	r = runCLI(t, dir, input, append([]string{"shell", "--json"}, flags...)...).want(t, 0)
	if !strings.Contains(r.stdout, `"status":"granted"`) || !strings.Contains(r.stdout, `"status":"ok"`) {
		t.Errorf("approve then call:\n%s", r.stdout)
	}
}

// TestMisspeltPolicyWarns: a rule that names a tool no server has is
// reported by tools and status, on stderr in text mode and as "warnings"
// in JSON, with its file:line and a did-you-mean; the exit code stays 0.
func TestMisspeltPolicyWarns(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), `servers:
  - id: ws
    command: airlock
    args: [server, workspace]
    allowed_tools: [read_file, write_file]
policy:
  rules:
    - {server: ws, tool: raed_file, decision: deny}
`)
	source := filepath.Join(dir, "airlock.yaml") + ":8"
	want := `policy.rules[0] (` + source + `): no tool named "raed_file" on server ws, so this rule never applies; did you mean "read_file"?`
	for _, cmd := range []string{"tools", "status"} {
		r := runCLI(t, dir, "", cmd).want(t, 0)
		if !strings.Contains(r.stderr, "airlock: warning: "+want) {
			t.Errorf("%s: stderr = %q, want the warning", cmd, r.stderr)
		}
		r = runCLI(t, dir, "", cmd, "--json").want(t, 0)
		warnings, _ := decode(t, r.stdout)["warnings"].([]any)
		if len(warnings) != 1 || warnings[0].(map[string]any)["message"] != want || warnings[0].(map[string]any)["source"] != source {
			t.Errorf("%s --json: warnings = %v, want the one warning", cmd, warnings)
		}
	}
}

// TestHiddenCharactersAreFlagged: a tool whose description hides text is
// listed with the text shown, and flagged in text and JSON output.
func TestHiddenCharactersAreFlagged(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, "[sneaky]"))
	r := runCLI(t, dir, "", "tools", "--json").want(t, 0)
	tools := decode(t, r.stdout)["tools"].([]any)
	tool := tools[0].(map[string]any)
	if got, want := tool["description"], "Harmless.[U+202E][15 hidden tag characters removed]"; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
	if flags, _ := tool["flags"].([]any); len(flags) != 1 || flags[0] != "hidden_characters" || tool["hidden_characters"] != 16.0 {
		t.Errorf("tool = %v, want it flagged with 16 hidden characters", tool)
	}
	r = runCLI(t, dir, "", "tools").want(t, 0)
	if !strings.Contains(r.stderr, "airlock: warning: tool w__sneaky: server w's text for it had 16 characters nobody would see") {
		t.Errorf("stderr = %q, want the tool flagged", r.stderr)
	}
}

// TestApprovalsActForTheirPrincipal: two command lines on one state
// directory, for two tenancies. Each sees and decides only its own
// requests, a grant runs only its own principal's call, and an operator's
// --all-principals acts on any request and is in the audit trail.
func TestApprovalsActForTheirPrincipal(t *testing.T) {
	dir := workdir(t)
	as := twoTenancies(t, dir, "read_file")
	callArgs := func(path string) []string {
		return []string{"call", "ws__read_file", "--args", `{"path":"` + path + `"}`, "--json"}
	}
	r := runCLI(t, dir, "", as("carol", callArgs("hello.txt")...)...).want(t, 5)
	id, _ := decode(t, r.stdout)["approval_id"].(string)
	if id == "" {
		t.Fatalf("carol's call = %s, want an approval id", r.stdout)
	}

	// Eve sees none of carol's requests and cannot act on them.
	r = runCLI(t, dir, "", as("eve", "approvals", "list", "--all", "--json")...).want(t, 0)
	if list := decode(t, r.stdout)["approvals"].([]any); len(list) != 0 {
		t.Errorf("eve's list = %v, want nothing", list)
	}
	for _, cmd := range [][]string{{"show", id}, {"approve", id}, {"deny", id}} {
		r = runCLI(t, dir, "", as("eve", append([]string{"approvals"}, cmd...)...)...).want(t, 2)
		for _, want := range []string{"approval " + id + ": it was asked for another tenant or user than evilcorp/eve", "tenancy:", "--all-principals"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("eve's approvals %s: stderr = %q, want %q", cmd[0], r.stderr, want)
			}
		}
		if strings.Contains(r.stderr, "carol") || strings.Contains(r.stderr, "acme") {
			t.Errorf("eve's approvals %s tells whose request it is: %q", cmd[0], r.stderr)
		}
	}

	// Carol's list has tenant and user; she approves, and only her call
	// runs on the grant.
	r = runCLI(t, dir, "", as("carol", "approvals", "list", "--json")...).want(t, 0)
	list := decode(t, r.stdout)["approvals"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != id || list[0].(map[string]any)["tenant"] != "acme" ||
		list[0].(map[string]any)["user"] != "carol" {
		t.Fatalf("carol's list = %v, want her request with tenant and user", list)
	}
	runCLI(t, dir, "", as("carol", "approvals", "approve", id)...).want(t, 0)
	r = runCLI(t, dir, "", as("eve", callArgs("hello.txt")...)...).want(t, 5)
	if other := decode(t, r.stdout)["approval_id"]; other == id {
		t.Errorf("eve's call was asked on carol's request %s", id)
	}
	r = runCLI(t, dir, "", as("carol", callArgs("hello.txt")...)...).want(t, 0)
	if !strings.Contains(r.stdout, id) {
		t.Errorf("carol's approved call = %s, want it to run on %s", r.stdout, id)
	}

	// An operator acts on anyone's request, on the record.
	r = runCLI(t, dir, "", as("carol", callArgs("hello.txt")...)...).want(t, 5)
	id2, _ := decode(t, r.stdout)["approval_id"].(string)
	r = runCLI(t, dir, "", as("eve", "approvals", "list", "--all-principals", "--json")...).want(t, 0)
	if !strings.Contains(r.stdout, id2) {
		t.Errorf("the operator's list = %s, want carol's %s", r.stdout, id2)
	}
	runCLI(t, dir, "", as("eve", "approvals", "show", id2, "--all-principals")...).want(t, 0)
	runCLI(t, dir, "", as("eve", "approvals", "approve", id2, "--all-principals", "--note", "on call")...).want(t, 0)
	runCLI(t, dir, "", as("carol", callArgs("hello.txt")...)...).want(t, 0)
	r = runCLI(t, dir, "", as("eve", "audit", "--json")...).want(t, 0)
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		ev := decode(t, line)
		if ev["event"] == "approval_operator" && ev["acting_user"] == "eve" {
			actions = append(actions, fmt.Sprint(ev["action"], " ", ev["approval"], " ", ev["user"]))
		}
	}
	want := []string{"list <nil> <nil>", "show " + id2 + " carol", "approve " + id2 + " carol"}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("approval_operator events (-want +got):\n%s", diff)
	}
}

// TestApprovalIsForTheServerAsLaunched: `approvals show` says what the
// approved call goes to, and after the server's arguments change in the
// configuration the same call needs a new approval and the snapshot id
// changes; put back, the server runs the call on the grant.
func TestApprovalIsForTheServerAsLaunched(t *testing.T) {
	dir := workdir(t)
	config := func(extra string) {
		writeFile(t, filepath.Join(dir, "airlock.yaml"), `servers:
  - id: ws
    command: airlock
    args: [server, workspace, --root, .`+extra+`]
    allowed_tools: [read_file]
`)
	}
	snapshot := func() string {
		t.Helper()
		s, _ := decode(t, runCLI(t, dir, "", "tools", "--json").want(t, 0).stdout)["snapshot"].(string)
		return s
	}
	callArgs := []string{"call", "ws__read_file", "--args", `{"path":"hello.txt"}`, "--json"}
	config("")
	approved := snapshot()
	r := runCLI(t, dir, "", callArgs...).want(t, 5)
	id, _ := decode(t, r.stdout)["approval_id"].(string)
	r = runCLI(t, dir, "", "approvals", "show", id).want(t, 0)
	if !strings.Contains(r.stdout, "server ws: airlock server workspace --root .\n") {
		t.Errorf("approvals show:\n%s\nwant the server's command line", r.stdout)
	}
	r = runCLI(t, dir, "", "approvals", "show", id, "--json").want(t, 0)
	if got := decode(t, r.stdout)["target"]; got != "airlock server workspace --root ." {
		t.Errorf("approvals show --json: target = %v, want the command line", got)
	}
	runCLI(t, dir, "", "approvals", "approve", id).want(t, 0)

	config(", --allow-hard-links")
	if got := snapshot(); got == approved {
		t.Errorf("the snapshot id %s did not change with the server's arguments", got)
	}
	r = runCLI(t, dir, "", callArgs...).want(t, 5)
	id2, _ := decode(t, r.stdout)["approval_id"].(string)
	if id2 == id {
		t.Fatalf("the changed server's call is asked on the old request %s", id)
	}
	r = runCLI(t, dir, "", "approvals", "show", id2).want(t, 0)
	if !strings.Contains(r.stdout, "server ws: airlock server workspace --root . --allow-hard-links\n") {
		t.Errorf("approvals show of the new request:\n%s\nwant the new command line", r.stdout)
	}

	config("")
	if got := snapshot(); got != approved {
		t.Errorf("the snapshot id of the server launched as before = %s, want %s", got, approved)
	}
	r = runCLI(t, dir, "", callArgs...).want(t, 0)
	if !strings.Contains(r.stdout, id) {
		t.Errorf("the call to the server launched as approved = %s, want it to run on %s", r.stdout, id)
	}
}

// TestRecoveryActsForItsPrincipal: journal records are listed, shown and
// resolved only for the principal their call was made for; an operator's
// --all-principals acts on any and is in the audit trail.
func TestRecoveryActsForItsPrincipal(t *testing.T) {
	dir := workdir(t)
	as := twoTenancies(t, dir, "write_file")
	// Carol's write whose outcome is unknown.
	st, err := airlock.OpenStore(filepath.Join(dir, ".airlock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Journal().Begin(ctx, store.Intent{ID: "rec_carol", Server: "ws", Tool: "ws__write_file", Effect: "write",
		Tenant: "acme", User: "carol"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Journal().End(ctx, "rec_carol", store.OutcomeUnknown, "no answer"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	r := runCLI(t, dir, "", as("eve", "recovery", "list", "--all", "--json")...).want(t, 0)
	if recs := decode(t, r.stdout)["records"].([]any); len(recs) != 0 {
		t.Errorf("eve's list = %v, want nothing", recs)
	}
	for _, cmd := range [][]string{{"show", "rec_carol"}, {"resolve", "rec_carol", "--outcome", "applied"}} {
		r = runCLI(t, dir, "", as("eve", append([]string{"recovery"}, cmd...)...)...).want(t, 2)
		if !strings.Contains(r.stderr, "recovery record rec_carol: it was asked for another tenant or user than evilcorp/eve") ||
			strings.Contains(r.stderr, "carol/") || strings.Contains(r.stderr, "acme") {
			t.Errorf("eve's recovery %s: stderr = %q, want a refusal that does not say whose it is", cmd[0], r.stderr)
		}
	}
	r = runCLI(t, dir, "", as("carol", "recovery", "list", "--json")...).want(t, 0)
	if recs := decode(t, r.stdout)["records"].([]any); len(recs) != 1 {
		t.Errorf("carol's list = %v, want her record", recs)
	}
	// An operator sees and resolves it, on the record.
	r = runCLI(t, dir, "", as("eve", "recovery", "list", "--all-principals", "--json")...).want(t, 0)
	if recs := decode(t, r.stdout)["records"].([]any); len(recs) != 1 {
		t.Errorf("the operator's list = %v, want carol's record", recs)
	}
	runCLI(t, dir, "", as("eve", "recovery", "resolve", "rec_carol", "--outcome", "not-applied", "--all-principals")...).want(t, 0)
	r = runCLI(t, dir, "", as("carol", "audit", "--json")...).want(t, 0)
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if e := decode(t, line); e["event"] == "recovery_operator" {
			actions = append(actions, e["action"].(string))
		}
	}
	if strings.Join(actions, ",") != "list,resolve" {
		t.Errorf("recovery_operator events: %v, want list and resolve", actions)
	}
}

// twoTenancies writes two configurations of the workspace server (exposing
// tool) in dir, carol.yaml for acme/carol and eve.yaml for evilcorp/eve,
// sharing one state directory, and returns how to run a command as either.
func twoTenancies(t *testing.T, dir, tool string) func(who string, args ...string) []string {
	t.Helper()
	for name, tenancy := range map[string]string{"carol.yaml": "{tenant: acme, user: carol}", "eve.yaml": "{tenant: evilcorp, user: eve}"} {
		writeFile(t, filepath.Join(dir, name), "tenancy: "+tenancy+`
servers:
  - id: ws
    command: airlock
    args: [server, workspace, --root, .]
    allowed_tools: [`+tool+`]
`)
	}
	return func(who string, args ...string) []string { return append(args, "--config", who+".yaml") }
}

// TestTaskLeavesGitStatusClean: the state directory of a project (with a
// task's nested worktree and the database) stays out of `git status` without
// the project ignoring it, and closing a task says how to get its saved
// work back, as a command that does.
func TestTaskLeavesGitStatusClean(t *testing.T) {
	dir := taskRepo(t)
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// The project does not ignore .airlock itself.
	os.Remove(filepath.Join(dir, ".gitignore"))
	git("-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-am", "no ignore file")

	runCLI(t, dir, "", "task", "open", "t1").want(t, 0)
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after task open:\n%s\nwant nothing", st)
	}
	wt := filepath.Join(dir, ".airlock", "tasks", "t1", "worktree")
	writeFile(t, filepath.Join(wt, "work.txt"), "unfinished\n")

	r := runCLI(t, dir, "", "task", "close", "t1", "--json").want(t, 0)
	out := decode(t, r.stdout)
	restore, _ := out["restore"].(string)
	stash, _ := out["stash"].(string)
	if want := "git -C " + dir + " stash apply " + stash[:min(len(stash), 12)]; stash == "" || restore != want {
		t.Fatalf("task close: restore %q, stash %q; want %q", restore, stash, want)
	}
	if !strings.Contains(r.stdout, "get it back with: "+restore) {
		t.Errorf("the save step does not say how to get the work back:\n%s", r.stdout)
	}
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after task close:\n%s\nwant nothing", st)
	}
	cmd := exec.Command("sh", "-c", restore)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", restore, err, b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "work.txt")); err != nil || string(b) != "unfinished\n" {
		t.Errorf("after %s: work.txt = %q, %v; want the task's file", restore, b, err)
	}
}

// TestConfigFoundAbove: run in a subdirectory of a project, Airlock uses the
// project's airlock.yaml and its state directory (where the audit trail and
// approvals are), says which file it uses, and starts no .airlock of its own.
func TestConfigFoundAbove(t *testing.T) {
	dir := workdir(t)
	writeFile(t, filepath.Join(dir, "airlock.yaml"), "servers:\n  - id: proj\n    command: airlock\n    args: [server, workspace, --root, .]\n    allowed_tools: [list_dir]\n")
	sub := filepath.Join(dir, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"tools", "--json"}, {"tools"}} {
		r := runCLI(t, sub, "", args...).want(t, 0)
		if !strings.Contains(r.stdout, "proj__list_dir") || strings.Contains(r.stdout, "workspace__") {
			t.Errorf("%v in a subdirectory: stdout %s; want the project's tool", args, r.stdout)
		}
		if want := "airlock: using " + filepath.Join("..", "..", "airlock.yaml") + "\n"; r.stderr != want {
			t.Errorf("%v: stderr = %q, want %q", args, r.stderr, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(sub, ".airlock")); err == nil {
		t.Errorf("a state directory was started in the subdirectory")
	}
	if _, err := os.Stat(filepath.Join(dir, ".airlock", "airlock.db")); err != nil {
		t.Errorf("the project's state directory was not used: %v", err)
	}
	// In the project's directory itself nothing is said.
	if r := runCLI(t, dir, "", "tools", "--json").want(t, 0); r.stderr != "" {
		t.Errorf("stderr in the project's directory = %q, want nothing", r.stderr)
	}
}

// TestInterruptedCall: interrupting `airlock call` cancels the call. A read
// ends cancelled (exit 130); a call that may change the world and was sent
// ends outcome_unknown (exit 4), since nobody knows whether it took effect
// (docs/cli.md, exit codes).
func TestInterruptedCall(t *testing.T) {
	for _, tt := range []struct {
		name   string
		effect string
		code   int
		status string
	}{
		{"read", "read", exitInterrupted, "cancelled"},
		{"write", "write", exitUnknown, "outcome_unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mark := filepath.Join(t.TempDir(), "mark")
			writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`, envTestMark, mark)+`policy:
  tools:
    - {server: w, tool: slow_write, effect: `+tt.effect+`}
  rules:
    - {server: w, tool: "*", decision: allow}
`)
			var stdout bytes.Buffer
			cmd := startSlowWrite(t, dir, mark, &stdout)
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Errorf("exit code = %d, want %d\n%s", code, tt.code, stdout.String())
			}
			if got := decode(t, stdout.String())["status"]; got != tt.status {
				t.Errorf("status = %v, want %s", got, tt.status)
			}
		})
	}
}

// TestToolsAvailable: before allowing anything, a person sees every tool each
// server offers, with its schemas and what allowing it takes; the catalog a
// model sees does not change.
func TestToolsAvailable(t *testing.T) {
	dir := t.TempDir()
	writeTestServerJSON(t, filepath.Join(dir, "servers.json"))
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `[sneaky]`))

	// An mcpServers file without an allowlist shows what there is to allow.
	r := runCLI(t, dir, "", "tools", "--config", "servers.json").want(t, 0)
	for _, want := range []string{"Server w offers 5 tools, 0 allowed:", "slow_write", "Record the call", "To allow one: --allow w:TOOL."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools --config servers.json: stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "w__slow_write") {
		t.Errorf("a tool nobody allowed is in the catalog:\n%s", r.stdout)
	}

	type offer struct {
		Server, Name, Description, Allow string
		Allowed                          bool
		InputSchema                      map[string]any `json:"input_schema"`
	}
	var out struct {
		Tools     []map[string]any
		Available []offer
	}
	for _, tt := range []struct {
		args  []string
		tools int
		want  map[string]string // tool → allow ("" when allowed)
	}{
		{[]string{"--config", "servers.json"}, 0, map[string]string{"greet": "--allow w:greet", "progress": "--allow w:progress",
			"record": "--allow w:record", "slow_write": "--allow w:slow_write", "sneaky": "--allow w:sneaky"}},
		{nil, 1, map[string]string{"greet": "add greet to allowed_tools of server w (airlock.yaml:2)",
			"progress":   "add progress to allowed_tools of server w (airlock.yaml:2)",
			"record":     "add record to allowed_tools of server w (airlock.yaml:2)",
			"slow_write": "add slow_write to allowed_tools of server w (airlock.yaml:2)", "sneaky": ""}},
	} {
		r := runCLI(t, dir, "", append([]string{"tools", "--available", "--json"}, tt.args...)...).want(t, 0)
		out.Tools, out.Available = nil, nil
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, r.stdout)
		}
		if len(out.Tools) != tt.tools {
			t.Errorf("%v: %d tools in the catalog, want %d", tt.args, len(out.Tools), tt.tools)
		}
		got := map[string]string{}
		for _, o := range out.Available {
			got[o.Name] = o.Allow
			if o.Server != "w" || o.Allowed != (o.Allow == "") || o.InputSchema["type"] != "object" {
				t.Errorf("%v: offer %+v", tt.args, o)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%v: offers mismatch (-want +got):\n%s", tt.args, diff)
		}
	}
	// Hidden characters are shown, in offers as in the catalog.
	r = runCLI(t, dir, "", "tools", "--available").want(t, 0)
	if !strings.Contains(r.stdout, "Harmless.[U+202E][15 hidden tag characters removed]") {
		t.Errorf("tools --available:\n%s\nwant the sneaky description made visible", r.stdout)
	}
}

// TestAddAndRemove: airlock add puts a server in airlock.yaml with nothing of
// it allowed, keeping every other line, and shows what it offers; airlock
// remove takes it out again, unless something still names it. A change
// that would make the configuration invalid changes nothing.
func TestAddAndRemove(t *testing.T) {
	dir := workdir(t)
	const orig = `# Our project's servers.
servers:
  # The files, read-only.
  - id: fs
    command: airlock
    args: [server, workspace, --root, .]   # this directory
    allowed_tools: [read_file]

policy:
  tools:
    - {server: fs, tool: read_file, effect: read}
`
	cfgPath := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfgPath, orig)
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	r := runCLI(t, dir, "", "add", "ws", "--", "airlock", "server", "workspace", "--root", ".").want(t, 0)
	want := strings.Replace(orig, "\n\npolicy:", "\n  - id: ws\n    command: airlock\n    args: [server, workspace, --root, .]\n    allowed_tools: []\n\npolicy:", 1)
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("airlock.yaml after add (-want +got):\n%s", diff)
	}
	for _, s := range []string{"Server ws offers 4 tools, 0 allowed:", "write_file", "To allow one: add TOOL to allowed_tools of server ws (airlock.yaml:8)."} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("add: stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "Added server ws to airlock.yaml, none of its tools allowed yet.") {
		t.Errorf("add: stderr = %q", r.stderr)
	}
	if tools := decode(t, runCLI(t, dir, "", "tools", "--json").want(t, 0).stdout)["tools"].([]any); len(tools) != 1 {
		t.Errorf("tools after add = %v, want fs's read_file alone", tools)
	}

	// Refused, and nothing changed.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "ws", "--", "x"}, `server id "ws" is already used`},
		{[]string{"add", "bad id", "--", "x"}, "nothing was changed"},
		{[]string{"add", "r", "--url", "http://127.0.0.1:9/mcp"}, "plain http is allowed only"},
		{[]string{"add", "r"}, "needs the command that starts the server"},
		{[]string{"remove", "fs"}, "server fs is named by policy.tools[0] (airlock.yaml:15)"},
		{[]string{"remove", "nope"}, "has no server nope (servers: fs, ws)"},
		{[]string{"add", "x", "--config", "servers.json", "--", "x"}, "is an mcpServers file"},
	} {
		wantUsage(t, dir, tt.want, tt.args...)
	}
	if got := read(); got != want {
		t.Errorf("a refused change changed airlock.yaml:\n%s", got)
	}

	r = runCLI(t, dir, "", "remove", "ws").want(t, 0)
	if diff := cmp.Diff(orig, read()); diff != "" {
		t.Errorf("airlock.yaml after remove (-want +got):\n%s", diff)
	}

	// Without a configuration, add makes one, and says so.
	empty := workdir(t)
	r = runCLI(t, empty, "", "add", "ws", "--json", "--", "airlock", "server", "workspace").want(t, 0)
	if !strings.Contains(r.stderr, "creating ./airlock.yaml") {
		t.Errorf("stderr = %q, want it to say that it creates airlock.yaml", r.stderr)
	}
	out := decode(t, r.stdout)
	if out["created"] != true || out["file"] != "airlock.yaml" || len(out["available"].([]any)) != 4 {
		t.Errorf("add --json = %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(empty, "airlock.yaml")); err != nil || !strings.Contains(string(b), "  - id: ws\n") {
		t.Errorf("created airlock.yaml = %q, %v", b, err)
	}
}

// TestNamedByToolPrefix: airlock remove refuses a server while
// audit.record_values names one of its tools, by the local names its
// tool_prefix gives them; a server with tool_prefix: "" has names that
// cannot be told from others', and no record_values entry holds it back.
func TestNamedByToolPrefix(t *testing.T) {
	cfg, err := config.Parse([]byte(`servers:
  - {id: fs, command: x, allowed_tools: ["*"]}
  - {id: gh, command: x, allowed_tools: ["*"], tool_prefix: github-}
  - {id: own, command: x, allowed_tools: ["*"], tool_prefix: ""}
audit:
  record_values: [fs__read_file, github-list, gh__list, echo]
`), "airlock.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]string{
		"fs":  {"audit.record_values[0] (airlock.yaml:6)"},
		"gh":  {"audit.record_values[1] (airlock.yaml:6)"},
		"own": nil,
	} {
		if diff := cmp.Diff(want, namedBy(cfg, id)); diff != "" {
			t.Errorf("namedBy(%s) (-want +got):\n%s", id, diff)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPServersEnvReferenceIsSecret: in an mcpServers file, an env value
// that is one ${VAR} is passed to the server as secret_env would be, and
// its value is redacted wherever Airlock writes it.
func TestMCPServersEnvReferenceIsSecret(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		// The server runs only if it is given the variable that makes it one.
		"w": map[string]any{"command": exe, "env": map[string]string{envTestServer: "${SERVE_AS_TEST}", "TOKEN": "${MY_TOKEN}"}},
	}})
	writeFile(t, filepath.Join(dir, "servers.json"), string(servers))
	writeFile(t, filepath.Join(dir, "airlock.yaml"), "import:\n  - file: servers.json\n    allowed_tools: {w: [greet]}\n"+
		"policy:\n  rules:\n    - {server: w, tool: greet, decision: allow}\n")
	const canary = "canaryZ9x8y7w6v5u4t3"
	env := []string{"SERVE_AS_TEST=1", "MY_TOKEN=" + canary}
	r := runCLIEnv(t, dir, env, "", "call", "w__greet", "--args", `{"name":"`+canary+`"}`, "--json").want(t, 0)
	if content := decode(t, r.stdout)["content"]; content != "hello [REDACTED:secret]" {
		t.Errorf("content = %q, want the token redacted", content)
	}
	r = runCLIEnv(t, dir, env, "", "audit", "--json").want(t, 0)
	if strings.Contains(r.stdout, canary) {
		t.Error("the audit trail holds the token")
	}
}

// TestCallStoreUnreadable: a host command whose store cannot be opened (a
// damaged database here; a PostgreSQL server that is down or refuses the
// password alike) exits 3, as the governance commands do, not 2, which
// says the command line or the configuration is wrong.
func TestCallStoreUnreadable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "airlock.yaml"), testServerYAML(t, `["*"]`))
	state := filepath.Join(dir, ".airlock")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	// A file that is not a database.
	writeFile(t, filepath.Join(state, "airlock.db"), "SQLite format 3\x00"+strings.Repeat("\xff", 8192))
	r := runCLI(t, dir, "", "recovery", "list")
	r.want(t, 3)
	for _, cmd := range [][]string{{"call", "w__echo", "--args", `{"text":"x"}`}, {"tools"}} {
		runCLI(t, dir, "", cmd...).want(t, 3)
	}
}

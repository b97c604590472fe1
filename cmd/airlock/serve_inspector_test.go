package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// inspector runs the MCP Inspector's CLI mode, a real client written on the
// TypeScript SDK, one method per run.
type inspector struct {
	node, launcher string
	home           string // the Inspector's home, for what it keeps between runs
}

// inspectorRun is what one run printed: with --format json, one JSON object
// on stdout, {"result": …} (for a tool result with isError too), or on
// stderr {"error": …}.
type inspectorRun struct {
	code           int
	stdout, stderr string
	Result         struct {
		ProtocolVersion string `json:"protocolVersion"`
		Tools           []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		Meta              map[string]any `json:"_meta"`
	} `json:"result"`
}

// run runs the CLI with args in dir and decodes what it printed on stdout.
func (in inspector) run(t *testing.T, dir string, args ...string) inspectorRun {
	t.Helper()
	cmd := exec.Command(in.node, append([]string{in.launcher, "--cli", "--format", "json"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+in.home, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("inspector %v: %v", args, err)
	}
	r := inspectorRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if r.stdout != "" {
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("inspector %v: stdout is not one JSON object: %v\nstdout:\n%s\nstderr:\n%s", args, err, r.stdout, r.stderr)
		}
	}
	return r
}

// TestServeInspector lists and calls tools through the gateway with the MCP
// Inspector's CLI, over Streamable HTTP and over stdio, in both protocol
// eras (the Inspector's legacy: 2025-11-25 with a session; modern:
// 2026-07-28, stateless).
func TestServeInspector(t *testing.T) {
	node, launcher := testenv.Inspector(t)
	in := inspector{node: node, launcher: launcher, home: t.TempDir()}
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	_, url := startServeHTTP(t, dir, cfg)

	transports := []struct {
		name   string
		target []string // where the Inspector connects
	}{
		{"http", []string{"--transport", "http", "--server-url", url}},
		{"stdio", []string{"--transport", "stdio", "--cwd", dir, "--", airlockBin, "serve", "--stdio", "--config", cfg}},
	}
	eras := []struct{ era, version string }{{"legacy", "2025-11-25"}, {"modern", "2026-07-28"}}
	for _, tr := range transports {
		for _, era := range eras {
			t.Run(tr.name+"/"+era.version, func(t *testing.T) {
				run := func(method ...string) inspectorRun {
					t.Helper()
					args := append(append([]string{"--protocol-era", era.era}, method...), tr.target...)
					return in.run(t, dir, args...)
				}
				want := func(r inspectorRun, code int) {
					t.Helper()
					if r.code != code {
						t.Fatalf("inspector exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
					}
				}

				r := run("--method", "initialize")
				want(r, 0)
				if got := r.Result.ProtocolVersion; got != era.version {
					t.Errorf("protocol version %q, want %q", got, era.version)
				}

				r = run("--method", "tools/list")
				want(r, 0)
				var names []string
				for _, tool := range r.Result.Tools {
					names = append(names, tool.Name)
				}
				if got := strings.Join(names, " "); got != "ws__read_file ws__write_file" {
					t.Errorf("tools/list: tools %q, want ws__read_file ws__write_file", got)
				}

				r = run("--method", "tools/call", "--tool-name", "ws__read_file", "--tool-arg", "path=hello.txt")
				want(r, 0)
				if got := r.Result.StructuredContent["content"]; got != "hello\nworld" || r.Result.IsError {
					t.Errorf("read_file: structuredContent %v (isError %t), want content %q", r.Result.StructuredContent, r.Result.IsError, "hello\nworld")
				}
				if len(r.Result.Content) != 1 || !strings.Contains(r.Result.Content[0].Text, `"content":"hello\nworld"`) {
					t.Errorf("read_file: content %+v, want the result as text", r.Result.Content)
				}
				if got := r.Result.Meta["airlock/status"]; got != "ok" {
					t.Errorf("read_file: _meta airlock/status %v, want ok", got)
				}

				// The Inspector declares no elicitation: a write gets the
				// approval text, as an isError result (the CLI exits 5 for one).
				r = run("--method", "tools/call", "--tool-name", "ws__write_file", "--tool-arg", "path=out.txt", "content=x")
				want(r, 5)
				if !r.Result.IsError || len(r.Result.Content) != 1 || !strings.Contains(r.Result.Content[0].Text, "run airlock approvals approve apr_") {
					t.Errorf("write_file: %+v, want isError with the approval fallback", r.Result)
				}
				if got := r.Result.Meta["airlock/status"]; got != "approval_required" {
					t.Errorf("write_file: _meta airlock/status %v, want approval_required", got)
				}
				if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
					t.Error("write_file wrote out.txt without an approval")
				}
			})
		}
	}
}

// TestServeInspectorResources reads server-everything's resources and
// gets its prompts through the gateway with the MCP Inspector's CLI, over
// stdio, in both protocol eras: the Inspector is a client Airlock's tests
// do not shape.
func TestServeInspectorResources(t *testing.T) {
	node, launcher := testenv.Inspector(t)
	evNode, script := testenv.EverythingServer(t)
	in := inspector{node: node, launcher: launcher, home: t.TempDir()}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfg, fmt.Sprintf(`servers:
  - id: ev
    command: %q
    args: [%q, stdio]
    allowed_tools: [echo]
    allowed_resources: ["demo://resource/dynamic/text/*"]
    allowed_prompts: [args-prompt]
`, evNode, script))
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			run := func(args ...string) map[string]any {
				t.Helper()
				args = append(append([]string{"--protocol-era", era}, args...), "--transport", "stdio", "--cwd", dir, "--", airlockBin, "serve", "--stdio", "--config", cfg)
				r := in.run(t, dir, args...)
				var out struct {
					Result map[string]any `json:"result"`
				}
				json.Unmarshal([]byte(r.stdout), &out)
				if r.code != 0 || out.Result == nil {
					t.Fatalf("inspector %v: exit %d\nstdout:\n%s\nstderr:\n%s", args[:4], r.code, r.stdout, r.stderr)
				}
				return out.Result
			}
			res := run("--method", "resources/templates/list")
			if b, _ := json.Marshal(res); !strings.Contains(string(b), "demo://resource/dynamic/text/{resourceId}") || strings.Contains(string(b), "blob") {
				t.Errorf("templates/list = %s, want the text template alone", b)
			}
			res = run("--method", "resources/read", "--uri", "demo://resource/dynamic/text/7")
			if b, _ := json.Marshal(res); !strings.Contains(string(b), "Resource 7: This is a plaintext resource") {
				t.Errorf("resources/read = %s", b)
			}
			res = run("--method", "prompts/get", "--prompt-name", "ev__args-prompt", "--prompt-args", "city=Rome")
			if b, _ := json.Marshal(res); !strings.Contains(string(b), "What's weather in Rome?") {
				t.Errorf("prompts/get = %s", b)
			}
		})
	}
}

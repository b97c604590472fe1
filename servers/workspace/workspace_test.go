package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// serveEnv makes the test binary serve a workspace over stdio (see TestMain).
const serveEnv = "WORKSPACE_TEST_SERVE_ROOT"

func TestMain(m *testing.M) {
	if root := os.Getenv(serveEnv); root != "" {
		os.Exit(serveStdio(root))
	}
	os.Exit(m.Run())
}

func serveStdio(root string) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := workspace.New(root, &workspace.Options{Logger: logger})
	if err != nil {
		logger.Error("new", "error", err)
		return 1
	}
	defer s.Close()
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		logger.Error("run", "error", err)
	}
	return 0
}

// callTimeout bounds every call, so a refusal that blocks fails the test
// instead of hanging it.
const callTimeout = 20 * time.Second

// connect serves a workspace rooted at root with Run over an in-memory
// transport and returns a client session speaking version ("" is the
// client's default).
func connect(t *testing.T, root string, opts *workspace.Options, version string) *mcp.ClientSession {
	t.Helper()
	srv, err := workspace.New(root, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	serverT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverT) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

func callReadFile(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%v): %v", args, err)
	}
	return res
}

// resultText returns the text of the single text block in res.
func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("got content %T, want *mcp.TextContent", res.Content[0])
	}
	return tc.Text
}

type readFileOutput struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func TestProtocolVersions(t *testing.T) {
	tests := []struct {
		request string
		want    string
	}{
		{request: "2025-11-25", want: "2025-11-25"},
		{request: "", want: "2026-07-28"},
		{request: "2026-07-28", want: "2026-07-28"},
	}
	for _, tt := range tests {
		t.Run("request="+tt.request, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "a.txt"), "hello\n")
			cs := connect(t, root, &workspace.Options{Version: "1.2.3"}, tt.request)

			init := cs.InitializeResult()
			if got := init.ProtocolVersion; got != tt.want {
				t.Errorf("protocol version: got %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(&mcp.Implementation{Name: "airlock-workspace", Title: "Airlock workspace", Version: "1.2.3"}, init.ServerInfo); diff != "" {
				t.Errorf("server info (-want +got):\n%s", diff)
			}
			if got, want := init.Instructions, "Tools operate inside the assigned workspace."; got != want {
				t.Errorf("instructions: got %q, want %q", got, want)
			}
			if init.Capabilities == nil || init.Capabilities.Tools == nil {
				t.Errorf("capabilities: got %+v, want tools", init.Capabilities)
			}
			if init.Capabilities != nil && init.Capabilities.Logging != nil {
				t.Errorf("capabilities: got logging, want none (logs go to the operator)")
			}

			res := callReadFile(t, cs, map[string]any{"path": "a.txt"})
			if res.IsError {
				t.Fatalf("read_file: got error %q", resultText(t, res))
			}
			var got readFileOutput
			if err := json.Unmarshal(mustJSON(t, res.StructuredContent), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(readFileOutput{Path: "a.txt", Content: "hello"}, got); diff != "" {
				t.Errorf("structured content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultVersion(t *testing.T) {
	cs := connect(t, t.TempDir(), nil, "")
	if got, want := cs.InitializeResult().ServerInfo.Version, "dev"; got != want {
		t.Errorf("version: got %q, want %q", got, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonSchema is the part of a JSON Schema the tests look at.
type jsonSchema struct {
	Schema               string                 `json:"$schema,omitempty"`
	Type                 string                 `json:"type"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *bool                  `json:"additionalProperties,omitempty"`
	Minimum              *float64               `json:"minimum,omitempty"`
	Maximum              *float64               `json:"maximum,omitempty"`
	Default              json.RawMessage        `json:"default,omitempty"`
}

func TestListTools(t *testing.T) {
	cs := connect(t, t.TempDir(), nil, "")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"read_file"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	tool := res.Tools[0]

	var in jsonSchema
	if err := json.Unmarshal(mustJSON(t, tool.InputSchema), &in); err != nil {
		t.Fatal(err)
	}
	wantIn := jsonSchema{
		Type: "object",
		Properties: map[string]*jsonSchema{
			"path":       {Type: "string"},
			"line_limit": {Type: "integer", Minimum: new(1.0), Maximum: new(1000.0), Default: json.RawMessage("200")},
		},
		Required:             []string{"path"},
		AdditionalProperties: new(false),
	}
	if diff := cmp.Diff(wantIn, in); diff != "" {
		t.Errorf("input schema (-want +got):\n%s", diff)
	}

	if tool.OutputSchema == nil {
		t.Fatal("output schema: got none")
	}
	var out jsonSchema
	if err := json.Unmarshal(mustJSON(t, tool.OutputSchema), &out); err != nil {
		t.Fatal(err)
	}
	wantOut := jsonSchema{
		Type: "object",
		Properties: map[string]*jsonSchema{
			"path":      {Type: "string"},
			"content":   {Type: "string"},
			"truncated": {Type: "boolean"},
		},
		Required:             []string{"path", "content", "truncated"},
		AdditionalProperties: new(false),
	}
	if diff := cmp.Diff(wantOut, out); diff != "" {
		t.Errorf("output schema (-want +got):\n%s", diff)
	}

	wantAnn := &mcp.ToolAnnotations{
		Title:           "Read file",
		ReadOnlyHint:    true,
		DestructiveHint: new(false),
		IdempotentHint:  true,
		OpenWorldHint:   new(false),
	}
	if diff := cmp.Diff(wantAnn, tool.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if tool.Title == "" || tool.Description == "" {
		t.Errorf("title %q, description %q: want both set", tool.Title, tool.Description)
	}
	if !strings.Contains(tool.Description, "absolute symbolic links") {
		t.Errorf("description %q: want the symbolic link rule stated", tool.Description)
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, file, "x")
	tests := []struct {
		name string
		root string
	}{
		{name: "missing", root: filepath.Join(dir, "missing")},
		{name: "file", root: file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := workspace.New(tt.root, nil)
			if err == nil {
				s.Close()
				t.Fatalf("New(%s): got nil error, want one", tt.name)
			}
		})
	}
}

func TestRun(t *testing.T) {
	t.Run("client disconnects", func(t *testing.T) {
		srv, err := workspace.New(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		serverT, clientT := mcp.NewInMemoryTransports()
		done := make(chan error, 1)
		go func() { done <- srv.Run(context.Background(), serverT) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), clientT, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		if err := <-done; err != nil {
			t.Errorf("Run after disconnect: got %v, want nil", err)
		}
	})
	t.Run("context done", func(t *testing.T) {
		srv, err := workspace.New(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		serverT, clientT := mcp.NewInMemoryTransports()
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx, serverT) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), clientT, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel: got %v, want context.Canceled", err)
		}
	})
}

func TestClosedServer(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "a")
	srv, err := workspace.New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	serverT, clientT := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Run(ctx, serverT)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	res := callReadFile(t, cs, map[string]any{"path": "a.txt"})
	if !res.IsError {
		t.Fatal("read after Close: got success, want a tool error")
	}
	if got, want := resultText(t, res), `path "a.txt": cannot be read`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestStdio runs the test binary as a server over real stdio, so anything
// the server wrote to stdout besides protocol messages would break the
// session.
func TestStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "one\ntwo\n")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"="+root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	for _, args := range []map[string]any{
		{"path": "a.txt", "line_limit": 1},
		{"path": "../escape"},
		{"path": "missing"},
	} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args}); err != nil {
			t.Errorf("CallTool(%v): %v", args, err)
		}
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !strings.Contains(stderr.String(), "lookup refused") {
		t.Errorf("stderr: got %q, want the refusal logged", stderr.String())
	}
}

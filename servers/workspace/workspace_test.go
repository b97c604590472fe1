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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// serveEnv makes the test binary serve a workspace over stdio (see TestMain).
const serveEnv = "WORKSPACE_TEST_SERVE_ROOT"

// Options of the server serveEnv starts: protectEnv holds a JSON array of
// Options.Protect, hardLinksEnv set to anything sets AllowHardLinks.
const (
	protectEnv   = "WORKSPACE_TEST_PROTECT"
	hardLinksEnv = "WORKSPACE_TEST_HARD_LINKS"
)

func TestMain(m *testing.M) {
	if root := os.Getenv(serveEnv); root != "" {
		os.Exit(serveStdio(root))
	}
	os.Exit(m.Run())
}

func serveStdio(root string) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := &workspace.Options{Logger: logger, AllowHardLinks: os.Getenv(hardLinksEnv) != ""}
	if v := os.Getenv(protectEnv); v != "" {
		if err := json.Unmarshal([]byte(v), &opts.Protect); err != nil {
			logger.Error("protect", "error", err)
			return 1
		}
	}
	s, err := workspace.New(root, opts)
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
	return callTool(t, cs, "read_file", args)
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", name, args, err)
	}
	return res
}

// structured decodes the structured content of a successful result, and
// checks that the text block carries the same JSON for clients that do not
// read structured content.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var got, fromText T
	text := resultText(t, res)
	if res.IsError {
		t.Fatalf("got tool error %q, want success", text)
	}
	if err := json.Unmarshal(mustJSON(t, res.StructuredContent), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("text content %q: %v", text, err)
	}
	if diff := cmp.Diff(got, fromText); diff != "" {
		t.Errorf("text content differs from structured content (-structured +text):\n%s", diff)
	}
	return got
}

// A result is a call a tool must answer with the structured content want.
type result[T any] struct {
	name string
	args map[string]any
	want T
}

// checkResults makes each call to tool and compares the structured content
// of its answer with the one wanted.
func checkResults[T any](t *testing.T, cs *mcp.ClientSession, tool string, tests []result[T]) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := structured[T](t, callTool(t, cs, tool, tt.args))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// toolError returns the text of a result that must be a tool error.
func toolError(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	text := resultText(t, res)
	if !res.IsError {
		t.Fatalf("got success %q, want a tool error", text)
	}
	if res.StructuredContent != nil {
		t.Errorf("structured content: got %v, want none", res.StructuredContent)
	}
	return text
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
	Path       string `json:"path"`
	Content    string `json:"content"`
	Truncated  bool   `json:"truncated"`
	StartLine  int    `json:"start_line"`
	TotalLines int    `json:"total_lines"`
	NextOffset int    `json:"next_offset,omitempty"`
}

type dirEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

type listDirOutput struct {
	Path      string     `json:"path"`
	Entries   []dirEntry `json:"entries"`
	Total     int        `json:"total"`
	Truncated bool       `json:"truncated"`
}

type searchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type searchTextOutput struct {
	Matches       []searchMatch `json:"matches"`
	Truncated     bool          `json:"truncated"`
	Note          string        `json:"note,omitempty"`
	FilesSearched int           `json:"files_searched"`
	FilesSkipped  int           `json:"files_skipped"`
}

type writeFileOutput struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
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

// repeat runs step in a goroutine again and again, until step returns false
// or the function returned stops it. That function waits for the goroutine
// to end; it may be called more than once, and it is called when the test
// ends.
func repeat(t *testing.T, step func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	stop = sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
	t.Cleanup(stop)
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if !step() {
				return
			}
		}
	})
	return stop
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
			// Read off the wire form: the SDK's Logging field is deprecated
			// with the logging feature (SEP-2577).
			var caps map[string]any
			if err := json.Unmarshal(mustJSON(t, init.Capabilities), &caps); err != nil {
				t.Fatal(err)
			}
			if _, ok := caps["logging"]; ok {
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
			if diff := cmp.Diff(readFileOutput{Path: "a.txt", Content: "hello", StartLine: 1, TotalLines: 1}, got); diff != "" {
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
	Items                *jsonSchema            `json:"items,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *bool                  `json:"additionalProperties,omitempty"`
	Minimum              *float64               `json:"minimum,omitempty"`
	Maximum              *float64               `json:"maximum,omitempty"`
	MinLength            *int                   `json:"minLength,omitempty"`
	MaxLength            *int                   `json:"maxLength,omitempty"`
	MaxItems             *int                   `json:"maxItems,omitempty"`
	Enum                 []string               `json:"enum,omitempty"`
	Default              json.RawMessage        `json:"default,omitempty"`
}

// object is the schema of an object with no other properties.
func object(required []string, props map[string]*jsonSchema) jsonSchema {
	return jsonSchema{Type: "object", Properties: props, Required: required, AdditionalProperties: new(false)}
}

func TestListTools(t *testing.T) {
	readOnly := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)}
	}
	str, integer, boolean := &jsonSchema{Type: "string"}, &jsonSchema{Type: "integer"}, &jsonSchema{Type: "boolean"}
	tests := []struct {
		name        string
		in, out     jsonSchema
		annotations *mcp.ToolAnnotations
		mentions    []string // rules the description must state
	}{
		{
			name: "read_file",
			in: object([]string{"path"}, map[string]*jsonSchema{
				"path":       str,
				"line_limit": {Type: "integer", Minimum: new(1.0), Maximum: new(1000.0), Default: json.RawMessage("200")},
				"offset":     {Type: "integer", Minimum: new(0.0), Default: json.RawMessage("0")},
			}),
			out: object([]string{"path", "content", "truncated", "start_line", "total_lines"}, map[string]*jsonSchema{
				"path": str, "content": str, "truncated": boolean, "start_line": integer, "total_lines": integer, "next_offset": integer,
			}),
			annotations: readOnly("Read file"),
			mentions:    []string{"absolute symbolic links", "next_offset", "more than one hard link are refused", "binary", "Airlock's own state", "airlock.yaml"},
		},
		{
			name: "list_dir",
			in: object(nil, map[string]*jsonSchema{
				"path":    {Type: "string", Default: json.RawMessage(`"."`)},
				"pattern": str,
			}),
			out: object([]string{"path", "entries", "total", "truncated"}, map[string]*jsonSchema{
				"path": str,
				"entries": {Type: "array", MaxItems: new(1000), Items: new(object([]string{"name", "type", "size"}, map[string]*jsonSchema{
					"name": str,
					"type": {Type: "string", Enum: []string{"file", "dir", "symlink", "other"}},
					"size": integer,
				}))},
				"total":     integer,
				"truncated": boolean,
			}),
			annotations: readOnly("List directory"),
			mentions:    []string{"path.Match", "never followed", "1000", "Left out of the listing: Airlock's own state"},
		},
		{
			name: "search_text",
			in: object([]string{"pattern"}, map[string]*jsonSchema{
				"pattern": {Type: "string", MinLength: new(1), MaxLength: new(1000)},
				"path":    {Type: "string", Default: json.RawMessage(`"."`)},
				"regex":   {Type: "boolean", Default: json.RawMessage("false")},
			}),
			out: object([]string{"matches", "truncated", "files_searched", "files_skipped"}, map[string]*jsonSchema{
				"matches": {Type: "array", MaxItems: new(200), Items: new(object([]string{"path", "line", "text"}, map[string]*jsonSchema{
					"path": str, "line": integer, "text": str,
				}))},
				"truncated":      boolean,
				"note":           str,
				"files_searched": integer,
				"files_skipped":  integer,
			}),
			annotations: readOnly("Search text"),
			mentions:    []string{"RE2", ".git", "binary", "never followed", "64000000 bytes", "more than one hard link", "Airlock's own state"},
		},
		{
			name: "write_file",
			in: object([]string{"path", "content"}, map[string]*jsonSchema{
				"path": str, "content": str,
			}),
			out: object([]string{"path", "bytes", "created"}, map[string]*jsonSchema{
				"path": str, "bytes": integer, "created": boolean,
			}),
			annotations: &mcp.ToolAnnotations{Title: "Write file", DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
			mentions:    []string{"atomically", "symbolic link", ".git", "must already exist", "0644", "Airlock's own state"},
		},
	}

	cs := connect(t, t.TempDir(), nil, "")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, wantNames []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	for _, tt := range tests {
		wantNames = append(wantNames, tt.name)
	}
	slices.Sort(names)
	slices.Sort(wantNames)
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := slices.IndexFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == tt.name })
			tool := res.Tools[i]
			var in jsonSchema
			if err := json.Unmarshal(mustJSON(t, tool.InputSchema), &in); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.in, in); diff != "" {
				t.Errorf("input schema (-want +got):\n%s", diff)
			}
			if tool.OutputSchema == nil {
				t.Fatal("output schema: got none")
			}
			var out jsonSchema
			if err := json.Unmarshal(mustJSON(t, tool.OutputSchema), &out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.out, out); diff != "" {
				t.Errorf("output schema (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.annotations, tool.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if tool.Title == "" || tool.Description == "" {
				t.Errorf("title %q, description %q: want both set", tool.Title, tool.Description)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(tool.Description, m) {
					t.Errorf("description %q: want it to mention %q", tool.Description, m)
				}
			}
			// Every property is described for the model.
			for name, p := range schemaDescriptions(t, tool.InputSchema) {
				if p == "" {
					t.Errorf("input property %q has no description", name)
				}
			}
		})
	}
}

// schemaDescriptions returns the description of each top-level property.
func schemaDescriptions(t *testing.T, schema any) map[string]string {
	t.Helper()
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(mustJSON(t, schema), &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, p := range s.Properties {
		out[name] = p.Description
	}
	return out
}

// TestDescriptionsFollowOptions checks that tool descriptions state the
// hard-link rule the server actually applies.
func TestDescriptionsFollowOptions(t *testing.T) {
	cs := connect(t, t.TempDir(), &workspace.Options{AllowHardLinks: true, MaxFileBytes: 1234}, "")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.Contains(tool.Description, "hard link") && !strings.Contains(tool.Description, "hard link are allowed on this server") {
			t.Errorf("%s: description %q does not say hard links are allowed", tool.Name, tool.Description)
		}
		if tool.Name != "list_dir" && !strings.Contains(tool.Description, "1234 bytes") {
			t.Errorf("%s: description %q does not state the size limit", tool.Name, tool.Description)
		}
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

// startStdio runs the test binary as a server over real stdio, with env
// added to its environment, and returns a session with it and its stderr.
func startStdio(t *testing.T, root string, env ...string) (*mcp.ClientSession, *bytes.Buffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a process")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), serveEnv+"="+root), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, &stderr
}

// TestStdio runs the test binary as a server over real stdio, so anything
// the server wrote to stdout besides protocol messages would break the
// session.
func TestStdio(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "one\ntwo\n")
	cs, stderr := startStdio(t, root)
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr bool
	}{
		{"read_file", map[string]any{"path": "a.txt", "line_limit": 1}, false},
		{"read_file", map[string]any{"path": "../escape"}, true},
		{"read_file", map[string]any{"path": "missing"}, true},
		{"write_file", map[string]any{"path": "b.txt", "content": "three\n"}, false},
		{"list_dir", map[string]any{}, false},
		{"search_text", map[string]any{"pattern": "t[wh]", "regex": true}, false},
	}
	for _, tt := range tests {
		res := callTool(t, cs, tt.tool, tt.args)
		if res.IsError != tt.wantErr {
			t.Errorf("%s %v: got isError %v, want %v: %s", tt.tool, tt.args, res.IsError, tt.wantErr, resultText(t, res))
		}
	}
	got := structured[searchTextOutput](t, callTool(t, cs, "search_text", map[string]any{"pattern": "t[wh]", "regex": true}))
	want := searchTextOutput{Matches: []searchMatch{{Path: "a.txt", Line: 2, Text: "two"}, {Path: "b.txt", Line: 1, Text: "three"}}, FilesSearched: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("search after write (-want +got):\n%s", diff)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !strings.Contains(stderr.String(), "lookup refused") {
		t.Errorf("stderr: got %q, want the refusal logged", stderr.String())
	}
}

package airlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		serveTestServer(mode)
	}
	os.Exit(m.Run())
}

var bothVersions = []string{"2026-07-28", "2025-11-25"}

// testServer is a server entry that runs this test binary in mode.
func testServer(t *testing.T, id, mode string) config.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return config.Server{
		ID:               id,
		Transport:        "stdio",
		Scope:            "host",
		Command:          exe,
		Cwd:              t.TempDir(),
		Env:              map[string]string{envMode: mode, envMark: filepath.Join(t.TempDir(), "mark")},
		AllowedTools:     []string{"*"},
		ProtocolVersions: bothVersions,
		RequestTimeout:   10 * time.Second,
		ConnectTimeout:   20 * time.Second,
		ProbeTimeout:     5 * time.Second,
	}
}

// marks returns what the server process recorded.
func marks(t *testing.T, srv config.Server) []string {
	t.Helper()
	b, err := os.ReadFile(srv.Env[envMark])
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// calls returns the tools/call lines the server recorded.
func calls(t *testing.T, srv config.Server) []string {
	var out []string
	for _, m := range marks(t, srv) {
		if strings.HasPrefix(m, "call ") {
			out = append(out, m)
		}
	}
	return out
}

// newConfig is a configuration whose policy allows every call, so that
// tests of the pipeline are not stopped for approval; governance tests set
// their own policy.
func newConfig(t *testing.T, servers ...config.Server) *config.Config {
	return &config.Config{
		Dir:     t.TempDir(),
		Servers: servers,
		Limits:  config.Limits{MaxPages: 100, MaxTools: 1000, MaxDescription: 2000, MaxMessageBytes: 16 << 20},
		Policy:  config.Policy{Rules: []config.Rule{{Server: "*", Tool: "*", Decision: "allow", Source: "test"}}},
	}
}

// classify gives tools of a server an effect under local policy.
func classify(cfg *config.Config, server, effect string, tools ...string) {
	for _, tool := range tools {
		cfg.Policy.Tools = append(cfg.Policy.Tools, config.ToolClass{Server: server, Tool: tool, Effect: effect, Source: "test"})
	}
}

func open(t *testing.T, cfg *config.Config) *airlock.Host {
	t.Helper()
	return openWith(t, cfg, &airlock.Options{})
}

// openWith opens a host of cfg with opts, StopGrace set short as every
// test's; it is closed when the test ends.
func openWith(t *testing.T, cfg *config.Config, opts *airlock.Options) *airlock.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts.StopGrace = 500 * time.Millisecond
	h, err := airlock.Open(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// callRead opens a host of srv alone, with tool classified read, and
// calls tool with args: a test of how one call to a server ends needs no
// more.
func callRead(t *testing.T, srv config.Server, tool, args string) *airlock.Result {
	t.Helper()
	cfg := newConfig(t, srv)
	classify(cfg, srv.ID, "read", tool)
	return call(t, open(t, cfg), srv.ID+"__"+tool, args)
}

func call(t *testing.T, h *airlock.Host, name, args string) *airlock.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return h.Call(ctx, h.Snapshot(), airlock.Call{ID: "call_1", Name: name, Arguments: json.RawMessage(args)})
}

func wantStatus(t *testing.T, r *airlock.Result, want airlock.Kind) {
	t.Helper()
	if r.Status != want {
		msg := ""
		if r.Err != nil {
			msg = r.Err.Msg
		}
		t.Fatalf("status = %s (%s), want %s", r.Status, msg, want)
	}
}

// wantContent checks that r ended want, with content that contains text.
func wantContent(t *testing.T, r *airlock.Result, want airlock.Kind, text string) {
	t.Helper()
	wantStatus(t, r, want)
	if !strings.Contains(r.Content, text) {
		t.Errorf("content = %q, want it to contain %q", r.Content, text)
	}
}

func toolNames(snap *airlock.Snapshot) []string {
	var names []string
	for _, tool := range snap.Tools() {
		names = append(names, tool.Name)
	}
	return names
}

func TestCallOnBothProtocolVersions(t *testing.T) {
	for _, version := range bothVersions {
		t.Run(version, func(t *testing.T) {
			srv := testServer(t, "sdk", "sdk")
			srv.ProtocolVersions = []string{version}
			h := open(t, newConfig(t, srv))
			st := h.Servers()[0]
			if st.Status != airlock.StatusReady || st.ProtocolVersion != version {
				t.Fatalf("server = %+v, want ready on %s", st, version)
			}
			r := call(t, h, "sdk__echo", `{"text":"héllo"}`)
			wantStatus(t, r, airlock.OK)
			if r.Content != "héllo" || string(r.Structured) != `{"text":"héllo"}` {
				t.Errorf("content, structured = %q, %s; want héllo, {\"text\":\"héllo\"}", r.Content, r.Structured)
			}
			if r.ToolCallID != "call_1" || r.Snapshot != h.Snapshot().ID() {
				t.Errorf("tool call id, snapshot = %q, %q", r.ToolCallID, r.Snapshot)
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	srv.AllowedTools = []string{"echo", "delete_all"}
	h := open(t, newConfig(t, srv))
	snap := h.Snapshot()
	if diff := cmp.Diff([]string{"sdk__delete_all", "sdk__echo"}, toolNames(snap)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(snap.ID(), "snap_") || snap.Generation() != 1 {
		t.Errorf("snapshot = %s generation %d", snap.ID(), snap.Generation())
	}
	// The server says delete_all is read-only and harmless; that is a hint,
	// and the effect stays external.
	for _, tool := range snap.Tools() {
		if tool.Effect != "external" {
			t.Errorf("%s: effect = %s, want external", tool.Name, tool.Effect)
		}
		if tool.Name == "sdk__delete_all" && (tool.Annotations == nil || !tool.Annotations.ReadOnlyHint) {
			t.Errorf("%s: annotations = %+v, want the server's readOnlyHint kept as a hint", tool.Name, tool.Annotations)
		}
	}
	// The same servers give the same snapshot id.
	h2 := open(t, newConfig(t, srv))
	if h2.Snapshot().ID() != snap.ID() {
		t.Errorf("second host snapshot = %s, want %s", h2.Snapshot().ID(), snap.ID())
	}
	// A tool outside the allowlist is not callable, and nothing is sent.
	r := call(t, h, "sdk__fail", `{}`)
	wantStatus(t, r, airlock.UnknownTool)
	if got := calls(t, srv); len(got) != 0 {
		t.Errorf("server received %v", got)
	}
}

func TestRejectedCallsSendNothing(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	h := open(t, newConfig(t, srv))
	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	tests := []struct {
		name, tool, args string
		want             airlock.Kind
	}{
		{"unknown tool", "sdk__nope", `{}`, airlock.UnknownTool},
		{"unqualified name", "echo", `{"text":"x"}`, airlock.UnknownTool},
		{"missing required", "sdk__echo", `{}`, airlock.InvalidArguments},
		{"wrong type", "sdk__echo", `{"text":7}`, airlock.InvalidArguments},
		{"extra property", "sdk__echo", `{"text":"x","more":1}`, airlock.InvalidArguments},
		{"duplicate key", "sdk__echo", `{"text":"safe","text":"evil"}`, airlock.InvalidArguments},
		{"case-variant key", "sdk__echo", `{"text":"safe","Text":"evil"}`, airlock.InvalidArguments},
		{"case-variant only", "sdk__big", `{"bytes":1,"Bytes":2}`, airlock.InvalidArguments},
		{"upper-case variant", "sdk__echo", `{"text":"ok","TEXT":"../x"}`, airlock.InvalidArguments},
		{"invalid utf-8", "sdk__echo", "{\"text\":\"\xff\"}", airlock.InvalidArguments},
		{"too deep", "sdk__echo", deep, airlock.InvalidArguments},
		{"not an object", "sdk__echo", `["text"]`, airlock.InvalidArguments},
		{"trailing data", "sdk__echo", `{"text":"x"} {}`, airlock.InvalidArguments},
		{"not json", "sdk__echo", `{text: x}`, airlock.InvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, h, tt.tool, tt.args)
			wantStatus(t, r, tt.want)
			if r.Content == "" || r.Content != r.Err.Msg {
				t.Errorf("content = %q, want the reason for the model", r.Content)
			}
		})
	}
	if got := calls(t, srv); len(got) != 0 {
		t.Errorf("server received %v, want no calls", got)
	}
	// The connection is fine afterwards.
	wantStatus(t, call(t, h, "sdk__echo", `{"text":"ok"}`), airlock.OK)
}

func TestToolErrorKeepsConnection(t *testing.T) {
	h := open(t, newConfig(t, testServer(t, "sdk", "sdk")))
	r := call(t, h, "sdk__fail", `{}`)
	wantStatus(t, r, airlock.ToolError)
	if r.Content != "the disk is full" {
		t.Errorf("content = %q, want the tool's text", r.Content)
	}
	wantStatus(t, call(t, h, "sdk__echo", `{"text":"still here"}`), airlock.OK)
}

func TestOutputContract(t *testing.T) {
	h := open(t, newConfig(t, testServer(t, "sdk", "sdk")))
	for _, tool := range []string{"sdk__badout", "sdk__noout"} {
		r := call(t, h, tool, `{}`)
		wantStatus(t, r, airlock.ContractError)
		if r.Content != "" || r.Structured != nil {
			t.Errorf("%s: content %q, structured %s reach the model", tool, r.Content, r.Structured)
		}
	}
}

func TestArtifacts(t *testing.T) {
	h := open(t, newConfig(t, testServer(t, "sdk", "sdk")))
	r := call(t, h, "sdk__media", `{}`)
	wantStatus(t, r, airlock.OK)
	if len(r.Artifacts) != 3 {
		t.Fatalf("artifacts = %+v, want 3", r.Artifacts)
	}
	want := []struct {
		mediaType string
		data      []byte
	}{{"image/png", pngBytes}, {"audio/wav", []byte("RIFF....WAVE")}, {"text/plain", []byte("embedded notes")}}
	for i, a := range r.Artifacts {
		data, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		if a.MediaType != want[i].mediaType || string(data) != string(want[i].data) || a.Size != int64(len(data)) {
			t.Errorf("artifact %d = %+v with %q, want %s %q", i, a, data, want[i].mediaType, want[i].data)
		}
		if !strings.Contains(r.Content, a.ID) {
			t.Errorf("content %q does not reference %s", r.Content, a.ID)
		}
		if !strings.HasPrefix(a.Path, h.StateDir()) {
			t.Errorf("artifact path %s outside the state directory", a.Path)
		}
	}
	if strings.Contains(r.Content, "iVBOR") || !strings.HasPrefix(r.Content, "here you go\n") {
		t.Errorf("content = %q, want text plus references, no base64", r.Content)
	}
	// For a caller that hands the result on (the gateway), the blocks as
	// the server sent them, in its order.
	wantBlocks := []mcp.Content{
		&mcp.TextContent{Text: "here you go"},
		&mcp.ImageContent{Data: pngBytes, MIMEType: "image/png"},
		&mcp.AudioContent{Data: []byte("RIFF....WAVE"), MIMEType: "audio/wav"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "embedded notes"}},
	}
	if diff := cmp.Diff(wantBlocks, r.ContentBlocks); diff != "" {
		t.Errorf("content blocks (-want +got):\n%s", diff)
	}
	// Content-addressed: the same bytes give the same id.
	r2 := call(t, h, "sdk__media", `{}`)
	if r2.Artifacts[0].ID != r.Artifacts[0].ID {
		t.Errorf("same image, ids %s and %s", r.Artifacts[0].ID, r2.Artifacts[0].ID)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_SECRET", "canary-7d1f")
	srv := testServer(t, "sdk", "sdk")
	srv.Env["GREETING"] = "hi"
	state := t.TempDir()
	cfg := newConfig(t, srv)
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := call(t, h, "sdk__env", `{}`)
	wantStatus(t, r, airlock.OK)
	home := filepath.Join(state, "run", "sdk", "home")
	for _, want := range []string{"HOME=" + home, "TMPDIR=" + filepath.Join(state, "run", "sdk", "tmp"), "CWD=" + srv.Cwd, "GREETING=hi", "SECRET=false"} {
		if !strings.Contains(r.Content, want+"\n") && !strings.HasSuffix(r.Content, want) {
			t.Errorf("server environment:\n%s\nlacks %s", r.Content, want)
		}
	}
}

func TestFailingServerDoesNotStopOthers(t *testing.T) {
	bad := testServer(t, "bad", "exit")
	good := testServer(t, "good", "sdk")
	good.AllowedTools = []string{"echo"}
	missing := testServer(t, "missing", "sdk")
	missing.AllowedTools = []string{"echo", "no_such_tool"}
	h := open(t, newConfig(t, bad, good, missing))
	st := h.Servers()
	if st[0].Status != airlock.StatusFailed || st[0].Err.Kind != airlock.ConnectionError {
		t.Fatalf("bad = %+v, want failed with a connection error", st[0])
	}
	if !strings.Contains(st[0].Err.Msg, "cannot open the database") {
		t.Errorf("error %q does not show the server's stderr", st[0].Err.Msg)
	}
	if st[1].Status != airlock.StatusReady {
		t.Errorf("good = %+v, want ready", st[1])
	}
	if st[2].Status != airlock.StatusFailed || st[2].Err.Kind != airlock.ContractError || !strings.Contains(st[2].Err.Msg, "no_such_tool") {
		t.Errorf("missing = %+v, want a contract error naming no_such_tool", st[2])
	}
	if diff := cmp.Diff([]string{"good__echo"}, toolNames(h.Snapshot())); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestNameCollisionsAcrossServers(t *testing.T) {
	// "a_" + "__" + "b" and "a" + "__" + "_b" are the same readable name;
	// both tools get hashed names instead of one overwriting the other.
	servers := map[string]*mcp.Server{"a_": namedServer("b"), "a": namedServer("_b")}
	cfg := newConfig(t,
		config.Server{ID: "a_", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: bothVersions, RequestTimeout: time.Minute, ConnectTimeout: time.Minute, ProbeTimeout: time.Second},
		config.Server{ID: "a", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: bothVersions, RequestTimeout: time.Minute, ConnectTimeout: time.Minute, ProbeTimeout: time.Second},
	)
	h := openInProcess(t, cfg, servers)
	tools := h.Snapshot().Tools()
	if len(tools) != 2 || tools[0].Name == tools[1].Name {
		t.Fatalf("tools = %+v, want two distinct names", tools)
	}
	for _, tool := range tools {
		if tool.Name == "a___b" {
			t.Errorf("%s/%s got the contested readable name", tool.Server, tool.RemoteName)
		}
		r := call(t, h, tool.Name, `{}`)
		wantStatus(t, r, airlock.OK)
		if want := "I am " + tool.RemoteName; r.Content != want {
			t.Errorf("%s answered %q, want %q", tool.Name, r.Content, want)
		}
	}
}

// TestToolPrefix: a server's tool_prefix names its tools in the catalog
// ("" keeps the server's own names); names two servers would share are
// hashed, never overwritten; and policy rules, which match local or remote
// names, and audit.record_values, which names local ones, follow.
func TestToolPrefix(t *testing.T) {
	servers := map[string]*mcp.Server{"own": namedServer("hello"), "gh": namedServer("list"),
		"dup1": namedServer("same"), "dup2": namedServer("same")}
	srv := func(id string, prefix *string) config.Server {
		return config.Server{ID: id, Command: "in-process", AllowedTools: []string{"*"}, ToolPrefix: prefix,
			ProtocolVersions: bothVersions, RequestTimeout: time.Minute, ConnectTimeout: time.Minute, ProbeTimeout: time.Second}
	}
	own, github := "", "github-"
	cfg := newConfig(t, srv("own", &own), srv("gh", &github), srv("dup1", &own), srv("dup2", &own))
	cfg.Policy.Rules = append(cfg.Policy.Rules, config.Rule{Server: "gh", Tool: "github-list", Decision: "deny", Source: "test"})
	cfg.Audit.RecordValues = []string{"hello"}
	h := openInProcess(t, cfg, servers)
	snap := h.Snapshot()
	byRemote := map[string]string{}
	for _, tool := range snap.Tools() {
		byRemote[tool.Server+"/"+tool.RemoteName] = tool.Name
	}
	if byRemote["own/hello"] != "hello" || byRemote["gh/list"] != "github-list" {
		t.Errorf("local names = %v, want hello and github-list", byRemote)
	}
	if a, b := byRemote["dup1/same"], byRemote["dup2/same"]; a == b || a == "same" || !strings.HasPrefix(a, "same_") || !strings.HasPrefix(b, "same_") {
		t.Errorf("dup1/same = %q, dup2/same = %q; want two distinct hashed names", a, b)
	}
	if w := snap.Warnings(); len(w) != 0 {
		t.Errorf("warnings = %v, want none: every entry names a tool", w)
	}

	r := call(t, h, "hello", `{"x":"kept"}`)
	wantStatus(t, r, airlock.OK)
	if r.Content != "I am hello" {
		t.Errorf("hello answered %q", r.Content)
	}
	// The rule names the local name github-list.
	wantStatus(t, call(t, h, "github-list", `{}`), airlock.Denied)
	wantStatus(t, call(t, h, "gh__list", `{}`), airlock.UnknownTool)
	wantStatus(t, call(t, h, "own__hello", `{}`), airlock.UnknownTool)
	for _, name := range []string{byRemote["dup1/same"], byRemote["dup2/same"]} {
		wantStatus(t, call(t, h, name, `{}`), airlock.OK)
	}
}

// openInProcess opens a host on cfg whose servers are the in-process
// servers of the same ids.
func openInProcess(t *testing.T, cfg *config.Config, servers map[string]*mcp.Server) *airlock.Host {
	t.Helper()
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{Dial: func(srv config.Server) mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := servers[srv.ID].Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		return ct
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// namedServer is an in-process server with one tool that says its name.
func namedServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "named", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("I am " + name)}, nil
	})
	return s
}

func TestServerStderrGoesToTheLog(t *testing.T) {
	var log testenv.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	h, err := airlock.Open(context.Background(), newConfig(t, testServer(t, "bad", "exit")), &airlock.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if !strings.Contains(log.String(), "cannot open the database") || !strings.Contains(log.String(), "server=bad") {
		t.Errorf("host log:\n%s\nwant the server's stderr, tagged with the server", log.String())
	}
}

func TestServerStderrIsBounded(t *testing.T) {
	// The server writes 20 MB on stderr in a second or two, then its last
	// words, and exits.
	var log testenv.Buffer
	h, err := airlock.Open(context.Background(), newConfig(t, testServer(t, "flood", "flood")),
		&airlock.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st := h.Servers()[0]
	h.Close()
	if st.Status != airlock.StatusFailed || st.Err == nil || !strings.Contains(st.Err.Msg, "fatal: cannot open the database") {
		t.Errorf("server = %+v (%v), want it failed, with its last words from stderr", st, st.Err)
	}
	out := log.String()
	if len(out) > 2<<20 {
		t.Errorf("the host log took %d bytes of the server's stderr; want it bounded", len(out))
	}
	if !regexp.MustCompile(`dropped \d+ lines / \d+ bytes of stderr from server flood`).MatchString(out) {
		t.Errorf("the host log does not count what it dropped:\n%.3000s", out)
	}
}

// TestHiddenCharactersNeverReachTheModel: a tool whose description and
// schema hide text is in the catalog with that text shown, flagged, and
// recorded in the audit trail; calls to it work as before.
func TestHiddenCharactersNeverReachTheModel(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "sneaky", Version: "1"}, nil)
	hidden := "Lists files.\u202e" + string([]rune{0xE0069, 0xE0067, 0xE006E}) + "\u200b"
	s.AddTool(&mcp.Tool{Name: "ls", Description: hidden,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string","description":"where\u2067"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a b"}}}, nil
		})
	cfg := newConfig(t, config.Server{ID: "c", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: bothVersions,
		RequestTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second, ProbeTimeout: time.Second})
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, nil)

	tool := h.Snapshot().Tools()[0]
	if want := "Lists files.[U+202E][3 hidden tag characters removed][U+200B]"; tool.Description != want {
		t.Errorf("description = %q, want %q", tool.Description, want)
	}
	if !strings.Contains(string(tool.InputSchema), `where[U+2067]`) {
		t.Errorf("input schema = %s, want its description shown", tool.InputSchema)
	}
	if tool.Hidden != 6 {
		t.Errorf("Hidden = %d, want 6", tool.Hidden)
	}
	for _, text := range []string{tool.Description, string(tool.InputSchema)} {
		if strings.ContainsAny(text, "\u202e\u200b\u2067") || strings.ContainsRune(text, 0xE0069) {
			t.Errorf("a hidden character reached the catalog: %q", text)
		}
	}
	wantStatus(t, call(t, h, "c__ls", `{"dir":"x"}`), airlock.OK)
	h.Close()
	evs := auditEvents(t, h, store.EventToolFlagged)
	if len(evs) != 1 || evs[0].Fields["remote_tool"] != "ls" || evs[0].Fields["count"] != 6.0 || evs[0].Fields["flag"] != "hidden_characters" {
		t.Errorf("tool_flagged events = %v, want one for ls with 6 characters", evs)
	}
}

// TestStateDirIsIgnoredByGit: whatever creates a state directory gives it a
// .gitignore that ignores all of it, and leaves one that is there alone.
func TestStateDirIsIgnoredByGit(t *testing.T) {
	state := filepath.Join(t.TempDir(), "project", ".airlock")
	st, err := airlock.OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	b, err := os.ReadFile(filepath.Join(state, ".gitignore"))
	if err != nil || !regexp.MustCompile(`(?m)^\*$`).Match(b) {
		t.Errorf(".gitignore = %q, %v; want a line *", b, err)
	}

	mine := filepath.Join(t.TempDir(), ".airlock")
	if err := os.MkdirAll(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, ".gitignore"), []byte("airlock.db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := airlock.MakeStateDir(mine); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, ".gitignore")); string(b) != "airlock.db\n" {
		t.Errorf("an existing .gitignore became %q", b)
	}
}

// TestAvailable: a host shows people every tool each server offers, allowed
// or not, with its schemas, while its snapshot holds the allowed tools
// alone; a server whose allowlist names a tool it lacks fails, and still
// shows what there is to allow.
func TestAvailable(t *testing.T) {
	some := testServer(t, "some", "sdk")
	some.AllowedTools = []string{"echo"}
	none := testServer(t, "none", "sdk")
	none.AllowedTools = nil // an mcpServers server without --allow
	typo := testServer(t, "typo", "sdk")
	typo.AllowedTools = []string{"ecko"}
	h := open(t, newConfig(t, some, none, typo))

	var tools []string
	for _, tool := range h.Snapshot().Tools() {
		tools = append(tools, tool.Name)
	}
	if diff := cmp.Diff([]string{"some__echo"}, tools); diff != "" {
		t.Errorf("snapshot tools mismatch (-want +got):\n%s", diff)
	}
	if st := h.Servers()[2]; st.Status != airlock.StatusFailed {
		t.Errorf("server typo = %s, want failed", st.Status)
	}
	offered := map[string]map[string]bool{} // server → tool → allowed
	var echo airlock.Offer
	for _, o := range h.Available() {
		if offered[o.Server] == nil {
			offered[o.Server] = map[string]bool{}
		}
		offered[o.Server][o.Name] = o.Allowed
		if o.Server == "none" && o.Name == "echo" {
			echo = o
		}
	}
	for _, id := range []string{"some", "none", "typo"} {
		if len(offered[id]) < 5 {
			t.Errorf("server %s offers %v, want every tool of the test server", id, offered[id])
		}
		if _, ok := offered[id]["delete_all"]; !ok {
			t.Errorf("server %s does not offer delete_all", id)
		}
	}
	if !offered["some"]["echo"] || offered["some"]["slow"] || offered["none"]["echo"] {
		t.Errorf("allowed flags wrong: %v", offered)
	}
	if echo.Description != "Echo the text back." || !strings.Contains(string(echo.Input), `"text"`) {
		t.Errorf("offer of none's echo = %+v, want its description and input schema", echo)
	}
}

// TestStructuredContentKeepsNumbers: a result's structuredContent reaches
// the caller with the numbers the server wrote, and is checked against the
// output schema with them: an id past 2^53 is not rounded to its neighbour,
// and a value just over a maximum is not rounded under it.
func TestStructuredContentKeepsNumbers(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "ids", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("found"),
				StructuredContent: json.RawMessage(`{"id":9007199254740993,"big":12345678901234567890123}`)}, nil
		})
	s.AddTool(&mcp.Tool{Name: "bounded", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740992}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("n"), StructuredContent: json.RawMessage(`{"n":9007199254740993}`)}, nil
		})
	h := openIn(t, newConfig(t, inProcess), map[string]*mcp.Server{"c": s}, nil)

	r := call(t, h, "c__lookup", `{}`)
	wantStatus(t, r, airlock.OK)
	if want := `{"big":12345678901234567890123,"id":9007199254740993}`; string(r.Structured) != want {
		t.Errorf("structured = %s, want %s", r.Structured, want)
	}
	wantStatus(t, call(t, h, "c__bounded", `{}`), airlock.ContractError)
}

// TestToolDescriptionsKeepNoSecret: a server that repeats a configured
// secret in a tool's title or description (its own key, say, in a
// "connected as …" line) shows it to no model and leaves it in no store:
// descriptions and schemas are scrubbed as results are.
func TestToolDescriptionsKeepNoSecret(t *testing.T) {
	const secret = "sk-live-canary0123456789abcdef"
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "who", Title: "Connected as " + secret, Description: "uses key " + secret,
		Annotations: &mcp.ToolAnnotations{Title: "Key " + secret},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"k":{"type":"string","description":"key ` + secret + `"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("ok")}, nil
		})
	cfg := newConfig(t, inProcess)
	h := openIn(t, cfg, map[string]*mcp.Server{"c": s}, &airlock.Options{Secrets: []string{secret}})
	tools := h.Snapshot().Tools()
	if len(tools) != 1 {
		t.Fatalf("%d tools, want 1", len(tools))
	}
	for _, text := range []string{tools[0].Title, tools[0].Description, tools[0].Annotations.Title, string(tools[0].InputSchema)} {
		if strings.Contains(text, secret) {
			t.Errorf("the catalog shows %q, which holds the secret", text)
		}
	}
	for _, o := range h.Available() {
		if strings.Contains(o.Title+o.Description, secret) {
			t.Errorf("tools --available shows %q, which holds the secret", o.Title+" "+o.Description)
		}
	}
	dir := h.StateDir()
	h.Close()
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
}

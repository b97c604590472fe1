package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/postgres"
)

// roundRobin is a load balancer on loopback that sends each request to the
// next of targets in turn, with no affinity of any kind. Tool calls take
// turns among themselves (their Mcp-Method header says what they are), so
// that a call and the retry that answers its question never reach the
// same replica; it counts them.
func roundRobin(t *testing.T, targets ...string) (string, *atomic.Int64) {
	t.Helper()
	var n, calls atomic.Int64
	urls := make([]*url.URL, len(targets))
	for i, target := range targets {
		u, err := url.Parse(strings.TrimSuffix(target, "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = u
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			turn := &n
			if r.In.Header.Get("Mcp-Method") == "tools/call" {
				turn = &calls
			}
			r.SetURL(urls[(turn.Add(1)-1)%int64(len(urls))])
		},
		FlushInterval: -1, // event streams as they come
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", &calls
}

// startReplicas starts two `airlock serve --http` replicas of one
// configuration on the PostgreSQL database db, as two machines would run
// them: the same configuration and paths (here one directory, so the
// workspace server they run is the same one), a state directory each,
// and one audit key file that both are given (docs/deploy.md); more is
// added to the configuration. It returns their endpoints, and the
// directory and configuration file.
func startReplicas(t *testing.T, db string, more ...string) (urls [2]string, dir, cfg string) {
	t.Helper()
	dir = workdir(t)
	cfg = serveConfig(t, dir)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "store: {url: %q, audit_key: %q}\n%s", db, filepath.Join(t.TempDir(), "audit.key"), strings.Join(more, ""))
	f.Close()
	for i := range 2 {
		urls[i], _ = startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg, "--state", filepath.Join(t.TempDir(), "state"))
	}
	return urls, dir, cfg
}

// TestReplicas: two gateway replicas on one PostgreSQL database behind a
// round-robin balancer without affinity. A 2026-07-28 client's requests
// alternate replicas and work; a write it approves through elicitation is
// asked by one replica and answered to the other, which takes the answer
// (the request state is signed with a key the replicas derive from their
// shared audit key) and runs the call once; a write approved on the command
// line of one replica runs once through the other, and again needs an
// approval.
func TestReplicas(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	urls, dir, cfg := startReplicas(t, db)
	lb, requests := roundRobin(t, urls[0], urls[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var asked atomic.Int64
	c := mcp.NewClient(&mcp.Implementation{Name: "replicas", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 4 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
			t.Fatalf("read %d: %+v, %v", i, res, err)
		}
	}
	before := requests.Load()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: map[string]any{"path": "approved.txt", "content": "asked"}})
	if err != nil || res.IsError {
		r := runCLI(t, dir, "", "approvals", "list", "--json", "--all", "--config", cfg)
		t.Fatalf("write approved through elicitation: %+v, %v\napprovals: %s %s", res, err, r.stdout, r.stderr)
	}
	if asked.Load() != 1 || requests.Load()-before != 2 {
		t.Errorf("asked %d times in %d tool calls: want one question, asked by one replica and answered to the other", asked.Load(), requests.Load()-before)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "approved.txt")); err != nil || string(data) != "asked" {
		t.Errorf("approved.txt = %q, %v", data, err)
	}

	// A client that cannot be asked: the approval goes through the command
	// line of replica 0, and the retry, on whichever replica, runs once.
	plain := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	ps, err := plain.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	args := map[string]any{"path": "cli.txt", "content": "approved on the command line"}
	res, err = ps.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: args})
	id, _ := res.Meta["airlock/approval_id"].(string)
	if err != nil || !res.IsError || id == "" {
		t.Fatalf("write without elicitation: %+v, %v; want the approval fallback", res, err)
	}
	runCLI(t, dir, "", "approvals", "approve", id, "--config", cfg).want(t, exitOK)
	for i := range 2 {
		if res, err = ps.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: args}); err != nil || res.IsError {
			t.Fatalf("write after the approval (request %d): %+v, %v", i, res, err)
		}
		// The grant was used: the next one asks again.
		res, err = ps.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: args})
		next, _ := res.Meta["airlock/approval_id"].(string)
		if err != nil || !res.IsError || next == "" || next == id {
			t.Fatalf("write again after the approved one: %+v, %v; want a new approval request", res, err)
		}
		id = next
		runCLI(t, dir, "", "approvals", "approve", id, "--config", cfg).want(t, exitOK)
	}

	// The journal, in PostgreSQL: every write that ran, once.
	st, err := postgres.Open(ctx, db, filepath.Join(t.TempDir(), "unused.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Journal().Records(ctx, store.RecordFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	succeeded := 0
	for _, r := range recs {
		if r.Tool == "ws__write_file" && r.Status == store.OutcomeSucceeded {
			succeeded++
		}
	}
	if succeeded != 3 || len(recs) != 3 {
		t.Errorf("journal: %d records, %d writes succeeded; want 3 of 3 (one asked, two approved on the command line)", len(recs), succeeded)
	}
}

// TestReplicasShareCatalogChanges: two `airlock serve` replicas on one
// PostgreSQL database connect one remote server, whose tool list changes;
// the server tells only replica A's session. A client of replica B is
// told that the list changed all the same, and lists the new tool.
func TestReplicasShareCatalogChanges(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	add := func(name string) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
	}
	add("first")
	var mu sync.Mutex
	told := map[*mcp.ServerSession]bool{} // the sessions told of changes
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			mu.Lock()
			quiet := method == "notifications/tools/list_changed" && !told[ss]
			mu.Unlock()
			if quiet {
				return nil, nil
			}
			return next(ctx, method, req)
		}
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	t.Cleanup(upstream.Close)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfg, fmt.Sprintf(`development: true
servers:
  - id: c
    transport: http
    url: %s/mcp
    allowed_hosts: [127.0.0.1]
    allowed_tools: ["*"]
    protocol_versions: [2025-11-25]
store: {url: %q, audit_key: %q}
`, upstream.URL, db, filepath.Join(t.TempDir(), "audit.key")))
	replica := func() string {
		url, _ := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg, "--state", filepath.Join(t.TempDir(), "state"))
		return url
	}
	replica() // A
	mu.Lock()
	for ss := range srv.Sessions() {
		told[ss] = true
	}
	mu.Unlock()
	b := replica()
	testenv.WaitListening(t, db, 2)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "replica-b", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	add("added")
	for {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(list.Tools, func(tool *mcp.Tool) bool { return tool.Name == "c__added" }) {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("replica B's client was not told of c__added within a minute; it lists %d tools", len(list.Tools))
		}
	}
}

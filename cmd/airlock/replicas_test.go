//lint:file-ignore SA1019 a server may still ask for a sample, which protocol version 2026-07-28 deprecates (SEP-2577); the replicas pass the client's answer on.

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	urls, _ = serveReplicas(t, dir, cfg, db, more...)
	return urls, dir, cfg
}

// serveReplicas adds the PostgreSQL database db to the configuration cfg
// (and the lines more), starts two replicas of it in dir, each with a
// state directory of its own, and waits until both listen to the other
// replicas. If the test fails, their logs are shown.
func serveReplicas(t *testing.T, dir, cfg, db string, more ...string) (urls [2]string, cmds [2]*exec.Cmd) {
	t.Helper()
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "store: {url: %q, audit_key: %q}\n%s", db, filepath.Join(t.TempDir(), "audit.key"), strings.Join(more, ""))
	f.Close()
	var states [2]string
	for i := range 2 {
		states[i] = filepath.Join(t.TempDir(), "state")
		urls[i], cmds[i] = startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg, "--state", states[i])
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, st := range states {
				data, _ := os.ReadFile(filepath.Join(st, "log", "airlock.log"))
				t.Logf("replica %d's log:\n%s", i, data)
			}
		}
	})
	testenv.WaitListening(t, db, "gateway", 2)
	return urls, cmds
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
	recs := journalOf(t, db)
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
	testenv.WaitListening(t, db, "catalog", 2)

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

// sessionBalancer is a load balancer on loopback without affinity for
// 2025-11-25 sessions: each request goes to the next replica in turn, but
// a client's answer to a question (a POST of a JSON-RPC response) and its
// cancellation of a request go to the replica that did not take the last
// tools/call, which is the one that asked, or runs the call. down takes a
// replica out of the turns.
type sessionBalancer struct {
	url     string
	mu      sync.Mutex
	targets []*url.URL
	down    map[int]bool
	n       int
	call    int // the replica of the last tools/call
	served  map[int]int
}

func newSessionBalancer(t *testing.T, targets ...string) *sessionBalancer {
	t.Helper()
	b := &sessionBalancer{down: map[int]bool{}, served: map[int]int{}}
	for _, target := range targets {
		u, err := url.Parse(strings.TrimSuffix(target, "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		b.targets = append(b.targets, u)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			var body []byte
			if r.In.Body != nil {
				body, _ = io.ReadAll(r.In.Body)
				r.Out.Body = io.NopCloser(bytes.NewReader(body))
			}
			r.SetURL(b.targets[b.next(r.In.Header.Get("Mcp-Method"), body)])
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	b.url = srv.URL + "/mcp"
	return b
}

func (b *sessionBalancer) next(method string, body []byte) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := -1
	if bytes.Contains(body, []byte(`"result"`)) && !bytes.Contains(body, []byte(`"method"`)) ||
		bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		i = (b.call + 1) % len(b.targets) // an answer or a cancellation: to the replica that did not take the call
	}
	for i < 0 || b.down[i] {
		i = b.n % len(b.targets)
		b.n++
	}
	if method == "tools/call" || bytes.Contains(body, []byte(`"method":"tools/call"`)) {
		b.call = i // a 2025-11-25 client names the method in its body only
	}
	b.served[i]++
	return i
}

func (b *sessionBalancer) takeDown(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down[i] = true
}

// TestReplicaSessions: a 2025-11-25 client behind a balancer without
// affinity. Its session, opened by one replica, is taken by the other at
// its next request; reads alternate replicas; a write it approves through
// elicitation is asked by one replica and answered to the other, which
// passes the answer back, and runs once; when one replica stops, the
// session goes on through the other; its DELETE ends it on every replica.
func TestReplicaSessions(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	dir := workdir(t)
	urls, cmds := serveReplicas(t, dir, serveConfig(t, dir), db)
	lb := newSessionBalancer(t, urls[0], urls[1])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var asked atomic.Int64
	c := mcp.NewClient(&mcp.Implementation{Name: "sessions", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || cs.ID() == "" {
		t.Fatalf("session %q of version %q, want a 2025-11-25 session", cs.ID(), v)
	}
	for i := range 4 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
			t.Fatalf("read %d: %+v, %v", i, res, err)
		}
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: map[string]any{"path": "approved.txt", "content": "asked"}})
	if err != nil || res.IsError {
		t.Fatalf("write approved through elicitation, answered to the other replica: %+v, %v", res, err)
	}
	if asked.Load() != 1 {
		t.Errorf("asked %d times, want once", asked.Load())
	}
	if data, err := os.ReadFile(filepath.Join(dir, "approved.txt")); err != nil || string(data) != "asked" {
		t.Errorf("approved.txt = %q, %v", data, err)
	}
	lb.mu.Lock()
	served := maps.Clone(lb.served)
	lb.mu.Unlock()
	if served[0] < 3 || served[1] < 3 {
		t.Errorf("requests served by each replica: %v; want the session's requests on both", served)
	}

	// A DELETE, to one replica, ends the session on both: neither takes
	// it again.
	other, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := other.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
	}
	id := other.ID()
	if err := other.Close(); err != nil {
		t.Fatalf("closing the session: %v", err)
	}
	for _, u := range urls {
		waitFor(t, "a request of the ended session to "+u+" is 404", func() bool { return testenv.PingSession(t, u, id) == http.StatusNotFound })
	}

	// Each replica counts what it opened and handed over.
	var taken, initialized, answers, held int
	for _, u := range urls {
		_, _, m := scrape(t, u, "", "")
		n := func(series string) int { v, _ := strconv.Atoi(sample(m, series)); return v }
		taken += n(`airlock_gateway_sessions_opened_total{how="taken"}`)
		initialized += n(`airlock_gateway_sessions_opened_total{how="initialized"}`)
		answers += n(`airlock_gateway_handoffs_total{what="answer"}`)
		held += n("airlock_gateway_sessions")
	}
	if taken < 1 || initialized < 2 || answers < 1 || held < 2 {
		t.Errorf("metrics of both replicas: %d sessions taken, %d initialized, %d answers handed over, %d held; want at least 1, 2, 1, 2",
			taken, initialized, answers, held)
	}

	// Replica 0 stops: the session goes on through replica 1.
	lb.takeDown(0)
	cmds[0].Process.Signal(syscall.SIGTERM)
	cmds[0].Wait()
	for i := range 3 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
			t.Fatalf("read %d after replica 0 stopped: %+v, %v", i, res, err)
		}
	}

	// The journal, in PostgreSQL: the write, once.
	recs := journalOf(t, db)
	if len(recs) != 1 || recs[0].Status != store.OutcomeSucceeded {
		t.Errorf("journal: %+v; want the one write, succeeded", recs)
	}

}

// waitFor waits until ok, and fails the test after a generous deadline.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: not yet %s", what)
		}
	}
}

// TestReplicaRounds: a server's questions during a call, through two
// replicas behind a balancer without affinity. A 2026-07-28 client's
// retry, which carries its answer, reaches the other replica than the one
// where the call waits, which hands it over and answers with the round's
// outcome: the next question, then the result. A 2025-11-25 client's
// answer to the question put on its session reaches the other replica,
// which passes it back, through the mailbox when it is too large to
// announce (a sampled message of 10 KB).
func TestReplicaRounds(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	long := strings.Repeat("a sampled answer longer than an announcement takes. ", 200)
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			dir := t.TempDir()
			urls, _ := serveReplicas(t, dir, askConfig(t, dir, era), db)
			lb := newSessionBalancer(t, urls[0], urls[1])
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			var asked []string
			var mu sync.Mutex
			c := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					switch {
					case strings.Contains(req.Params.Message, "Second"):
						return &mcp.ElicitResult{Action: "cancel"}, nil
					case strings.Contains(req.Params.Message, "First"):
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "red", "count": 3}}, nil
				},
				// An answer too large for an announcement.
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: long}}, nil
				},
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.url}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			for _, tt := range []struct{ tool, want string }{
				{"w__ask_form", `accept {"colour":"red","count":3,"name":"Ada"}`},
				{"w__ask_twice", "accept {\"ok\":true}\ncancel"},
				{"w__sample", "the model said: " + long},
			} {
				if got := callText(ctx, t, cs, tt.tool); got != tt.want {
					t.Errorf("%s: %q, want %q", tt.tool, got, tt.want)
				}
			}
			if len(asked) != 3 {
				t.Errorf("asked %q, want three questions", asked)
			}
			lb.mu.Lock()
			served := maps.Clone(lb.served)
			lb.mu.Unlock()
			if served[0] < 2 || served[1] < 2 {
				t.Errorf("requests served by each replica: %v; want both", served)
			}
		})
	}
}

// TestReplicaCancel: a 2025-11-25 client, whose call runs on one
// replica, sends its cancellation to the other (keeping the call's stream
// open, as a client may), which passes it on: the server's call is
// cancelled.
func TestReplicaCancel(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	cfg := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfg, testServerYAML(t, "[slow_write]", envTestMark, mark)+"    request_timeout: 10m\n"+
		"policy:\n  tools:\n    - {server: w, tool: slow_write, effect: read}\n")
	urls, _ := serveReplicas(t, dir, cfg, db)

	post := func(url, id, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(urls[0], "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, id)
	}
	resp = post(urls[1], id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()

	// The call, on replica 0, its stream left open.
	answered := make(chan string, 1)
	go func() {
		call := post(urls[0], id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w__slow_write","arguments":{}}}`)
		defer call.Body.Close()
		b, _ := io.ReadAll(call.Body)
		answered <- string(b)
	}()
	marked := func(what string) func() bool {
		return func() bool { b, _ := os.ReadFile(mark); return strings.Contains(string(b), what) }
	}
	waitFor(t, "the server has the call", marked("called"))
	resp = post(urls[1], id, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("the cancellation: %d, want 202", resp.StatusCode)
	}
	waitFor(t, "the server's call is cancelled", marked("cancelled"))
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Error("the cancelled call's stream is still open after 30s")
	}
}

// journalOf returns every record of the journal in the PostgreSQL
// database db, once no intent in it is open: a replica writes a call's
// outcome as the call returns, without the call waiting for it, so a
// record may still be open for a moment after its answer came.
func journalOf(t *testing.T, db string) []store.Record {
	t.Helper()
	st, err := postgres.Open(t.Context(), db, filepath.Join(t.TempDir(), "unused.key"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		recs, err := st.Journal().Records(t.Context(), store.RecordFilter{All: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(recs, func(r store.Record) bool { return r.Status == store.OutcomeOpen }) || time.Now().After(deadline) {
			return recs
		}
	}
}

// TestReplicasMaxConcurrency: a server's max_concurrency of 2 holds across
// two replicas behind the round-robin balancer, under 50 concurrent calls
// of 2026-07-28 clients: no call of either replica's server process ever
// overlaps more than one other.
func TestReplicasMaxConcurrency(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	dir, held := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "airlock.yaml")
	writeFile(t, cfg, testServerYAML(t, "[hold]", envTestHold, held)+"    max_concurrency: 2\n    queue_timeout: 2m\n"+
		"policy:\n  tools:\n    - {server: w, tool: hold, effect: read}\n")
	urls, _ := serveReplicas(t, dir, cfg, db)
	lb, calls := roundRobin(t, urls[0], urls[1])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	peak := make(chan int, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("c%d", i), Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				t.Error(err)
				return
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__hold", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Errorf("call %d: %+v, %v", i, res, err)
				return
			}
			n, _ := strconv.Atoi(res.Content[0].(*mcp.TextContent).Text)
			peak <- n
		})
	}
	wg.Wait()
	close(peak)
	most, n := 0, 0
	for p := range peak {
		most, n = max(most, p), n+1
	}
	if n != 50 || most != 2 || calls.Load() < 50 {
		t.Errorf("%d calls answered (%d through the balancer), at most %d at once; want 50, at most 2 and 2 reached", n, calls.Load(), most)
	}
}

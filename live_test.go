package airlock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// changing is an in-process server whose tool "grow" adds tools to the
// server (the SDK then tells clients their tool list changed), and which
// counts its tools/list requests.
type changing struct {
	server *mcp.Server
	lists  atomic.Int64
	added  atomic.Int64
}

func newChanging() *changing {
	c := &changing{server: mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)}
	c.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				c.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	c.server.AddTool(&mcp.Tool{Name: "grow", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			json.Unmarshal(req.Params.Arguments, &in)
			for range max(in.N, 1) {
				i := c.added.Add(1)
				c.server.AddTool(&mcp.Tool{Name: fmt.Sprintf("new_%d", i), InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{Content: text(fmt.Sprintf("I am new_%d", i))}, nil
					})
			}
			return &mcp.CallToolResult{Content: text("grown")}, nil
		})
	return c
}

func TestCatalogChangesAtTheNextTurn(t *testing.T) {
	for _, version := range bothVersions {
		t.Run(version, func(t *testing.T) {
			c := newChanging()
			srv := inProcess
			srv.ProtocolVersions = []string{version}
			h := openIn(t, newConfig(t, srv), map[string]*mcp.Server{"c": c.server}, nil)
			ctx := context.Background()
			turn := h.BeginTurn(ctx)
			if turn.Generation() != 1 {
				t.Fatalf("first turn generation = %d", turn.Generation())
			}
			wantStatus(t, h.Call(ctx, turn, airlock.Call{Name: "c__grow", Arguments: json.RawMessage(`{"n":1}`)}), airlock.OK)
			// The turn goes on with the catalog it started with.
			wantStatus(t, h.Call(ctx, turn, airlock.Call{Name: "c__new_1"}), airlock.UnknownTool)
			if got := toolNames(turn); len(got) != 1 {
				t.Errorf("the turn's snapshot changed under it: %v", got)
			}
			// Notifications arrive on their own goroutine.
			var next *airlock.Snapshot
			waitFor(t, 10*time.Second, "the new tool at the next turn", func() bool {
				next = h.BeginTurn(ctx)
				return next.Generation() == 2
			})
			r := h.Call(ctx, next, airlock.Call{Name: "c__new_1"})
			wantStatus(t, r, airlock.OK)
			if next.ID() == turn.ID() || len(toolNames(next)) != 2 {
				t.Errorf("next snapshot %s with %v", next.ID(), toolNames(next))
			}

			// A storm of changes (each tool added is a notification) costs a
			// handful of discoveries, not one each.
			before := c.lists.Load()
			turn = h.BeginTurn(ctx)
			wantStatus(t, h.Call(ctx, turn, airlock.Call{Name: "c__grow", Arguments: json.RawMessage(`{"n":900}`)}), airlock.OK)
			waitFor(t, 20*time.Second, "the storm's tools", func() bool {
				return len(toolNames(h.BeginTurn(ctx))) == 902
			})
			if n := c.lists.Load() - before; n > 10 {
				t.Errorf("900 changes caused %d discoveries", n)
			}
			if g := h.Snapshot().Generation(); g < 3 || g > 10 {
				t.Errorf("generation %d after the storm, want a few more than 2", g)
			}
		})
	}
}

func TestTaskTurnSeesHostChanges(t *testing.T) {
	repo := gitRepo(t)
	c := newChanging()
	cfg := newConfig(t, inProcess, taskServer(t, "ws", "workspace"))
	cfg.Dir = repo
	h := openIn(t, cfg, map[string]*mcp.Server{"c": c.server}, &airlock.Options{StateDir: t.TempDir()})
	task, err := h.OpenTask(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer task.Release()
	turn := task.BeginTurn(context.Background())
	wantStatus(t, h.Call(context.Background(), turn, airlock.Call{Name: "c__grow"}), airlock.OK)
	waitFor(t, 10*time.Second, "the host's new tool in the task's next turn", func() bool {
		_, ok := lookup(task.BeginTurn(context.Background()), "c__new_1")
		return ok
	})
}

func lookup(snap *airlock.Snapshot, name string) (airlock.Tool, bool) {
	for _, tool := range snap.Tools() {
		if tool.Name == name {
			return tool, true
		}
	}
	return airlock.Tool{}, false
}

func TestHealthChecks(t *testing.T) {
	var stall atomic.Bool
	s := mcp.NewServer(&mcp.Implementation{Name: "sick", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("ok")}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" && stall.Load() {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	srv := inProcess
	srv.HealthCheck = config.HealthCheck{Interval: 50 * time.Millisecond, Timeout: 40 * time.Millisecond}
	h := openIn(t, newConfig(t, srv), map[string]*mcp.Server{"c": s}, nil)
	stall.Store(true)
	waitFor(t, 10*time.Second, "degraded", func() bool { return h.Servers()[0].Status == airlock.StatusDegraded })
	if err := h.Servers()[0].Err; err == nil {
		t.Error("a degraded server has no error to show")
	}
	stall.Store(false)
	waitFor(t, 10*time.Second, "ready again", func() bool { return h.Servers()[0].Status == airlock.StatusReady })
}

func TestGracefulClose(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	cfg := newConfig(t, srv)
	classify(cfg, "sdk", "read", "slow")
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{ShutdownWait: 300 * time.Millisecond, StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *airlock.Result)
	go func() { done <- h.Call(context.Background(), h.Snapshot(), airlock.Call{Name: "sdk__slow"}) }()
	waitFor(t, 10*time.Second, "the call to arrive", func() bool { return len(calls(t, srv)) == 1 })
	closed := make(chan error)
	go func() { closed <- h.Close() }()
	wantStatus(t, <-done, airlock.Cancelled)
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	wantStatus(t, h.Call(context.Background(), h.Snapshot(), airlock.Call{Name: "sdk__echo", Arguments: json.RawMessage(`{"text":"late"}`)}), airlock.Cancelled)
}

func TestNoGoroutineLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			c := &counted{}
			srv := inProcess
			srv.HealthCheck = config.HealthCheck{Interval: 10 * time.Millisecond, Timeout: 10 * time.Millisecond}
			cfg := newConfig(t, srv, testServer(t, "sdk", "sdk"))
			h := openIn(t, cfg, map[string]*mcp.Server{"c": c.server()}, nil)
			wantStatus(t, call(t, h, "c__note", `{"text":"x"}`), airlock.OK)
			wantStatus(t, call(t, h, "sdk__echo", `{"text":"x"}`), airlock.OK)
			h.BeginTurn(context.Background())
			if err := h.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The SDK sends notifications/cancelled and ends its readers
	// asynchronously; give them their bounded time.
	time.Sleep(200 * time.Millisecond)
}

func TestProgressExtendsTheWaitUpToALimit(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	srv.RequestTimeout = 300 * time.Millisecond
	srv.MaxCallDuration = 3 * time.Second
	cfg := newConfig(t, srv)
	classify(cfg, "sdk", "read", "progress")
	h := open(t, cfg)
	// Ten steps of 100ms: a second in all, far past one request timeout,
	// but never 300ms without news.
	wantStatus(t, call(t, h, "sdk__progress", `{"steps":10}`), airlock.OK)
	// Progress forever: the call ends at max_call_duration.
	began := time.Now()
	r := call(t, h, "sdk__progress", `{"steps":1000}`)
	wantStatus(t, r, airlock.ConnectionError)
	if !strings.Contains(r.Err.Msg, "still running") {
		t.Errorf("error = %q", r.Err.Msg)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the call ran %s: progress stretched it without limit", took)
	}
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool {
		return hasMark(t, func() []string { return marks(t, srv) }, "cancelled progress")
	})
}

func TestWarmStartFromTheToolListCache(t *testing.T) {
	tests := []struct {
		name, version, ttl, scope string
		otherUser                 bool
		warm                      bool
	}{
		{name: "2025-11-25 lists hold until they change", version: "2025-11-25", warm: true},
		{name: "2026-07-28 within ttlMs", version: "2026-07-28", ttl: "60000", warm: true},
		{name: "2026-07-28 immediately stale", version: "2026-07-28", ttl: "0", warm: false},
		{name: "private list, same user", version: "2026-07-28", ttl: "60000", scope: "private", warm: true},
		{name: "private list, another user", version: "2026-07-28", ttl: "60000", scope: "private", otherUser: true, warm: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			srv := testServer(t, "sdk", "gated")
			srv.ProtocolVersions = []string{tt.version}
			srv.ConnectTimeout, srv.ProbeTimeout = 2*time.Second, time.Second
			srv.AllowedResources = []string{"test://small"} // cached with the tools
			if tt.ttl != "" {
				srv.Env["AIRLOCK_TEST_TTL_MS"], srv.Env["AIRLOCK_TEST_SCOPE"] = tt.ttl, tt.scope
			}
			gate := srv.Env[envMark] + ".gate"
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := newConfig(t, srv)
			me := airlock.Principal{Tenant: "acme", User: "ada"}
			cold, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state, Principal: me})
			if err != nil {
				t.Fatal(err)
			}
			want := cold.Snapshot().ID()
			cold.Close()

			// The server now waits at its gate: a warm start cannot have
			// heard from it.
			os.Remove(gate)
			who := me
			if tt.otherUser {
				who.User = "eve"
			}
			h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state, WarmStart: true, Principal: who})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			st := h.Servers()[0].Status
			if !tt.warm {
				if st != airlock.StatusFailed || len(toolNames(h.Snapshot())) != 0 {
					t.Errorf("status %s with %v: want no tools from the cache, and the stuck server failed", st, toolNames(h.Snapshot()))
				}
				return
			}
			if st != airlock.StatusStarting {
				t.Errorf("status after a warm open = %s, want starting", st)
			}
			if got := h.Snapshot().ID(); got != want {
				t.Errorf("warm snapshot %s, cold %s: the same cached tools must give the same catalog", got, want)
			}
			if rs := h.Snapshot().Resources(); len(rs) != 1 || rs[0].URI != "test://small" {
				t.Errorf("warm resources = %+v, want test://small from the cache", rs)
			}
			// A call waits for the server, then runs.
			done := make(chan *airlock.Result)
			go func() { done <- call(t, h, "sdk__echo", `{"text":"warm"}`) }()
			time.Sleep(100 * time.Millisecond)
			os.WriteFile(gate, nil, 0o600)
			wantStatus(t, <-done, airlock.OK)
			if h.BeginTurn(context.Background()).ID() != want {
				t.Error("the server's own list changed the catalog although it is the same")
			}
		})
	}
}

func TestWarmStartNeverExposesAChangedListWithoutASwap(t *testing.T) {
	state := t.TempDir()
	srv := testServer(t, "sdk", "sdk")
	srv.ProtocolVersions = []string{"2025-11-25"}
	cfg := newConfig(t, srv)
	cold, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	cold.Close()
	// The server has gained a tool since.
	os.WriteFile(srv.Env[envMark]+".extra", nil, 0o600)
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StateDir: state, WarmStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	first := h.Snapshot()
	if _, ok := lookup(first, "sdk__extra"); ok || first.Generation() != 1 {
		t.Fatalf("the first snapshot (generation %d) has the new tool: it came from the cache", first.Generation())
	}
	waitFor(t, 20*time.Second, "the server's own list at a safe point", func() bool {
		_, ok := lookup(h.BeginTurn(context.Background()), "sdk__extra")
		return ok
	})
	if g := h.Snapshot().Generation(); g != 2 {
		t.Errorf("generation = %d, want 2", g)
	}
	if _, ok := lookup(first, "sdk__extra"); ok {
		t.Error("the first snapshot changed")
	}
}

func TestWithoutMaxCallDurationProgressDoesNotExtend(t *testing.T) {
	srv := testServer(t, "sdk", "sdk")
	srv.RequestTimeout = 300 * time.Millisecond
	r := callRead(t, srv, "progress", `{"steps":10}`)
	wantStatus(t, r, airlock.ConnectionError)
	if !strings.Contains(r.Err.Msg, "request_timeout") {
		t.Errorf("error = %q", r.Err.Msg)
	}
}

// TestCatalogChangedIsCalled: a server saying its tools changed calls
// Options.CatalogChanged, and the next turn has the new tool; the
// snapshot did not change before that turn.
func TestCatalogChangedIsCalled(t *testing.T) {
	c := newChanging()
	changed := make(chan struct{}, 100)
	h := openIn(t, newConfig(t, inProcess), map[string]*mcp.Server{"c": c.server}, &airlock.Options{
		CatalogChanged: func() { changed <- struct{}{} },
	})
	ctx := context.Background()
	turn := h.BeginTurn(ctx)
	wantStatus(t, h.Call(ctx, turn, airlock.Call{Name: "c__grow"}), airlock.OK)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("CatalogChanged was not called")
	}
	if h.Snapshot().ID() != turn.ID() {
		t.Error("the snapshot changed before the next turn")
	}
	if got := toolNames(h.BeginTurn(ctx)); len(got) != 2 {
		t.Errorf("tools at the next turn = %v, want the new one too", got)
	}
}

package airlock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// httpServer serves an MCP server over Streamable HTTP on loopback: the
// SDK's handler, stateful (sessions, the 2025-11-25 way) or stateless.
// The handler can be swapped while it runs, to make the server forget its
// sessions.
type httpServer struct {
	url     string
	handler atomic.Pointer[http.Handler]
	server  atomic.Pointer[mcp.Server]
	build   func() (http.Handler, *mcp.Server)
	ts      *httptest.Server

	mu       sync.Mutex
	requests []string // "METHOD MCP-Protocol-Version", in order
}

// seen returns the requests the server got so far.
func (hs *httpServer) seen() []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return slices.Clone(hs.requests)
}

func newHTTPServer(t *testing.T, newServer func() *mcp.Server, stateless bool) *httpServer {
	t.Helper()
	hs := &httpServer{}
	hs.build = func() (http.Handler, *mcp.Server) {
		srv := newServer()
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: stateless, DisableLocalhostProtection: true}), srv
	}
	hs.forget(false)
	hs.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		hs.requests = append(hs.requests, r.Method+" "+r.Header.Get("Mcp-Protocol-Version"))
		hs.mu.Unlock()
		(*hs.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(hs.ts.Close)
	hs.url = hs.ts.URL + "/mcp"
	return hs
}

// forget makes the server forget its sessions: the answer to an old
// session id is 404. With endStreams, every connection to it is cut too, as
// a restarted server's would be; without, the old streams stay open (a
// server behind a load balancer that lost its session store).
func (hs *httpServer) forget(endStreams bool) {
	h, srv := hs.build()
	hs.handler.Store(&h)
	hs.server.Store(srv)
	if endStreams {
		hs.ts.CloseClientConnections()
	}
}

// remote is the configuration entry of a remote server at url, reachable
// on loopback in development mode.
func remote(id, url string) config.Server {
	return config.Server{
		ID:                id,
		Transport:         "http",
		URL:               url,
		AllowedHosts:      []string{"127.0.0.1"},
		AllowedTools:      []string{"*"},
		ProtocolVersions:  bothVersions,
		RequestTimeout:    10 * time.Second,
		ConnectTimeout:    5 * time.Second,
		ProbeTimeout:      3 * time.Second,
		StreamReadTimeout: time.Minute,
		TerminateOnClose:  true,
		QueueTimeout:      10 * time.Second,
		MaxConcurrency:    16,
	}
}

func devConfig(t *testing.T, servers ...config.Server) *config.Config {
	cfg := newConfig(t, servers...)
	cfg.Development = true
	return cfg
}

// auditEvents returns the host's audit events of one kind.
func auditEvents(t *testing.T, h *airlock.Host, event string) []store.Event {
	t.Helper()
	return hostEvents(t, h, func(e store.Event) bool { return e.Event == event })
}

// hostEvents returns the host's audit events that keep says to keep, in
// the order they were written.
func hostEvents(t *testing.T, h *airlock.Host, keep func(store.Event) bool) []store.Event {
	t.Helper()
	st, err := airlock.OpenStore(h.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.Audit().Events(context.Background(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.Event
	for _, e := range all {
		if keep(e) {
			evs = append(evs, e)
		}
	}
	return evs
}

func TestRemoteServerOnBothEras(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stateless bool
		versions  []string
		want      string
	}{
		{"stateful 2025-11-25", false, []string{"2025-11-25"}, "2025-11-25"},
		{"stateless 2026-07-28", true, bothVersions, "2026-07-28"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHTTPServer(t, newTestServer, tt.stateless)
			srv := remote("web", hs.url)
			srv.ProtocolVersions = tt.versions
			h := open(t, devConfig(t, srv))
			st := h.Servers()[0]
			if st.Status != airlock.StatusReady || st.ProtocolVersion != tt.want {
				t.Fatalf("server = %+v (%v), want ready on %s", st, st.Err, tt.want)
			}
			r := call(t, h, "web__echo", `{"text":"over http"}`)
			wantStatus(t, r, airlock.OK)
			if r.Content != "over http" || string(r.Structured) != `{"text":"over http"}` {
				t.Errorf("result = %q %s", r.Content, r.Structured)
			}
			wantStatus(t, call(t, h, "web__fail", `{}`), airlock.ToolError)
			// Every request after the handshake names the protocol
			// version, and a 2025-11-25 session opens the stream on which
			// the server may speak first (list_changed, for one).
			reqs := hs.seen()
			get := false
			for _, r := range reqs[1:] {
				if method, version, _ := strings.Cut(r, " "); version != tt.want {
					t.Errorf("%s request with MCP-Protocol-Version %q, want %s (all: %v)", method, version, tt.want, reqs)
				} else if method == http.MethodGet {
					get = true
				}
			}
			if get != !tt.stateless {
				t.Errorf("standalone GET stream opened: %v, want %v (requests %v)", get, !tt.stateless, reqs)
			}
			h.Close()

			results := auditEvents(t, h, store.EventResult)
			if len(results) != 2 {
				t.Fatalf("audit has %d results, want 2", len(results))
			}
			f := results[0].Fields
			if len(f["trace_id"].(string)) != 32 || f["tenant"] != h.Principal().Tenant || f["user"] != h.Principal().User || f["connection"] != float64(1) {
				t.Errorf("result fields = %v, want a trace id, the tenant and user %v and connection 1", f, h.Principal())
			}
			session, _ := f["session"].(string)
			if tt.stateless != (session == "") || (session != "" && len(session) != 12) {
				t.Errorf("session fingerprint = %q (stateless %v)", session, tt.stateless)
			}
		})
	}
}

// gate is an in-process server whose "wait" tool blocks until released,
// recording how many calls it ever held at once.
type gate struct {
	mu      sync.Mutex
	now     int
	most    int
	started int
	open    chan struct{}
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "1"}, nil)
	g.addTo(s)
	return s
}

// addTo adds the gate's "wait" tool to s.
func (g *gate) addTo(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g.mu.Lock()
			g.now++
			g.started++
			g.most = max(g.most, g.now)
			g.mu.Unlock()
			defer func() {
				g.mu.Lock()
				g.now--
				g.mu.Unlock()
			}()
			select {
			case <-g.open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: text("done")}, nil
		})
}

func (g *gate) stats() (started, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started, g.most
}

func TestBackpressure(t *testing.T) {
	g := newGate()
	hs := newHTTPServer(t, g.server, true)
	srv := remote("web", hs.url)
	srv.MaxConcurrency = 2
	srv.QueueTimeout = 300 * time.Millisecond
	cfg := devConfig(t, srv)
	classify(cfg, "web", "read", "wait")
	h := open(t, cfg)
	snap := h.Snapshot()

	results := make(chan *airlock.Result, 10)
	for range 10 {
		go func() {
			results <- h.Call(context.Background(), snap, airlock.Call{Name: "web__wait", Arguments: json.RawMessage(`{}`)})
		}()
	}
	// Eight calls find no slot within queue_timeout; then the two running
	// ones are let go.
	var busy []*airlock.Result
	for range 8 {
		busy = append(busy, <-results)
	}
	close(g.open)
	var done []*airlock.Result
	for range 2 {
		done = append(done, <-results)
	}
	for _, r := range busy {
		wantStatus(t, r, airlock.Busy)
		if !strings.Contains(r.Content, "max_concurrency") || !strings.Contains(r.Content, "not sent") || r.QueueWait < 300*time.Millisecond {
			t.Errorf("busy result = %q after %v", r.Content, r.QueueWait)
		}
	}
	for _, r := range done {
		wantStatus(t, r, airlock.OK)
	}
	if started, most := g.stats(); started != 2 || most != 2 {
		t.Errorf("the server ran %d calls, at most %d at once; want 2 and 2", started, most)
	}
}

func TestTurnAndTenantLimits(t *testing.T) {
	c := &counted{}
	cfg := newConfig(t, inProcess)
	cfg.Limits.MaxCallsPerTurn = 3
	h := openIn(t, cfg, map[string]*mcp.Server{"c": c.server()}, nil)
	ctx := context.Background()
	turn := h.BeginTurn(ctx)
	for i := range 4 {
		r := h.Call(ctx, turn, airlock.Call{Name: "c__note", Arguments: json.RawMessage(`{"text":"x"}`)})
		if i < 3 {
			wantStatus(t, r, airlock.OK)
			continue
		}
		wantStatus(t, r, airlock.Denied)
		if !strings.Contains(r.Content, "limits.max_calls_per_turn") {
			t.Errorf("denied = %q, want the limit named", r.Content)
		}
	}
	if n := c.calls.Load(); n != 3 {
		t.Errorf("server ran %d calls, want 3", n)
	}
	// The next turn starts counting again.
	wantStatus(t, h.Call(ctx, h.BeginTurn(ctx), airlock.Call{Name: "c__note", Arguments: json.RawMessage(`{"text":"y"}`)}), airlock.OK)

	g := newGate()
	cfg = newConfig(t, inProcess)
	cfg.Limits.MaxConcurrentPerTenant = 1
	classify(cfg, "c", "read", "wait")
	h = openIn(t, cfg, map[string]*mcp.Server{"c": g.server()}, &airlock.Options{Principal: airlock.Principal{Tenant: "acme"}})
	first := make(chan *airlock.Result, 1)
	go func() { first <- h.Call(ctx, h.Snapshot(), airlock.Call{Name: "c__wait"}) }()
	waitFor(t, 10*time.Second, "the first call to reach the server", func() bool { started, _ := g.stats(); return started == 1 })
	// A capacity limit, like a full server: busy, not denied.
	r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "c__wait"})
	wantStatus(t, r, airlock.Busy)
	if !strings.Contains(r.Content, "tenant acme") || !strings.Contains(r.Content, "limits.max_concurrent_per_tenant") ||
		!strings.Contains(r.Content, "not sent") {
		t.Errorf("busy = %q", r.Content)
	}
	if started, _ := g.stats(); started != 1 {
		t.Errorf("the server saw %d calls, want only the first", started)
	}
	close(g.open)
	wantStatus(t, <-first, airlock.OK)
}

func TestSessionRebuild(t *testing.T) {
	for _, tt := range []struct {
		name       string
		endStreams bool
	}{
		// The old streams stay open: the next call is refused by the
		// server for its session (404); it is an idempotent write, so it
		// goes once more on a new session (TestSessionGoneAfterAWrite:
		// other writes do not), and the call in flight on the old
		// session is given up.
		{"streams stay open", false},
		// A restart: every connection is cut, so the call in flight
		// loses its answer at once; the next call finds the session
		// gone, as above.
		{"connections cut", true},
	} {
		t.Run(tt.name, func(t *testing.T) { testSessionRebuild(t, tt.endStreams) })
	}
}

func testSessionRebuild(t *testing.T, endStreams bool) {
	g := newGate()
	c := &counted{}
	hs := newHTTPServer(t, func() *mcp.Server {
		s := c.server()
		g.addTo(s)
		return s
	}, false)
	srv := remote("web", hs.url)
	srv.ProtocolVersions = []string{"2025-11-25"}
	cfg := devConfig(t, srv)
	classify(cfg, "web", "write", "wait")
	cfg.Policy.Tools = append(cfg.Policy.Tools, config.ToolClass{Server: "web", Tool: "note", Effect: "write", Idempotent: true, Source: "test"})
	h := open(t, cfg)
	ctx := context.Background()
	wantStatus(t, call(t, h, "web__note", `{"text":"before"}`), airlock.OK)

	// A write is in flight when the server forgets every session.
	inflight := make(chan *airlock.Result, 1)
	go func() { inflight <- h.Call(ctx, h.Snapshot(), airlock.Call{Name: "web__wait"}) }()
	waitFor(t, 10*time.Second, "the first call to reach the server", func() bool { started, _ := g.stats(); return started == 1 })
	hs.forget(endStreams)

	r := call(t, h, "web__note", `{"text":"after"}`)
	wantStatus(t, r, airlock.OK)
	if n := c.calls.Load(); n != 2 {
		t.Errorf("note ran %d times, want 2", n)
	}
	// The write that was in flight on the old session is unknown, never
	// replayed, even though its stream may still be open: it is settled
	// before the tool it started has even finished.
	w := <-inflight
	close(g.open)
	wantStatus(t, w, airlock.OutcomeUnknown)
	if w.RecoveryID == "" {
		t.Error("the unknown write has no recovery record")
	}
	if started, _ := g.stats(); started != 1 {
		t.Errorf("wait ran %d times, want 1", started)
	}
	st := h.Servers()[0]
	if st.Status != airlock.StatusReady || st.Restarts != 1 {
		t.Errorf("server = %+v, want ready after one rebuild", st)
	}
	h.Close()
	var gens []float64
	for _, e := range auditEvents(t, h, store.EventResult) {
		gens = append(gens, e.Fields["connection"].(float64))
	}
	if len(gens) != 3 || gens[0] != 1 || gens[len(gens)-1] != 2 {
		t.Errorf("connection generations = %v, want 1 … 2", gens)
	}
}

// resolver answers every name with one address.
type resolver struct{ addr netip.Addr }

func (r resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.addr}, nil
}

func TestEgressGuard(t *testing.T) {
	hs := newHTTPServer(t, newTestServer, true)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(hs.url, "/mcp"), "http://"))
	for _, tt := range []struct {
		name        string
		resolvesTo  string
		development bool
		private     bool
		want        string
	}{
		{"loopback refused", "127.0.0.1", false, false, airlock.StatusFailed},
		{"loopback in development", "127.0.0.1", true, false, airlock.StatusReady},
		{"loopback is not private", "127.0.0.1", false, true, airlock.StatusFailed},
		{"cloud metadata always refused", "169.254.169.254", true, true, airlock.StatusFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := remote("web", "http://mcp.example.test:"+port+"/mcp")
			srv.AllowedHosts = []string{"mcp.example.test"}
			srv.AllowPrivateNetworks = tt.private
			cfg := newConfig(t, srv)
			cfg.Development = tt.development
			h, err := airlock.Open(context.Background(), cfg, &airlock.Options{
				Auth: airlock.AuthOptions{Resolver: resolver{netip.MustParseAddr(tt.resolvesTo)}}})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			st := h.Servers()[0]
			if st.Status != tt.want {
				t.Fatalf("status = %s (%v), want %s", st.Status, st.Err, tt.want)
			}
			if tt.want == airlock.StatusFailed && !strings.Contains(st.Err.Error(), "refusing to connect") {
				t.Errorf("error = %v, want the egress refusal", st.Err)
			}
		})
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	hs := newHTTPServer(t, newTestServer, true)
	var posts atomic.Int64
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		http.Redirect(w, r, hs.url, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	h := open(t, devConfig(t, remote("web", redirector.URL+"/mcp")))
	st := h.Servers()[0]
	if st.Status != airlock.StatusFailed || !strings.Contains(st.Err.Error(), "redirect") {
		t.Fatalf("server = %+v (%v), want failed on the redirect", st, st.Err)
	}
	if errors.Is(st.Err, context.DeadlineExceeded) {
		t.Error("the failure was a timeout, not the redirect")
	}
}

// cutAnswers wraps an MCP handler: a tools/call of the tool "cut" gets the
// headers of an event stream and a keep-alive comment, then the connection
// is cut, as a failing proxy would do; there was no event id, so the
// stream cannot be resumed.
func cutAnswers(t *testing.T, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, tool := toolCallOf(r); tool != "cut" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, ": working\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
}

func TestBrokenAnswerStream(t *testing.T) {
	c := &counted{}
	srv := c.server()
	srv.AddTool(&mcp.Tool{Name: "cut", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			t.Error("the cut tool ran")
			return nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	ts := httptest.NewServer(cutAnswers(t, handler))
	t.Cleanup(ts.Close) // after the host has closed its streams
	cfg := devConfig(t, remote("web", ts.URL+"/mcp"))
	classify(cfg, "web", "write", "cut", "note")
	cfg.Servers[0].RequestTimeout = time.Minute
	cfg.Servers[0].StreamReadTimeout = time.Minute
	h := open(t, cfg)

	// The answer can never come: the call ends at once, not after its
	// minute of request_timeout, and as a write it is unknown (not a
	// contract error: the server broke nothing it promised).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "web__cut", Arguments: json.RawMessage(`{}`)})
	if ctx.Err() != nil {
		t.Fatal("the call waited for an answer that could not come")
	}
	wantStatus(t, r, airlock.OutcomeUnknown)
	if !strings.Contains(r.Err.Msg, "answer stream ended before the answer") {
		t.Errorf("unknown = %q, want the broken stream named", r.Err.Msg)
	}
	// One stream broke, not the connection: the next call works on it.
	wantStatus(t, call(t, h, "web__note", `{"text":"after"}`), airlock.OK)
}

// dupAnswers wraps an MCP handler: a tools/call of the tool "dup" is
// answered by hand with a result that has a duplicate key, as a JSON body
// or as an event.
func dupAnswers(next http.Handler, sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, tool := toolCallOf(r)
		if tool != "dup" {
			next.ServeHTTP(w, r)
			return
		}
		answer := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"harmless"}],"isError":false,"isError":true}}`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
}

func TestMalformedRemoteAnswers(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "event stream"}[sse], func(t *testing.T) {
			c := &counted{}
			srv := c.server()
			srv.AddTool(&mcp.Tool{Name: "dup", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
			handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: !sse, DisableLocalhostProtection: true})
			ts := httptest.NewServer(dupAnswers(handler, sse))
			t.Cleanup(ts.Close)
			cfg := devConfig(t, remote("web", ts.URL+"/mcp"))
			classify(cfg, "web", "read", "dup", "note")
			h := open(t, cfg)

			// A duplicate key could let one check see one value and the
			// host use the other: the answer is refused whole.
			r := call(t, h, "web__dup", `{}`)
			wantStatus(t, r, airlock.ContractError)
			if !strings.Contains(r.Err.Msg, "malformed") || r.Content != "" {
				t.Errorf("result = %q (content %q), want a malformed-message contract error, nothing for the model", r.Err.Msg, r.Content)
			}
			// The connection broke; the host reconnects and goes on.
			waitFor(t, 10*time.Second, "the server to be ready again", func() bool {
				st := h.Servers()[0]
				return st.Status == airlock.StatusReady && st.Restarts == 1
			})
			wantStatus(t, call(t, h, "web__note", `{"text":"after"}`), airlock.OK)
		})
	}
}

func TestPrivateCA(t *testing.T) {
	srv := newTestServer()
	ts := httptest.NewTLSServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true}))
	t.Cleanup(ts.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	// The system does not trust the test server's certificate.
	h := open(t, devConfig(t, remote("web", ts.URL+"/mcp")))
	if st := h.Servers()[0]; st.Status != airlock.StatusFailed || !strings.Contains(st.Err.Error(), "certificate") {
		t.Fatalf("without ca_file: server = %+v (%v), want failed on the certificate", st, st.Err)
	}
	// ca_file trusts it.
	withCA := remote("web", ts.URL+"/mcp")
	withCA.CAFile = caFile
	h = open(t, devConfig(t, withCA))
	if st := h.Servers()[0]; st.Status != airlock.StatusReady {
		t.Fatalf("with ca_file: server = %+v (%v), want ready", st, st.Err)
	}
	wantStatus(t, call(t, h, "web__echo", `{"text":"over tls"}`), airlock.OK)
}

// toolCallOf returns the id and tool name of a tools/call request (and
// "" for anything else), leaving the body to be read again.
func toolCallOf(r *http.Request) (id json.RawMessage, tool string) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return nil, ""
	}
	return msg.ID, msg.Params.Name
}

// A remote server that goes away during a call (its process ended, so
// nothing listens at its address) ends the call when the host tries to
// resume its streams and is refused, not after every retry of the
// resumption: a read is a connection_error, a write's outcome is unknown.
func TestRemoteServerGoneMidCall(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stateless bool
		resumable bool // the server keeps its events, so streams can be resumed
		effect    string
		want      airlock.Kind
	}{
		{"session, resumable streams", false, true, "read", airlock.ConnectionError},
		{"session, resumable streams, a write", false, true, "write", airlock.OutcomeUnknown},
		{"session", false, false, "read", airlock.ConnectionError},
		{"stateless", true, false, "read", airlock.ConnectionError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reached, gone := make(chan struct{}, 1), make(chan struct{})
			srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					// The answer stream is open: progress went out on it.
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
					reached <- struct{}{}
					select {
					case <-ctx.Done():
					case <-gone: // the process is dead; its goroutines end
					}
					return nil, errors.New("gone")
				})
			opts := &mcp.StreamableHTTPOptions{Stateless: tt.stateless, DisableLocalhostProtection: true}
			if tt.resumable {
				opts.EventStore = mcp.NewMemoryEventStore(nil)
			}
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
			t.Cleanup(ts.Close)
			cfg := devConfig(t, remote("web", ts.URL+"/mcp"))
			classify(cfg, "web", tt.effect, "wait")
			cfg.Servers[0].RequestTimeout = 2 * time.Minute
			h := open(t, cfg)

			go func() {
				<-reached
				ts.Listener.Close()
				ts.CloseClientConnections()
				close(gone)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "web__wait", Arguments: json.RawMessage(`{}`)})
			if ctx.Err() != nil {
				t.Fatal("the call outlived its server by a minute")
			}
			wantStatus(t, r, tt.want)
			if strings.Contains(r.Err.Msg, "attempts") {
				t.Errorf("error = %q: the host retried a server that refused the connection", r.Err.Msg)
			}
		})
	}
}

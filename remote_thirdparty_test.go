package airlock_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

// TestRemoteServerEverything runs the TypeScript reference server in its
// Streamable HTTP mode and reaches it through the host as a transport: http
// server, with a recording reverse proxy in between that sees what the
// host sends and what the server answers (the session id included).
func TestRemoteServerEverything(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	proxy := newRecordingProxy(t, startEverythingHTTP(t, node, script))
	allowed := []string{"echo", "get-sum", "get-tiny-image"}

	t.Run("calls", func(t *testing.T) {
		srv := remote("everything", proxy.url+"/mcp")
		srv.AllowedTools = allowed
		cfg := devConfig(t, srv)
		var log testenv.Buffer
		h, err := airlock.Open(context.Background(), cfg, &airlock.Options{
			StopGrace: 500 * time.Millisecond,
			Logger:    slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { h.Close() })

		st := h.Servers()[0]
		if st.Status != airlock.StatusReady {
			t.Fatalf("server = %+v: %v", st, st.Err)
		}
		if st.ProtocolVersion != "2025-11-25" {
			t.Errorf("protocol = %s, want 2025-11-25 (the TypeScript SDK has no 2026-07-28 yet)", st.ProtocolVersion)
		}
		want := []string{"everything__echo", "everything__get-sum", "everything__get-tiny-image"}
		got := toolNames(h.Snapshot())
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		session := proxy.session(t)

		r := call(t, h, "everything__echo", `{"message":"hello over http"}`)
		wantContent(t, r, airlock.OK, "hello over http")
		r = call(t, h, "everything__get-sum", `{"a":2,"b":40}`)
		wantContent(t, r, airlock.OK, "42")
		if n := proxy.toolCalls("get-sum"); n != 1 {
			t.Fatalf("the server got %d get-sum calls, want 1", n)
		}
		wantStatus(t, call(t, h, "everything__get-sum", `{"a":"two","b":40}`), airlock.InvalidArguments)
		if n := proxy.toolCalls("get-sum"); n != 1 {
			t.Errorf("the server got %d get-sum calls after the bad one, want still 1: it must not be sent", n)
		}

		r = call(t, h, "everything__get-tiny-image", `{}`)
		wantStatus(t, r, airlock.OK)
		if len(r.Artifacts) != 1 || r.Artifacts[0].MediaType != "image/png" || r.Artifacts[0].Size == 0 || strings.Contains(r.Content, "iVBOR") {
			t.Errorf("image result = %q with %+v, want one PNG artifact and no base64", r.Content, r.Artifacts)
		}
		for _, a := range r.Artifacts {
			if b, err := os.ReadFile(a.Path); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("artifact %s: %v, want a PNG file", a.ID, err)
			}
		}

		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		// terminate_on_close: true ends the session with a DELETE, and the
		// server forgets it.
		if got := proxy.deletes(session); got != 1 {
			t.Errorf("the proxy saw %d DELETEs for the session, want 1", got)
		}
		if code := testenv.PingSession(t, proxy.url+"/mcp", session); code == http.StatusOK {
			t.Errorf("a ping on the closed session got %d, want it refused: the server should have ended the session", code)
		}

		// The audit trail has a fingerprint of the session, never the id.
		sum := sha256.Sum256([]byte(session))
		fp := hex.EncodeToString(sum[:6])
		results := auditEvents(t, h, store.EventResult)
		if len(results) != 4 {
			t.Fatalf("audit has %d results, want 4", len(results))
		}
		hex12 := regexp.MustCompile(`^[0-9a-f]{12}$`)
		for _, e := range results {
			got, _ := e.Fields["session"].(string)
			if e.Class == string(airlock.InvalidArguments) {
				// Refused before a connection was chosen: no session.
				if got != "" {
					t.Errorf("%s %s: session = %q, want none for a call that was not sent", e.Tool, e.Class, got)
				}
				continue
			}
			if !hex12.MatchString(got) || got != fp {
				t.Errorf("%s %s: session = %q, want %s (12 hex digits of the id's SHA-256)", e.Tool, e.Class, got, fp)
			}
		}
		noFileContains(t, cfg.Dir, session)
		if strings.Contains(log.String(), session) {
			t.Error("the host's log contains the raw session id")
		}
		if !strings.Contains(log.String(), fp) {
			t.Errorf("the host's log does not name the session by its fingerprint %s", fp)
		}
	})

	t.Run("terminate_on_close false", func(t *testing.T) {
		srv := remote("everything", proxy.url+"/mcp")
		srv.AllowedTools = allowed
		srv.TerminateOnClose = false
		h := open(t, devConfig(t, srv))
		if st := h.Servers()[0]; st.Status != airlock.StatusReady {
			t.Fatalf("server = %+v: %v", st, st.Err)
		}
		session := proxy.session(t)
		wantStatus(t, call(t, h, "everything__echo", `{"message":"keep"}`), airlock.OK)
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if got := proxy.deletes(session); got != 0 {
			t.Errorf("the proxy saw %d DELETEs for the session, want none", got)
		}
		if code := testenv.PingSession(t, proxy.url+"/mcp", session); code != http.StatusOK {
			t.Errorf("a ping on the session after Close got %d, want 200: the session is the server's to end", code)
		}
	})
}

// startEverythingHTTP starts server-everything in streamableHttp mode on
// loopback and returns its MCP endpoint. The server listens on
// process.env.PORT on every interface; a preloaded module makes it listen
// on 127.0.0.1 only, on a port the system picks (PORT=0), and report the
// port, so that nothing else can reach it and no free port is guessed. The
// process group is killed when the test ends.
func startEverythingHTTP(t *testing.T, node, script string) string {
	t.Helper()
	preload := filepath.Join(t.TempDir(), "loopback.mjs")
	if err := os.WriteFile(preload, []byte(loopbackPreload), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--import", preload, script, "streamableHttp")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir, "PORT=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout testenv.Buffer
	stderr := &listenWatcher{port: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("server-everything stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	})
	select {
	case port := <-stderr.port:
		return "http://127.0.0.1:" + port
	case err := <-exited:
		exited <- err
		t.Fatalf("server-everything exited before listening (%v):\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server-everything did not listen within 30s:\n%s", stderr.String())
	}
	return ""
}

// loopbackPreload binds every listening socket of the Node.js process to
// 127.0.0.1 and prints the port it got.
const loopbackPreload = `import net from "node:net";
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => process.stderr.write("AIRLOCK_LISTENING " + this.address().port + "\n"));
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    return listen.call(this, { port: Number(args[0]), host: "127.0.0.1" }, args.find((a) => typeof a === "function"));
  }
  return listen.apply(this, args);
};
`

// listenWatcher collects a process's stderr and sends the port of the
// first AIRLOCK_LISTENING line.
type listenWatcher struct {
	testenv.Buffer
	mu   sync.Mutex // guards sent
	port chan string
	sent bool
}

var listeningLine = regexp.MustCompile(`(?m)^AIRLOCK_LISTENING (\d+)$`)

func (w *listenWatcher) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.sent {
		if m := listeningLine.FindStringSubmatch(w.String()); m != nil {
			w.sent = true
			w.port <- string(m[1])
		}
	}
	return n, err
}

// recordingProxy is a loopback reverse proxy in front of a server. It
// records every exchange: the method, the session the request named, the
// JSON-RPC method and tool of a POST, and the session id a response
// assigned.
type recordingProxy struct {
	url string

	mu        sync.Mutex
	exchanges []proxyExchange
}

type proxyExchange struct {
	method      string // HTTP method
	session     string // Mcp-Session-Id of the request
	rpcMethod   string
	tool        string
	status      int
	respSession string // Mcp-Session-Id of the response
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1, // server-sent events pass at once
		ModifyResponse: func(resp *http.Response) error {
			req := resp.Request
			e := proxyExchange{method: req.Method, session: req.Header.Get("Mcp-Session-Id"),
				status: resp.StatusCode, respSession: resp.Header.Get("Mcp-Session-Id")}
			if req.Method == http.MethodPost {
				e.rpcMethod, e.tool = rpcOf(req)
			}
			p.mu.Lock()
			p.exchanges = append(p.exchanges, e)
			p.mu.Unlock()
			return nil
		},
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			// Keep the body for ModifyResponse, which sees the outgoing
			// request.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p.url = ts.URL
	return p
}

type bodyKey struct{}

// rpcOf returns the JSON-RPC method and, for tools/call, the tool name of
// the request's body.
func rpcOf(req *http.Request) (method, tool string) {
	body, _ := req.Context().Value(bodyKey{}).([]byte)
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	return msg.Method, msg.Params.Name
}

// session returns the id of the last session the server assigned.
func (p *recordingProxy) session(t *testing.T) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.exchanges) - 1; i >= 0; i-- {
		if e := p.exchanges[i]; e.respSession != "" && e.rpcMethod == "initialize" {
			return e.respSession
		}
	}
	t.Fatal("the server assigned no session")
	return ""
}

// toolCalls counts the tools/call requests for tool that reached the server.
func (p *recordingProxy) toolCalls(tool string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.exchanges {
		if e.rpcMethod == "tools/call" && e.tool == tool {
			n++
		}
	}
	return n
}

// deletes counts the DELETE requests for session that reached the server.
func (p *recordingProxy) deletes(session string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.exchanges {
		if e.method == http.MethodDelete && e.session == session {
			n++
		}
	}
	return n
}

// noFileContains fails if any file under dir contains s.
func noFileContains(t *testing.T, dir, s string) {
	t.Helper()
	if len(s) < 16 {
		t.Fatalf("%q is too short to scan for", s)
	}
	if testenv.NoFileHolds(t, dir, s) == 0 {
		t.Fatalf("no files under %s to scan", dir)
	}
}

// TestRemoteTaskRequired: over Streamable HTTP as over stdio, a tool that
// can only be called as an MCP task is withheld, with the reason.
func TestRemoteTaskRequired(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	srv := remote("everything", startEverythingHTTP(t, node, script)+"/mcp")
	srv.AllowedTools = []string{"echo", "simulate-research-query"}
	h, err := airlock.Open(context.Background(), devConfig(t, srv), &airlock.Options{StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	if got := toolNames(h.Snapshot()); !slices.Equal(got, []string{"everything__echo"}) {
		t.Errorf("tools = %v, want only everything__echo", got)
	}
	if w := h.Snapshot().Withheld(); len(w) != 1 || w[0].Tool != "simulate-research-query" || w[0].Flag != "task_required" {
		t.Errorf("withheld = %+v", w)
	}
}

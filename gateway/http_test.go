package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/gateway"
	"github.com/airlockhq/airlock/internal/testenv"
)

// post sends body to the endpoint as a client of era would, with headers
// changed by edit (which may be nil), and returns the status and body.
func post(t *testing.T, f *fixture, era, body string, edit func(*http.Request)) (int, http.Header, string) {
	t.Helper()
	req := newPost(t, f.url, era, body)
	if edit != nil {
		edit(req)
	}
	return do(t, req)
}

// newPost is a POST of body to url as a client of era sends it.
func newPost(t *testing.T, url, era, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if era != "" {
		req.Header.Set("Mcp-Protocol-Version", era)
	}
	if era == stateless {
		// A 2026-07-28 request names its method and tool in headers too.
		var msg struct {
			Method string
			Params struct{ Name string }
		}
		if json.Unmarshal([]byte(body), &msg) == nil {
			req.Header.Set("Mcp-Method", msg.Method)
			if msg.Params.Name != "" {
				req.Header.Set("Mcp-Name", msg.Params.Name)
			}
		}
	}
	return req
}

func do(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// callBody is a 2026-07-28 tools/call, with its per-request _meta.
func callBody(name, args string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// TestBadInput: what a client may get wrong, or an attacker try, is refused
// at the door, and nothing reaches the server.
func TestBadInput(t *testing.T) {
	f := start(t, "", &gateway.Options{MaxBodyBytes: 64 << 10, Serve: config.Serve{AllowedOrigins: []string{"http://localhost:6274"}}})
	host := func(h string) func(*http.Request) { return func(r *http.Request) { r.Host = h } }
	header := func(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }
	tests := []struct {
		name   string
		era    string
		body   string
		edit   func(*http.Request)
		status int
		want   string // in the body
	}{
		{"malformed JSON", stateless, `{"jsonrpc":"2.0","id":1,"method":`, nil, http.StatusBadRequest, "malformed"},
		{"not JSON-RPC", stateless, `{"hello":"world"}`, nil, http.StatusBadRequest, ""},
		{"malformed JSON, no version", "", `[{"jsonrpc":`, nil, http.StatusBadRequest, "malformed"},
		{"oversized body", stateless, callBody("w__echo", `{"text":"`+strings.Repeat("x", 100<<10)+`"}`), nil, http.StatusRequestEntityTooLarge, "exceeds"},
		{"oversized, length not given", stateless, callBody("w__echo", `{"text":"`+strings.Repeat("x", 100<<10)+`"}`),
			func(r *http.Request) { r.ContentLength = -1 }, http.StatusRequestEntityTooLarge, "exceeds"},
		{"web page not allowed", stateless, callBody("w__echo", `{"text":"x"}`), header("Origin", "https://evil.example"), http.StatusForbidden, "serve.allowed_origins"},
		{"origin null", stateless, callBody("w__echo", `{"text":"x"}`), header("Origin", "null"), http.StatusForbidden, "origin not allowed"},
		{"foreign Host (DNS rebinding)", stateless, callBody("w__echo", `{"text":"x"}`), host("evil.example"), http.StatusForbidden, "host not allowed"},
		{"foreign Host with port", stateless, callBody("w__echo", `{"text":"x"}`), host("evil.example:80"), http.StatusForbidden, "host not allowed"},
		{"session that does not exist", session, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, header("Mcp-Session-Id", "NOSUCHSESSIONAAAAAAAAAAAAA"), http.StatusNotFound, "session not found"},
		{"tool outside the catalog", stateless, callBody("b__echo", `{"text":"x"}`), nil, 0, `"code":-32602`},
		{"tool unknown anywhere", stateless, callBody("nope", `{}`), nil, 0, `"code":-32602`},
	}
	for _, tt := range tests {
		code, _, body := post(t, f, tt.era, tt.body, tt.edit)
		if tt.status != 0 && code != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %q, want %d containing %q", tt.name, code, body, tt.status, tt.want)
		}
	}
	if got := marks(t, f.mark, "call "); len(got) != 0 {
		t.Errorf("server w saw %q", got)
	}
	if got := marks(t, f.markB, "call "); len(got) != 0 {
		t.Errorf("server b saw %q", got)
	}

	// The allowed web page gets in, with CORS for exactly its origin.
	code, h, body := post(t, f, stateless, callBody("w__echo", `{"text":"from a page"}`), header("Origin", "http://localhost:6274"))
	if code != http.StatusOK || !strings.Contains(body, "from a page") || h.Get("Access-Control-Allow-Origin") != "http://localhost:6274" {
		t.Errorf("allowed origin: %d %q, Access-Control-Allow-Origin %q", code, body, h.Get("Access-Control-Allow-Origin"))
	}
	pre, _ := http.NewRequest(http.MethodOptions, f.url, nil)
	pre.Header.Set("Origin", "http://localhost:6274")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type, mcp-protocol-version")
	if code, h, _ := do(t, pre); code >= 300 || h.Get("Access-Control-Allow-Origin") != "http://localhost:6274" {
		t.Errorf("preflight: %d, Access-Control-Allow-Origin %q", code, h.Get("Access-Control-Allow-Origin"))
	}
	get, _ := http.NewRequest(http.MethodGet, f.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	if code, _, _ := do(t, get); code != http.StatusMethodNotAllowed {
		t.Errorf("GET without a session: %d, want 405", code)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	f := start(t, "", nil)
	base := strings.TrimSuffix(f.url, gateway.Endpoint)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/readyz", nil)
	req.Host = "evil.example"
	if code, _, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("/readyz for a foreign host: %d, want 403", code)
	}
}

// TestMaxSessions: sessions and subscription streams together are bounded
// by serve.max_sessions; past it an initialize is refused, and a session
// that ends makes room. Stateless requests need no session.
func TestMaxSessions(t *testing.T) {
	f := start(t, "", &gateway.Options{Serve: config.Serve{MaxSessions: 2}})
	first := f.connect(t, session, nil)
	// Its initialize is counted until its handler returns, which may be
	// after Connect does: wait, so that the count below is the stream's.
	waitFor(t, "the first session's initialize to settle", func() bool { return f.g.Opening() == 0 })
	// A 2026-07-28 client that listens for changes holds a stream open.
	f.connect(t, stateless, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}})
	// The client opens its stream after Connect returns.
	waitFor(t, "the listening client's stream", func() bool { return f.g.Opening() == 1 })
	c := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil)
	if cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: session}); err == nil {
		cs.Close()
		t.Fatal("a third session was opened, want it refused")
	}
	code, h, body := post(t, f, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "serve.max_sessions (2)") {
		t.Errorf("initialize past the bound: %d %q", code, body)
	}
	// The method names spelled with escapes are the same requests.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"\u0069nitialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions\/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
	} {
		if code, _, got := post(t, f, "", body, nil); code != http.StatusServiceUnavailable || !strings.Contains(got, "serve.max_sessions (2)") {
			t.Errorf("%s past the bound: %d %q, want 503", body, code, got)
		}
	}
	res, err := call(t, f.connect(t, stateless, nil), "w__echo", `{"text":"stateless"}`)
	if err != nil || resultText(res) != "stateless" {
		t.Errorf("stateless call: %+v, %v", res, err)
	}
	first.Close()
	waitFor(t, "room for a session", func() bool {
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: session})
		if err == nil {
			cs.Close()
		}
		return err == nil
	})
}

// TestSessionIDsNotLogged: the log names sessions by fingerprint only.
func TestSessionIDsNotLogged(t *testing.T) {
	f := start(t, "", nil)
	var ids []string
	for range 3 {
		cs := f.connect(t, session, nil)
		if _, err := call(t, cs, "w__echo", `{"text":"x"}`); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cs.ID())
		cs.Close()
	}
	// The SDK logs what it cannot find, with the id it was given.
	post(t, f, session, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, func(r *http.Request) { r.Header.Set("Mcp-Session-Id", ids[0]) })
	f.stop(t)
	log := f.log.String()
	if !strings.Contains(log, "session started") || !strings.Contains(log, "session:") {
		t.Errorf("log has no session fingerprints:\n%s", log)
	}
	for _, id := range ids {
		if id == "" || strings.Contains(log, id) {
			t.Errorf("session id %q is in the log:\n%s", id, log)
		}
	}
}

// TestDrain: a shutdown lets a call in flight finish; one that outlives the
// drain timeout is cancelled, and the shutdown still ends.
func TestDrain(t *testing.T) {
	for _, finish := range []bool{true, false} {
		f := start(t, "", &gateway.Options{DrainTimeout: 2 * time.Second})
		cs := f.connect(t, session, nil)
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := call(t, cs, "w__wait", `{}`)
			done <- res
		}()
		waitFor(t, "the call to reach the server", func() bool { return len(marks(t, f.mark, "call wait")) == 1 })
		stopped := make(chan error, 1)
		began := time.Now()
		go func() { stopped <- f.stop(t) }()
		if finish {
			time.Sleep(300 * time.Millisecond)
			release(t, f.mark)
			if res := <-done; res == nil || resultText(res) != "done" {
				t.Errorf("the call in flight: %+v, want it to finish", res)
			}
		}
		if err := <-stopped; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if took := time.Since(began); took > 15*time.Second {
			t.Errorf("the shutdown took %s", took)
		}
		if !finish {
			if res := <-done; res != nil && !res.IsError {
				t.Errorf("the call that outlived the drain: %+v", res)
			}
		}
	}
}

// TestOwnLoopbackOrigin: a page of the gateway's own loopback origin (the
// origin the request is for) gets in without being listed; a page of any
// other origin, loopback or not, does not (DNS rebinding: the Host check
// refuses a rebound name before the origin is looked at).
func TestOwnLoopbackOrigin(t *testing.T) {
	f := start(t, "", nil)
	own := "http://" + strings.TrimSuffix(strings.TrimPrefix(f.url, "http://"), gateway.Endpoint)
	_, port, _ := strings.Cut(strings.TrimPrefix(own, "http://"), ":")
	for _, tt := range []struct {
		origin, host string
		status       int
	}{
		{own, "", http.StatusOK},
		{strings.ToUpper(own), "", http.StatusOK},
		{"http://localhost:" + port, "", http.StatusForbidden}, // the same port, another origin
		{"http://127.0.0.1:1", "", http.StatusForbidden},
		{"https://" + strings.TrimPrefix(own, "http://"), "", http.StatusForbidden},
		{"http://evil.example:" + port, "evil.example:" + port, http.StatusForbidden},
	} {
		code, _, body := post(t, f, stateless, callBody("w__echo", `{"text":"own"}`), func(r *http.Request) {
			r.Header.Set("Origin", tt.origin)
			if tt.host != "" {
				r.Host = tt.host
			}
		})
		if code != tt.status || tt.status == http.StatusOK && !strings.Contains(body, "own") {
			t.Errorf("Origin %s, Host %q: %d %q, want %d", tt.origin, tt.host, code, body, tt.status)
		}
	}
}

// TestInitializeOfTheStatelessEra: an initialize that says it is a
// 2026-07-28 request is answered as the method that protocol removed (404,
// -32601), and opens no session; an older initialize opens one.
func TestInitializeOfTheStatelessEra(t *testing.T) {
	f := start(t, "", nil)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	init := func(version, extra string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version +
			`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}` + extra + `}}`
	}
	code, h, body := post(t, f, stateless, init("2026-07-28", ","+meta), nil)
	if code != http.StatusNotFound || !strings.Contains(body, `"code":-32601`) || h.Get("Mcp-Session-Id") != "" {
		t.Errorf("2026-07-28 initialize: %d %q, session %q; want 404, -32601, no session", code, body, h.Get("Mcp-Session-Id"))
	}
	code, h, body = post(t, f, session, init("2025-11-25", ""), nil)
	if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Errorf("2025-11-25 initialize: %d %q, session %q; want a session", code, body, h.Get("Mcp-Session-Id"))
	}
}

// TestRequestsNotLoggedAsSessions: a 2026-07-28 request, which the SDK
// serves as a connection of its own, writes no line about that
// connection to the log; a 2025-11-25 session's opening and closing are
// logged.
func TestRequestsNotLoggedAsSessions(t *testing.T) {
	f := start(t, "", nil)
	cs := f.connect(t, stateless, nil)
	for range 3 {
		if _, err := call(t, cs, "w__echo", `{"text":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	cs.Close()
	if log := f.log.String(); strings.Contains(log, "server connecting") || strings.Contains(log, "server session") {
		t.Errorf("the log has lines about stateless requests' connections:\n%s", log)
	}
	cs = f.connect(t, session, nil)
	if _, err := call(t, cs, "w__echo", `{"text":"x"}`); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	f.stop(t)
	log := f.log.String()
	for _, line := range []string{`msg="server session connected" session_id=session:`, `msg="server session disconnected" session_id=session:`} {
		if strings.Count(log, line) != 1 {
			t.Errorf("the log has not one %s:\n%s", line, log)
		}
	}
}

// rawSession opens a 2025-11-25 session on f's endpoint by hand, declaring
// the client capabilities caps (a JSON object), and returns what POSTs a
// message on it, with the headers of the session and its era.
func rawSession(t *testing.T, f *fixture, caps string) (send func(body string) *http.Response) {
	t.Helper()
	session := ""
	send = func(body string) *http.Response {
		t.Helper()
		req := newPost(t, f.url, "", body)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if session = resp.Header.Get("Mcp-Session-Id"); session == "" {
		t.Fatalf("initialize: %s, no session", resp.Status)
	}
	resp = send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return send
}

// TestSessionUnknownMethod: in a 2025-11-25 session, a request for a
// method the gateway does not serve is answered with JSON-RPC error
// -32601 for its id, as JSON, not with an HTTP error in plain text; the
// session goes on.
func TestSessionUnknownMethod(t *testing.T) {
	f := start(t, "", nil)
	send := rawSession(t, f, `{}`)
	for _, method := range []string{"foo/bar", "sampling/createMessage"} {
		resp := send(`{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":{}}`)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var msg struct {
			ID    int
			Error struct{ Code int }
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(data, &msg) != nil || msg.ID != 5 || msg.Error.Code != -32601 {
			t.Errorf("%s: %s %s %s, want 200 and a JSON-RPC error -32601 for id 5", method, resp.Status, resp.Header.Get("Content-Type"), data)
		}
	}
	resp := send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(data), `"id":6`) {
		t.Errorf("ping after them: %s %s", resp.Status, data)
	}
}

// TestIDsThatCannotBeEchoed: a request whose id the SDK would not give
// back as sent (a fraction, an exponent, an integer past 2^53 - 1), or
// whose id is null, and a message that is neither a request nor a
// response, are refused with -32600 (id null where the id cannot be
// echoed), in both eras, before they reach the SDK.
func TestIDsThatCannotBeEchoed(t *testing.T) {
	f := start(t, "", nil)
	send := rawSession(t, f, `{}`)
	for _, tt := range []struct {
		body string
		id   any
	}{
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":-123456789012345678901234567890,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, nil},
		{`{"jsonrpc":"2.0","id":7}`, 7.0},
	} {
		for _, era := range []string{"session", stateless} {
			var status int
			var body string
			if era == "session" {
				resp := send(tt.body)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, body = resp.StatusCode, string(data)
			} else {
				status, _, body = post(t, f, stateless, tt.body, nil)
			}
			var msg struct {
				ID    any
				Error struct {
					Code    int
					Message string
				}
			}
			if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &msg) != nil || msg.Error.Code != -32600 || msg.ID != tt.id {
				t.Errorf("%s %s: %d %s; want 400 with -32600 for id %v", era, tt.body, status, body, tt.id)
			}
			if tt.id == nil && !strings.Contains(body, `"id":null`) {
				t.Errorf("%s %s: %s; want \"id\": null (JSON-RPC 2.0 §5)", era, tt.body, body)
			}
		}
	}
	// The largest id the SDK holds exactly is answered under itself.
	resp := send(`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(data), `"id":9007199254740991`) {
		t.Errorf("ping with id 2^53-1: %s", data)
	}
}

// TestSessionRefusalsSayWhy: a list's cursor that no page gave, and a
// second initialize, are refused with a JSON-RPC code and words that say
// what to do.
func TestSessionRefusalsSayWhy(t *testing.T) {
	f := start(t, "", nil)
	send := rawSession(t, f, `{}`)
	for _, tt := range []struct {
		body string
		code int
		says string
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"garbage"}}`, -32602, "the cursor is not one this gateway gave"},
		{`{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{"cursor":"zz"}}`, -32602, "the cursor is not one this gateway gave"},
		{`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, -32600, "a session is initialized once"},
	} {
		resp := send(tt.body)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(data), fmt.Sprintf(`"code":%d`, tt.code)) || !strings.Contains(string(data), tt.says) {
			t.Errorf("%s: %s; want %d saying %q", tt.body, data, tt.code, tt.says)
		}
	}
}

// TestSharedSessionOutlivesALongCall: with sessions shared in PostgreSQL,
// a session whose call runs longer than serve.session_idle_timeout is not
// idle: its next request finds it.
func TestSharedSessionOutlivesALongCall(t *testing.T) {
	db := testenv.PostgresDatabase(t)
	shared := fmt.Sprintf("store: {url: %q, audit_key: %q}\n", db, filepath.Join(t.TempDir(), "audit.key"))
	f := start(t, shared, &gateway.Options{Serve: config.Serve{SessionIdleTimeout: time.Second}, StateKey: make([]byte, 32)})
	send := rawSession(t, f, `{}`)
	go func() {
		time.Sleep(3 * time.Second) // three idle timeouts
		os.WriteFile(f.mark+".go", nil, 0o644)
	}()
	resp := send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w__wait","arguments":{}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"done"`) {
		t.Fatalf("the long call: %s %s", resp.Status, body)
	}
	resp = send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the request after the long call: %s, want the session still there", resp.Status)
	}
}

// TestSessionBatchWithoutVersionHeader: a 2025-11-25 session refuses a
// batch even when the request leaves Mcp-Protocol-Version out: the
// session's negotiated version has no batches, and nothing of it runs.
func TestSessionBatchWithoutVersionHeader(t *testing.T) {
	f := start(t, "", nil)
	send := rawSession(t, f, `{}`)
	init := send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	init.Body.Close()
	sid := init.Request.Header.Get("Mcp-Session-Id")
	req := newPost(t, f.url, "", `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"w__note","arguments":{}}}]`)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), "batching is not supported") {
		t.Errorf("a batch without the version header: %s %s, want 400 (no batches since 2025-06-18)", resp.Status, data)
	}
}

// TestInitializeUnderTheHeaderOf2026: an initialize sent with the header of
// a version that has none is told what to send instead.
func TestInitializeUnderTheHeaderOf2026(t *testing.T) {
	f := start(t, "", nil)
	code, _, body := post(t, f, stateless, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "has no initialize") || strings.Contains(body, "Mcp-Session-Id") {
		t.Errorf("initialize under 2026-07-28's header: %d %q", code, body)
	}
}

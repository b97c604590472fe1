package issues_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/servers/issues"
)

const (
	era2026 = "2026-07-28"
	era2025 = "2025-11-25"
)

// fixture is a running issue server on loopback with its own test issuer.
type fixture struct {
	iss      *bearertest.Issuer
	url      string // http://127.0.0.1:port, also the resource
	logs     *testenv.Buffer
	srv      *issues.Server
	verifier *bearer.Verifier
}

type fixtureOptions struct {
	server        issues.Options
	introspection bool
}

func start(t *testing.T, fo *fixtureOptions) *fixture {
	t.Helper()
	if fo == nil {
		fo = &fixtureOptions{}
	}
	iss := bearertest.New(t, nil)
	ln, base := testenv.Listen(t)
	logs := &testenv.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	vo := &bearer.Options{TenantClaim: "tenant", Logger: logger}
	if fo.introspection {
		vo.Introspection = &bearer.Introspection{URL: iss.IntrospectionURL, CacheTTL: -1}
	}
	v, err := bearer.NewVerifier(iss.URL, base, vo)
	if err != nil {
		t.Fatal(err)
	}
	so := fo.server
	so.Logger = logger
	srv, err := issues.New(context.Background(), v, &so)
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := serve(srv, ln)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		srv.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	return &fixture{iss: iss, url: base, logs: logs, srv: srv, verifier: v}
}

// serve runs srv on ln until cancel is called; done then yields what Serve
// returned.
func serve(srv *issues.Server, ln net.Listener) (cancel context.CancelFunc, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	return cancel, served
}

// token mints a good token for the fixture's resource.
func (f *fixture) token(t *testing.T, tenant, subject string, scopes ...string) string {
	t.Helper()
	return f.iss.Mint(t, f.iss.Claims(f.url, tenant, subject, scopes...), nil)
}

// connect opens an SDK client session over Streamable HTTP with token, on
// protocol version era, and checks the negotiated version is want.
func (f *fixture) connect(t *testing.T, token, era, want string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "issues-test", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   f.url + issues.Endpoint,
		HTTPClient: &http.Client{Transport: bearertest.Transport(token, nil), Timeout: 30 * time.Second},
	}
	cs, err := client.Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect on %s: %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Fatalf("negotiated protocol version = %q, want %q", got, want)
	}
	return cs
}

// call runs a tool and decodes its structured content into out. It fails
// the test on a protocol error; a tool error is returned as text.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) (toolError string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	if out != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, data, err)
		}
	}
	return ""
}

// httpResult is a raw HTTP exchange.
type httpResult struct {
	status int
	header http.Header
	body   string
}

// post sends a raw JSON-RPC body to the MCP endpoint. headers are
// name/value pairs; "Authorization" is set from token when it is not empty.
func (f *fixture) post(t *testing.T, token, body string, headers ...string) httpResult {
	t.Helper()
	h := []string{
		"Content-Type", "application/json",
		"Accept", "application/json, text/event-stream",
		"Mcp-Protocol-Version", era2025,
	}
	if token != "" {
		h = append(h, "Authorization", "Bearer "+token)
	}
	return f.send(t, http.MethodPost, issues.Endpoint, strings.NewReader(body), append(h, headers...)...)
}

func (f *fixture) get(t *testing.T, path string, headers ...string) httpResult {
	t.Helper()
	return f.send(t, http.MethodGet, path, nil, headers...)
}

// send makes a request to path on the server. headers are name/value
// pairs, set in order; "Host" sets the request's host.
func (f *fixture) send(t *testing.T, method, path string, body io.Reader, headers ...string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpResult{resp.StatusCode, resp.Header, string(b)}
}

// toolsCall is a 2025-11-25 tools/call request body.
func toolsCall(id int, name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args},
	})
	return string(b)
}

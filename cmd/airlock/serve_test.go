package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer/bearertest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// serveConfig writes an airlock.yaml in dir that runs the bundled
// workspace server over dir, with writes asked for, and returns its path.
func serveConfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "airlock.yaml")
	writeFile(t, path, `servers:
  - id: ws
    command: airlock
    args: [server, workspace, --root, .]
    allowed_tools: [read_file, write_file]
policy:
  tools:
    - {server: ws, tool: read_file, effect: read}
    - {server: ws, tool: write_file, effect: write}
`)
	return path
}

func TestServeUsage(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"serve"}, "serve needs --stdio (one client on stdin and stdout) or --http ADDR"},
		{"both", []string{"serve", "--stdio", "--http", "127.0.0.1:0"}, "serve takes --stdio or --http ADDR, not both"},
		{"every address", []string{"serve", "--http", ":8080"}, "--http :8080 would listen on every address; without inbound authentication (serve.auth in the configuration) the gateway listens on a loopback address only: use --http 127.0.0.1:PORT"},
		{"any address", []string{"serve", "--http", "0.0.0.0:8080"}, "--http 0.0.0.0:8080: 0.0.0.0 is not a loopback address; without inbound authentication"},
		{"a name", []string{"serve", "--http", "example.com:8080"}, "example.com is not a loopback address"},
		{"no port", []string{"serve", "--http", "127.0.0.1"}, `--http "127.0.0.1" must be HOST:PORT`},
		{"a positional", []string{"serve", "--stdio", "extra"}, `serve takes no arguments, got "extra"`},
	}
	for _, tt := range tests {
		r := runCLI(t, dir, "", append(tt.args, "--config", cfg)...).want(t, 2)
		if !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: stderr = %q, want it to contain %q", tt.name, r.stderr, tt.want)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout = %q, want nothing", tt.name, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".airlock")); err == nil {
		t.Error("a refused serve started the host (the state directory exists)")
	}

	// The console with serve.auth: its sign-in must be configured, and
	// operators are named in it, not by a flag.
	const auth = "development: true\nserve:\n  auth: {issuer: \"http://127.0.0.1:9\", resource: \"https://airlock.test/mcp\"}\n"
	noConsole := filepath.Join(dir, "noconsole.yaml")
	writeFile(t, noConsole, readFile(t, cfg)+auth)
	secret := filepath.Join(dir, "secret.yaml")
	writeFile(t, secret, readFile(t, cfg)+auth+"  console: {client_id: c, client_secret_env: AIRLOCK_TEST_UNSET_SECRET}\n")
	for _, tt := range []struct {
		name, cfg string
		args      []string
		want      string
	}{
		{"no serve.console", noConsole, nil, "serve --console with serve.auth needs serve.console: the console's client at http://127.0.0.1:9 (client_id, registered with the redirect URI https://HOST/console/callback)"},
		{"--all-principals", secret, []string{"--all-principals"}, "would make everyone who signs in an operator: name the operators in serve.console.operators instead"},
		{"an unset secret", secret, nil, "serve.console.client_secret_env names AIRLOCK_TEST_UNSET_SECRET, which is not set"},
	} {
		r := runCLI(t, dir, "", append([]string{"serve", "--http", "127.0.0.1:0", "--console", "--config", tt.cfg}, tt.args...)...).want(t, 2)
		if !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: stderr = %q, want it to contain %q", tt.name, r.stderr, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".airlock")); err == nil {
		t.Error("a refused serve --console started the host (the state directory exists)")
	}
}

// TestServeStdio runs the gateway as an MCP client runs a stdio server,
// and calls through it in both eras: a read, and a write that a person
// approves when asked.
func TestServeStdio(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			dir := workdir(t)
			cfg := serveConfig(t, dir)
			cmd := exec.Command(airlockBin, "serve", "--stdio", "--config", cfg)
			cmd.Dir = dir
			stderr := &testenv.Buffer{}
			cmd.Stderr = stderr
			var asked []string
			c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != era {
				t.Errorf("protocol version %s, want %s", got, era)
			}
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if got := strings.Join(names, " "); got != "ws__read_file ws__write_file" {
				t.Errorf("tools = %s", got)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hello") {
				t.Fatalf("read_file: %+v, %v", res, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: map[string]any{"path": "out.txt", "content": "approved"}})
			if err != nil || res.IsError {
				t.Fatalf("write_file: %+v, %v", res, err)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "ws__write_file") {
				t.Errorf("asked %q, want one question about ws__write_file", asked)
			}
			if data, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(data) != "approved" {
				t.Errorf("out.txt = %q, %v", data, err)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit code %d, want 0 once the client hangs up\nstderr:\n%s", code, stderr)
			}
		})
	}
}

var servingAt = regexp.MustCompile(`serving MCP at (http://\S+/mcp)`)

// startServe runs airlock serve with args in dir and returns the endpoint
// it prints on stderr, and the process (killed when the test ends).
func startServe(t *testing.T, dir string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return startServeUntil(t, dir, servingAt, args...)
}

// startServeUntil is startServe, returning the first submatch of re on
// stderr: the address it is listening on before its servers start, say.
func startServeUntil(t *testing.T, dir string, re *regexp.Regexp, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(airlockBin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(pipe)
	var url string
	var seen []string
	for url == "" && lines.Scan() {
		seen = append(seen, lines.Text())
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		cmd.Wait()
		t.Fatalf("no address on stderr:\n%s", strings.Join(seen, "\n"))
	}
	// The rest of its log is shown if the test fails.
	log := &testenv.Buffer{}
	log.Write([]byte(strings.Join(seen, "\n") + "\n"))
	go func() {
		for lines.Scan() {
			log.Write([]byte(lines.Text() + "\n"))
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("airlock serve %s:\n%s", strings.Join(args, " "), log)
		}
	})
	return url, cmd
}

// startServeHTTP starts `airlock serve --http 127.0.0.1:0` in dir with the
// configuration cfg, and returns the process, killed when the test ends,
// and the URL of its MCP endpoint.
func startServeHTTP(t *testing.T, dir, cfg string) (*exec.Cmd, string) {
	t.Helper()
	url, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
	return cmd, url
}

// TestServeHTTP runs the gateway as a shared endpoint: clients of both
// eras list and call, and SIGTERM ends it cleanly.
func TestServeHTTP(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	url, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatalf("%s: connect: %v", era, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: read_file: %+v, %v", era, res, err)
		}
		// Without elicitation, a write needs an approval from the command line.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: map[string]any{"path": "out.txt", "content": "x"}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "airlock approvals approve apr_") {
			t.Errorf("%s: write_file: %+v, %v; want the approval fallback", era, res, err)
		}
		cs.Close()
	}
	r := runCLI(t, dir, "", "approvals", "list", "--json", "--config", cfg).want(t, 0)
	var list struct{ Approvals []json.RawMessage }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Approvals) != 1 {
		t.Errorf("approvals list = %s, want the one pending request (asked twice, one digest)", r.stdout)
	}
	stopServe(t, cmd)
}

// stopServe sends SIGTERM and wants the gateway to end, exit 0.
func stopServe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not stop after SIGTERM")
	}
}

// TestServeWithInboundAuth: with serve.auth the gateway may listen on every
// address; it answers only callers with a token of the configured issuer,
// makes each call for the caller the token names, and tells that caller
// how an operator approves its write.
func TestServeWithInboundAuth(t *testing.T) {
	dir := workdir(t)
	idp := bearertest.New(t, nil)
	const resource = "https://airlock.test/mcp"
	cfg := serveConfig(t, dir)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "development: true\ntenancy: {tenant: ops, user: gateway}\nserve:\n  auth: {issuer: %q, resource: %s, scopes: [mcp:tools], tenant_claim: tenant}\n", idp.URL, resource)
	f.Close()

	url, cmd := startServe(t, dir, "--http", "0.0.0.0:0", "--config", cfg)
	_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	url = "http://127.0.0.1:" + port + "/mcp"

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := `Bearer resource_metadata="https://airlock.test/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`; resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("without a token: %s, WWW-Authenticate %q; want 401 and %q", resp.Status, resp.Header.Get("WWW-Authenticate"), want)
	}

	tok := idp.Mint(t, idp.Claims(resource, "acme", "alice", "mcp:tools"), nil)
	// A caller's access token is for MCP: without a token of their own,
	// the metrics are not served at all.
	for _, bearer := range []string{"", tok} {
		if code, _, body := scrape(t, url, "", bearer); code != http.StatusForbidden || !strings.Contains(body, "serve.metrics_token_env") {
			t.Errorf("GET /metrics with serve.auth and no metrics token (bearer %t): %d %q", bearer != "", code, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: withToken{tok}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}})
	if err != nil || res.IsError {
		t.Fatalf("read_file: %+v, %v", res, err)
	}
	args := map[string]any{"path": "out.txt", "content": "from alice"}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: args})
	id, _ := res.Meta["airlock/approval_id"].(string)
	if err != nil || !res.IsError || id == "" ||
		!strings.Contains(res.Content[0].(*mcp.TextContent).Text, "The request is for tenant acme, user alice: an operator approves it with airlock approvals approve "+id+" --all-principals") {
		t.Fatalf("write_file: %+v, %v; want the approval fallback naming alice", res, err)
	}
	// Tenancy's own approvals are not alice's; an operator approves hers.
	runCLI(t, dir, "", "approvals", "approve", id, "--config", cfg).want(t, exitUsage)
	runCLI(t, dir, "", "approvals", "approve", id, "--all-principals", "--config", cfg).want(t, exitOK)
	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: args}); err != nil || res.IsError {
		t.Fatalf("write_file after approval: %+v, %v", res, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "out.txt")); string(data) != "from alice" {
		t.Errorf("out.txt = %q, %v", data, err)
	}
	cs.Close()
	stopServe(t, cmd)

	r := runCLI(t, dir, "", "audit", "--json", "--config", cfg).want(t, exitOK)
	results := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct{ Event, Tenant, User string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "result" {
			results++
			if e.Tenant != "acme" || e.User != "alice" {
				t.Errorf("result event for %s/%s, want acme/alice: %s", e.Tenant, e.User, line)
			}
		}
	}
	if results != 3 || strings.Contains(r.stdout, tok) {
		t.Errorf("audit: %d results (want 3), or the token in it:\n%s", results, r.stdout)
	}
}

// withToken sends every request with a bearer token.
type withToken struct{ token string }

func (b withToken) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// TestTuneGC: serving over HTTP, the collector runs at gcPercent with
// gcMemoryLimit, unless the environment sets GOGC (then neither applies)
// or GOMEMLIMIT (then the limit does not).
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const percent, limit = 123, 456 << 20 // as the runtime set them from the environment
	tests := []struct {
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{nil, gcPercent, gcMemoryLimit},
		{map[string]string{"GOMEMLIMIT": "456MiB"}, gcPercent, limit},
		{map[string]string{"GOGC": "123"}, percent, limit},
		{map[string]string{"GOGC": "123", "GOMEMLIMIT": "456MiB"}, percent, limit},
	}
	for _, tt := range tests {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
		tuneGC(func(k string) string { return tt.env[k] })
		p := debug.SetGCPercent(percent)
		if l := debug.SetMemoryLimit(-1); p != tt.wantPercent || l != tt.wantLimit {
			t.Errorf("with %v: GOGC %d, memory limit %d; want %d, %d", tt.env, p, l, tt.wantPercent, tt.wantLimit)
		}
	}
}

// TestServeCPUProfile: with AIRLOCK_SERVE_CPUPROFILE set, serve writes a
// CPU profile of its process there when it ends.
func TestServeCPUProfile(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	t.Setenv(cpuProfileEnv, prof)
	_, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
	stopServe(t, cmd)
	data, err := os.ReadFile(prof)
	if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b { // gzip, as pprof writes profiles
		t.Errorf("profile %s: %d bytes, %v; want a gzipped profile", prof, len(data), err)
	}
}

// TestServeStdioBadLines: serve --stdio answers each line that is not a
// JSON-RPC message with a JSON-RPC error (not JSON, not a message, a
// batch, longer than the bound), and the session goes on.
func TestServeStdioBadLines(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	data, _ := os.ReadFile(cfg)
	writeFile(t, cfg, string(data)+"limits:\n  max_message_bytes: 1048576\n")
	cmd := exec.Command(airlockBin, "serve", "--stdio", "--config", cfg)
	cmd.Dir = dir
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	exchange := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"notifications/`) {
			return nil
		}
		if !sc.Scan() {
			t.Fatalf("no answer to %.80s; stderr:\n%s", line, stderr)
		}
		return decode(t, sc.Text())
	}
	wantError := func(line string, code float64) {
		t.Helper()
		got := exchange(line)
		if id, present := got["id"]; !present {
			t.Errorf("%.80s: %v, want \"id\": null (JSON-RPC 2.0 §5)", line, got)
		} else if e, _ := got["error"].(map[string]any); id != nil || e == nil || e["code"] != code {
			t.Errorf("%.80s: %v, want a JSON-RPC error %v with id null", line, got, code)
		}
	}
	wantError("garbage{", -32700)
	if got := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); got["id"] != 1.0 || got["result"] == nil {
		t.Fatalf("initialize: %v", got)
	}
	wantError(`{"foo":1}`, -32600)
	wantError(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600)
	wantError(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"`+strings.Repeat("x", 2<<20)+`"}}`, -32600)
	// Ids the SDK cannot echo exactly, a request with id null, and a
	// message that is neither a request nor a response.
	wantError(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600)
	wantError(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600)
	wantError(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, -32600)
	wantError(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x","arguments":{}}}`, -32600)
	if got := exchange(`{"jsonrpc":"2.0","id":5}`); got["id"] != 5.0 || got["error"].(map[string]any)["code"] != -32600.0 {
		t.Errorf("a message with neither method nor result: %v, want -32600 for id 5", got)
	}
	if got := exchange(`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`); got["id"] != 9007199254740991.0 || got["result"] == nil {
		t.Errorf("ping with the largest safe id: %v", got)
	}
	// White space after a message is no part of it; a second value on
	// the line is refused, and the session goes on after both.
	if got := exchange(`{"jsonrpc":"2.0","id":6,"method":"ping"}  ` + "\t"); got["id"] != 6.0 || got["result"] == nil {
		t.Errorf("ping with white space after it: %v", got)
	}
	wantError(`{"jsonrpc":"2.0","id":7,"method":"ping"}{"jsonrpc":"2.0","id":8,"method":"ping"}`, -32700)
	exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	got := exchange(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if res, _ := got["result"].(map[string]any); got["id"] != 4.0 || res == nil || len(res["tools"].([]any)) != 2 {
		t.Errorf("tools/list after the bad lines: %v", got)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve --stdio after its input ended: %v\nstderr:\n%s", err, stderr)
	}
}

var listeningOn = regexp.MustCompile(`listening on (http://\S+);`)

// TestServeAnswersProbesWhileStarting: serve --http takes its address
// before its servers start, and answers probes meanwhile: /healthz 200,
// /readyz and /mcp 503 with Retry-After; once the servers are up (one
// failed: it never answered within its connect_timeout), /readyz is 200.
func TestServeAnswersProbesWhileStarting(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	data, _ := os.ReadFile(cfg)
	writeFile(t, cfg, strings.Replace(string(data), "policy:", `  - id: mute
    command: sleep
    args: ["60"]
    allowed_tools: ["*"]
    connect_timeout: 5s
policy:`, 1))
	base, _ := startServeUntil(t, dir, listeningOn, "--http", "127.0.0.1:0", "--config", cfg)
	get := func(path string) (int, http.Header) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz while starting: %d, want 200", code)
	}
	for _, path := range []string{"/readyz", "/mcp"} {
		if code, h := get(path); code != 503 || h.Get("Retry-After") == "" {
			t.Errorf("%s while starting: %d (Retry-After %q), want 503 with Retry-After", path, code, h.Get("Retry-After"))
		}
	}
	deadline := time.Now().Add(time.Minute)
	for code, _ := get("/readyz"); code != 200; code, _ = get("/readyz") {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz is still %d a minute on, want 200 once the servers are up", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

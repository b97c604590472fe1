package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// scrape GETs the gateway's /metrics (endpoint is its /mcp URL) with the
// given Host header ("" for the URL's own) and bearer token ("" for none;
// one with a space in it is the whole Authorization header).
func scrape(t *testing.T, endpoint, host, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(endpoint, "/mcp")+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" && !strings.Contains(token, " ") {
		token = "Bearer " + token
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

// sample returns the value of the series whose line starts with series
// (name and labels, as Prometheus writes them: labels in name order), or
// "" when the exposition has no such series.
func sample(exposition, series string) string {
	for line := range strings.SplitSeq(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// TestServeMetrics: over HTTP the gateway serves Prometheus metrics of the
// calls it ran (by server, tool and class; a made-up tool name never
// becomes a label), its servers and its approvals, under the names every
// request is checked against.
func TestServeMetrics(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	url, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
			t.Fatalf("read_file: %+v, %v", res, err)
		}
	}
	// Not in the catalog: a JSON-RPC error, counted without its name.
	const madeUp = "ws__exfiltrate_everything"
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: madeUp, Arguments: map[string]any{}}); err == nil {
		t.Fatal("a tool outside the catalog was called")
	}
	// A write without elicitation waits for an approval.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__write_file", Arguments: map[string]any{"path": "out.txt", "content": "x"}}); err != nil || !res.IsError {
		t.Fatalf("write_file: %+v, %v; want the approval fallback", res, err)
	}

	code, hdr, body := scrape(t, url, "", "")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s\n%s", code, hdr.Get("Content-Type"), body)
	}
	for series, want := range map[string]string{
		`airlock_calls_total{class="ok",server="ws",tool="ws__read_file"}`:                 "2",
		`airlock_calls_total{class="unknown_tool",server="",tool=""}`:                      "1",
		`airlock_calls_total{class="approval_required",server="ws",tool="ws__write_file"}`: "1",
		`airlock_call_duration_seconds_count{class="ok",server="ws"}`:                      "2",
		`airlock_server_status{server="ws",status="ready"}`:                                "1",
		`airlock_server_status{server="ws",status="failed"}`:                               "0",
		`airlock_server_calls_in_flight{server="ws"}`:                                      "0",
		`airlock_server_calls_queued{server="ws"}`:                                         "0",
		`airlock_server_max_concurrency{server="ws"}`:                                      "16",
		`airlock_approvals_pending`:                                                        "1",
		`airlock_journal_unknown_outcomes`:                                                 "0",
		`airlock_requests_in_flight`:                                                       "0",
		`airlock_tenant_calls_in_flight`:                                                   "0",
		`airlock_store_up`:                                                                 "1",
	} {
		if got := sample(body, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
	if strings.Contains(body, madeUp) || strings.Contains(body, "hello.txt") {
		t.Errorf("a label holds a made-up tool name or an argument:\n%s", body)
	}
	if sample(body, "go_goroutines") == "" || sample(body, "process_resident_memory_bytes") == "" {
		t.Errorf("no Go or process metrics:\n%.2000s", body)
	}

	// Like every request without a token of its own, a scrape must name
	// a loopback host: a page that rebinds its DNS name is refused.
	if code, _, body := scrape(t, url, "metrics.attacker.example", ""); code == http.StatusOK {
		t.Errorf("GET /metrics for another host: %d\n%.300s", code, body)
	}
	stopServe(t, cmd)
}

// TestServeMetricsToken: with serve.metrics_token_env, /metrics wants that
// bearer token and answers under any host name (a scraper addresses the
// gateway by its IP), while /mcp keeps its Host check; a missing or short
// token stops serve before it starts.
func TestServeMetricsToken(t *testing.T) {
	dir := workdir(t)
	cfg := serveConfig(t, dir)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("serve: {metrics_token_env: AIRLOCK_TEST_METRICS_TOKEN}\n")
	f.Close()

	t.Setenv("AIRLOCK_TEST_METRICS_TOKEN", "")
	r := runCLI(t, dir, "", "serve", "--http", "127.0.0.1:0", "--config", cfg).want(t, exitUsage)
	if !strings.Contains(r.stderr, "serve.metrics_token_env: the host variable AIRLOCK_TEST_METRICS_TOKEN is not set or empty") {
		t.Errorf("empty token: stderr %q", r.stderr)
	}
	t.Setenv("AIRLOCK_TEST_METRICS_TOKEN", "short")
	r = runCLI(t, dir, "", "serve", "--http", "127.0.0.1:0", "--config", cfg).want(t, exitUsage)
	if !strings.Contains(r.stderr, "is shorter than 16 characters") || strings.Contains(r.stderr, "short\n") {
		t.Errorf("short token: stderr %q", r.stderr)
	}
	if strings.Contains(r.stderr, "listening on") {
		t.Errorf("short token: stderr %q; want it refused before anything listens", r.stderr)
	}

	const token = "5f1c0e7d9a4b3c2d1e0f5a6b7c8d9e0f"
	t.Setenv("AIRLOCK_TEST_METRICS_TOKEN", token)
	url, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", cfg)
	const scraperHost = "10.1.2.3:8080"
	for _, tc := range []struct{ name, token string }{{"no token", ""}, {"wrong token", token + "0"}, {"prefix", token[:16]}} {
		code, hdr, body := scrape(t, url, scraperHost, tc.token)
		if code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != `Bearer realm="airlock metrics"` ||
			strings.Contains(body, "airlock_") {
			t.Errorf("%s: %d %q\n%.300s", tc.name, code, hdr.Get("WWW-Authenticate"), body)
		}
	}
	code, _, body := scrape(t, url, scraperHost, token)
	if code != http.StatusOK || sample(body, `airlock_server_status{server="ws",status="ready"}`) != "1" {
		t.Errorf("with the token: %d\n%.500s", code, body)
	}
	// The scheme's name is case-insensitive.
	if code, _, body := scrape(t, url, scraperHost, "bearer "+token); code != http.StatusOK {
		t.Errorf("with the token after \"bearer\": %d\n%.300s", code, body)
	}
	// The token opens /metrics, nothing else: /mcp still wants a loopback
	// host name.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = scraperHost
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("POST /mcp for %s with the metrics token: %s, want it refused", scraperHost, resp.Status)
	}
	stopServe(t, cmd)
}

// withHeader sends every request with one more header.
type withHeader struct{ key, value string }

func (h withHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(req)
}

// TestServeSpans: with the OpenTelemetry environment set, the gateway's
// host sends a span of every call to the collector, a child of the span
// the client propagated: in params._meta (traceparent, as MCP clients
// propagate it) or in the HTTP request's traceparent header.
func TestServeSpans(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
	rc, endpoint := testenv.ServeTraces(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
	dir := workdir(t)
	url, cmd := startServe(t, dir, "--http", "127.0.0.1:0", "--config", serveConfig(t, dir))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const (
		inMeta   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		inHeader = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	)
	c := mcp.NewClient(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}
	params.SetMeta(map[string]any{"traceparent": inMeta})
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("read_file with _meta.traceparent: %+v, %v", res, err)
	}
	cs.Close()
	cs, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: withHeader{"traceparent", inHeader}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ws__read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
		t.Fatalf("read_file with a traceparent header: %+v, %v", res, err)
	}
	cs.Close()
	stopServe(t, cmd) // the host sends its spans as it closes

	parents := map[string]bool{}
	for _, s := range rc.Spans() {
		if s.Name != "tools/call ws__read_file" || s.Attrs["airlock.class"] != "ok" || s.Service != "airlock" {
			t.Errorf("span %q (class %q, service %q)", s.Name, s.Attrs["airlock.class"], s.Service)
		}
		parents["00-"+s.TraceID+"-"+s.ParentSpanID+"-01"] = true
	}
	for _, want := range []string{inMeta, inHeader} {
		if !parents[want] {
			t.Errorf("no span under %s; spans: %+v", want, rc.Spans())
		}
	}
}

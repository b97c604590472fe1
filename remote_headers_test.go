package airlock_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	airlock "github.com/airlockhq/airlock"
)

// TestNullHeaderArgument: SEP-2243. An argument bound to a header
// (x-mcp-header) that is null is sent without its Mcp-Param header where
// the tool's input schema admits null; where it does not, the call is
// invalid_arguments and never sent, since nothing that failed validation
// reaches a server. A value the schema admits goes in its header.
func TestNullHeaderArgument(t *testing.T) {
	var mu sync.Mutex
	var seen []string // "TOOL Mcp-Param-Verbose=VALUE" of each tools/call
	newServer := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
		for name, verbose := range map[string]string{
			"nullable": `{"type": ["boolean", "null"], "x-mcp-header": "Verbose"}`,
			"strict":   `{"type": "boolean", "x-mcp-header": "Verbose"}`,
		} {
			schema := json.RawMessage(`{"type": "object", "properties": {"verbose": ` + verbose + `}}`)
			s.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
		}
		return s
	}
	hs := newHTTPServer(t, newServer, true)
	inner := *hs.handler.Load()
	var recording http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 2026-07-28 requests name their method and tool in headers.
		if r.Header.Get("Mcp-Method") == "tools/call" {
			got := r.Header.Get("Mcp-Name") + " no header"
			if v, ok := r.Header["Mcp-Param-Verbose"]; ok {
				got = r.Header.Get("Mcp-Name") + " Mcp-Param-Verbose=" + strings.Join(v, ",")
			}
			mu.Lock()
			seen = append(seen, got)
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	})
	hs.handler.Store(&recording)
	srv := remote("hdr", hs.url)
	srv.ProtocolVersions = []string{"2026-07-28"}
	cfg := devConfig(t, srv)
	classify(cfg, "hdr", "read", "nullable", "strict")
	h := open(t, cfg)

	wantStatus(t, call(t, h, "hdr__nullable", `{"verbose": null}`), airlock.OK)
	wantStatus(t, call(t, h, "hdr__strict", `{"verbose": null}`), airlock.InvalidArguments)
	wantStatus(t, call(t, h, "hdr__strict", `{"verbose": true}`), airlock.OK)

	mu.Lock()
	defer mu.Unlock()
	want := []string{"nullable no header", "strict Mcp-Param-Verbose=true"}
	if !slices.Equal(seen, want) {
		t.Errorf("tools/call requests the server saw = %q, want %q", seen, want)
	}
}

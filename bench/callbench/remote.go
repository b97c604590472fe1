package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// remoteCalls times the echo tool over Streamable HTTP on loopback: a bare
// go-sdk client against Airlock's remote path, both calling one server.
func remoteCalls(ctx context.Context, calls, rounds int, state string) (bareLat, hostLat []time.Duration, err error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "callbench", Version: "1"}, nil)
	type text struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a text) (*mcp.CallToolResult, text, error) {
			return nil, a, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()
	endpoint := ts.URL + "/mcp"

	client := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("bare client: %v", err)
	}
	defer cs.Close()

	cfg := &config.Config{Dir: state, Development: true,
		Servers: []config.Server{{
			ID: "bench", Transport: "http", URL: endpoint, AllowedHosts: []string{"127.0.0.1"},
			AllowedTools: []string{"*"}, ProtocolVersions: []string{"2026-07-28", "2025-11-25"},
			RequestTimeout: 30 * time.Second, ConnectTimeout: 5 * time.Second, ProbeTimeout: 5 * time.Second,
			StreamReadTimeout: time.Minute, TerminateOnClose: true, QueueTimeout: 10 * time.Second, MaxConcurrency: 16,
		}},
		Limits: config.Limits{MaxPages: 100, MaxTools: 1000, MaxDescription: 2000, MaxMessageBytes: 16 << 20},
		Policy: config.Policy{Tools: []config.ToolClass{{Server: "bench", Tool: "echo", Effect: "read", Source: "bench"}}}}
	h, err := airlock.Open(ctx, cfg, &airlock.Options{StateDir: state})
	if err != nil {
		return nil, nil, err
	}
	defer h.Close()
	if st := h.Servers()[0]; st.Err != nil {
		return nil, nil, st.Err
	}
	snap := h.Snapshot()
	args := json.RawMessage(`{"text":"hello, benchmark"}`)
	return alternate(calls, rounds,
		func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, benchmark"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		},
		func() error {
			if r := h.Call(ctx, snap, airlock.Call{Name: "bench__echo", Arguments: args}); r.Status != airlock.OK {
				return r.Err
			}
			return nil
		})
}

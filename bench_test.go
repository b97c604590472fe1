package airlock_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// echoServer is an in-process server with one typed tool.
func echoServer() *mcp.Server {
	type text struct {
		Text string `json:"text"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in text) (*mcp.CallToolResult, text, error) {
			return nil, in, nil
		})
	return s
}

func inMemory(b *testing.B, s *mcp.Server) mcp.Transport {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		b.Fatal(err)
	}
	return ct
}

// BenchmarkCall measures the pipeline over in-memory transports, where it
// is not hidden behind process I/O; BenchmarkBareCall is the same call
// through a plain SDK client. bench/callbench compares them over stdio.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	cfg := &config.Config{Dir: b.TempDir(), Policy: config.Policy{Tools: []config.ToolClass{{Server: "echo", Tool: "echo", Effect: "read", Source: "bench"}}}, Servers: []config.Server{{
		ID: "echo", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: bothVersions,
		RequestTimeout: 1e10, ConnectTimeout: 1e10, ProbeTimeout: 1e9,
	}}}
	s := echoServer()
	h, err := airlock.Open(ctx, cfg, &airlock.Options{Dial: func(config.Server) mcp.Transport { return inMemory(b, s) }})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	snap := h.Snapshot()
	call := airlock.Call{Name: "echo__echo", Arguments: []byte(`{"text":"hello, benchmark"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := h.Call(ctx, snap, call); r.Status != airlock.OK {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkBareCall(b *testing.B) {
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, inMemory(b, echoServer()), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello, benchmark"}})
		if err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}

package airlock_test

import (
	"context"
	"runtime"
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

func inMemory(b testing.TB, s *mcp.Server) mcp.Transport {
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
	h := benchHost(b, "read")
	snap := h.Snapshot()
	call := airlock.Call{Name: "echo__echo", Arguments: []byte(`{"text":"hello, benchmark"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := h.Call(b.Context(), snap, call); r.Status != airlock.OK {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkInflightCall is BenchmarkCall with 64 calls in flight on one
// host: what the host's shared state (the server's slots, the calls
// registry, the audit writer) costs when every call contends for it.
func BenchmarkInflightCall(b *testing.B) {
	callInParallel(b, benchHost(b, "read"), airlock.Call{Name: "echo__echo", Arguments: []byte(`{"text":"hello, benchmark"}`)})
}

// callInParallel makes call on h with 64 calls in flight.
func callInParallel(b *testing.B, h *airlock.Host, call airlock.Call) {
	snap := h.Snapshot()
	b.ReportAllocs()
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := h.Call(context.Background(), snap, call); r.Status != airlock.OK {
				b.Error(r.Err)
				return
			}
		}
	})
}

// BenchmarkJournaledCall is BenchmarkCall with the tool a write, so that
// every call commits its intent to the journal (synced) before it is sent,
// and its outcome after: one call at a time, and 64 in flight, where
// concurrent intents can share a commit.
func BenchmarkJournaledCall(b *testing.B) {
	call := airlock.Call{Name: "echo__echo", Arguments: []byte(`{"text":"hello, benchmark"}`)}
	b.Run("sequential", func(b *testing.B) {
		h := benchHost(b, "write")
		snap := h.Snapshot()
		b.ReportAllocs()
		for b.Loop() {
			if r := h.Call(b.Context(), snap, call); r.Status != airlock.OK {
				b.Fatal(r.Err)
			}
		}
	})
	b.Run("inflight=64", func(b *testing.B) { callInParallel(b, benchHost(b, "write"), call) })
}

// benchHost opens a host on an in-process echo server whose tool has the
// given effect, with room for 64 calls in flight.
func benchHost(b *testing.B, effect string) *airlock.Host {
	cfg := &config.Config{Dir: b.TempDir(), Policy: config.Policy{
		Tools: []config.ToolClass{{Server: "echo", Tool: "echo", Effect: effect, Source: "bench"}},
		Rules: []config.Rule{{Server: "echo", Tool: "echo", Decision: "allow", Source: "bench"}},
	}, Servers: []config.Server{{
		ID: "echo", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: bothVersions,
		RequestTimeout: 1e10, ConnectTimeout: 1e10, ProbeTimeout: 1e9, MaxConcurrency: 64,
	}}}
	s := echoServer()
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{Dial: func(config.Server) mcp.Transport { return inMemory(b, s) }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
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

package airlock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// manyServer is an in-process server with 1000 typed tools, listed 100 to
// a page and cacheable for a minute, as bench/callbench's discovery server.
func manyServer() *mcp.Server {
	type text struct {
		Text string `json:"text"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, &mcp.ServerOptions{
		PageSize:     100,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 60000 },
	})
	echo := func(_ context.Context, _ *mcp.CallToolRequest, in text) (*mcp.CallToolResult, text, error) {
		return nil, in, nil
	}
	for i := range 1000 {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("tool_%04d", i), Description: fmt.Sprintf("Tool number %d.", i)}, echo)
	}
	return s
}

// BenchmarkOpenMany measures Open of a host with one 1000-tool server over
// an in-memory transport, where discovery's own cost is not hidden behind
// process start-up; with warm, from the tool list cache.
func BenchmarkOpenMany(b *testing.B) {
	for _, warm := range []bool{false, true} {
		b.Run(fmt.Sprintf("warm=%v", warm), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			cfg := &config.Config{Dir: dir, Servers: []config.Server{{
				ID: "many", Command: "in-process", AllowedTools: []string{"*"}, ProtocolVersions: bothVersions,
				RequestTimeout: 1e10, ConnectTimeout: 1e10, ProbeTimeout: 1e9,
			}}}
			s := manyServer()
			opts := &airlock.Options{StateDir: dir, WarmStart: warm, Dial: func(config.Server) mcp.Transport { return inMemory(b, s) }}
			open := func() {
				h, err := airlock.Open(ctx, cfg, opts)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(h.Snapshot().Tools()); n != 1000 {
					b.Fatalf("got %d tools, want 1000", n)
				}
				h.Close()
			}
			open() // fills the tool list cache
			b.ReportAllocs()
			for b.Loop() {
				open()
			}
		})
	}
}

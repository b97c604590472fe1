package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall measures one tools/call through the HTTP endpoint, a
// 2026-07-28 client's, with many in flight on one session, to the stdio
// server behind the gateway. Its allocations (-benchmem) are the
// client's and the gateway's, not the server's, which runs in a process of
// its own; bench/callbench compares the whole gateway, as airlock serve,
// with the bare go-sdk and mcp-proxy.
//
//	go test -run '^$' -bench Call -benchmem -cpuprofile cpu.prof ./gateway
func BenchmarkCall(b *testing.B) {
	f := start(b, "", nil)
	cs := f.connect(b, stateless, nil)
	args := json.RawMessage(`{"text":"hello, benchmark"}`)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 in flight on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "w__echo", Arguments: args})
			if err != nil || res.IsError {
				b.Errorf("echo: %+v, %v", res, err)
				return
			}
		}
	})
}

package airlock_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// A host with one in-process server: the server's tools are checked,
// named and frozen in a snapshot; calls go through the pipeline.
func Example() {
	ctx := context.Background()

	// An MCP server with one tool. Here it runs in-process; usually it is a
	// command in airlock.yaml.
	type args struct {
		Name string `json:"name"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + a.Name + "!"}}}, nil, nil
		})

	dir, err := os.MkdirTemp("", "airlock-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg, err := config.Parse([]byte(`
servers:
  - id: greeter
    command: unused-the-server-is-in-process
    allowed_tools: [greet]
policy:
  tools:
    - {server: greeter, tool: greet, effect: read}   # reads are allowed without approval
`), "example.yaml", dir)
	if err != nil {
		log.Fatal(err)
	}
	h, err := airlock.Open(ctx, cfg, &airlock.Options{
		Dial: func(config.Server) mcp.Transport {
			st, ct := mcp.NewInMemoryTransports()
			if _, err := server.Connect(ctx, st, nil); err != nil {
				log.Fatal(err)
			}
			return ct
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	snap := h.Snapshot() // the catalog of this model turn
	for _, t := range snap.Tools() {
		fmt.Println(t.Name, t.Effect)
	}
	r := h.Call(ctx, snap, airlock.Call{ID: "call_1", Name: "greeter__greet", Arguments: []byte(`{"name":"Ada"}`)})
	fmt.Println(r.Status, r.Content)
	r = h.Call(ctx, snap, airlock.Call{ID: "call_2", Name: "greeter__greet", Arguments: []byte(`{"name":"Ada","Name":"Eve"}`)})
	fmt.Println(r.Status)
	// Output:
	// greeter__greet read
	// ok Hello, Ada!
	// invalid_arguments
}

package airlock_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

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

// agent opens a host on the configuration at path and runs one model
// turn. (The README shows agent and runTurn; TestReadmeShowsTheExample
// keeps them equal.)
func agent(ctx context.Context, path string, opts *airlock.Options, model func([]airlock.Tool) []airlock.Call) error {
	cfg, err := config.Load(path, nil) // config.Find(dir) finds airlock.yaml
	if err != nil {
		return err
	}
	h, err := airlock.Open(ctx, cfg, opts) // starts the servers, discovers and checks their tools
	if err != nil {
		return err
	}
	defer h.Close() // stops every server, flushes the journal and the audit trail
	runTurn(ctx, h, model)
	return nil
}

// runTurn is one model turn of an agent loop: it freezes the catalog at
// the safe point, shows it to the model, runs the calls the model makes
// against that snapshot, and sends each result where it belongs.
func runTurn(ctx context.Context, h *airlock.Host, model func([]airlock.Tool) []airlock.Call) {
	snap := h.BeginTurn(ctx)                // the safe point: servers' list_changed take effect here
	for _, c := range model(snap.Tools()) { // t.Name, t.Description, t.InputSchema for the provider
		r := h.Call(ctx, snap, c)
		switch {
		case r.Status.ModelVisible(): // ok, invalid_arguments, tool_error, unknown_tool, denied, busy
			fmt.Printf("model, %s: %s %s\n", r.ToolCallID, r.Status, r.Content)
		case r.Status == airlock.ApprovalRequired: // r.ApprovalID: airlock approvals approve ID
			fmt.Printf("person, %s: %s\n", r.ToolCallID, r.Status)
		case r.Status == airlock.OutcomeUnknown: // r.RecoveryID: airlock recovery resolve ID
			fmt.Printf("person, %s: %s\n", r.ToolCallID, r.Status)
		default: // auth_required, contract_error, connection_error, cancelled: not the model's
			fmt.Printf("harness, %s: %s\n", r.ToolCallID, r.Status)
		}
	}
}

// An agent turn: the model's calls go through the pipeline, and each
// result goes to the model, a person or the harness.
func Example_turn() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "read", Description: "Read the notes."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "buy milk"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "write", Description: "Replace the notes."},
		func(context.Context, *mcp.CallToolRequest, struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil, nil
		})
	dir, err := os.MkdirTemp("", "airlock-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "airlock.yaml")
	err = os.WriteFile(path, []byte(`
servers:
  - {id: notes, command: unused-the-server-is-in-process, allowed_tools: ["*"]}
policy:
  tools:
    - {server: notes, tool: read, effect: read}     # allowed
    - {server: notes, tool: write, effect: write}   # asks a person first
`), 0o600)
	if err != nil {
		log.Fatal(err)
	}
	opts := &airlock.Options{Dial: func(config.Server) mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, st, nil); err != nil {
			log.Fatal(err)
		}
		return ct
	}}
	err = agent(ctx, path, opts, func(tools []airlock.Tool) []airlock.Call {
		return []airlock.Call{
			{ID: "call_1", Name: "notes__read"},
			{ID: "call_2", Name: "notes__write", Arguments: []byte(`{"text":"buy bread"}`)},
			{ID: "call_3", Name: "notes__delete"},
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// model, call_1: ok buy milk
	// person, call_2: approval_required
	// model, call_3: unknown_tool unknown tool "notes__delete": it is not in the catalog
}

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With envTestServer set, the test binary serves an MCP server on stdio for
// the CLI under test, and records in envTestMark what it was asked.
const (
	envTestServer = "AIRLOCK_CLI_TEST_SERVER"
	envTestMark   = "AIRLOCK_CLI_TEST_MARK"
)

func serveTestServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow_write", Description: "Record the call, then wait until cancelled.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f, err := os.OpenFile(os.Getenv(envTestMark), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, "called")
				f.Close()
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

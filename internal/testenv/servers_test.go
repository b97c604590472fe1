//go:build linux

package testenv_test

import (
	"context"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestServers starts each server the package provides, as the tests of other
// packages will, and checks that it speaks MCP over stdio and that closing
// the session leaves nothing of its process group running.
func TestServers(t *testing.T) {
	tests := []struct {
		name         string
		command      func(t *testing.T) *exec.Cmd
		tool         string
		args         map[string]any
		wantText     string
		wantProtocol string
	}{
		{
			name: "server-everything",
			command: func(t *testing.T) *exec.Cmd {
				node, script := testenv.EverythingServer(t)
				return exec.Command(node, script, "stdio")
			},
			tool:     "echo",
			args:     map[string]any{"message": "hello"},
			wantText: "Echo: hello",
			// The TypeScript SDK has no server/discover, so the client falls
			// back to initialize.
			wantProtocol: "2025-11-25",
		},
		{
			name: "go-sdk everything-server",
			command: func(t *testing.T) *exec.Cmd {
				return exec.Command(testenv.GoSDKEverythingServer(t))
			},
			tool:         "test_simple_text",
			wantText:     "This is a simple text response for testing.",
			wantProtocol: "2026-07-28",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.command(t)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			ctx := context.Background()
			// No roots capability: server-everything asks for roots 350ms after
			// initialization, and a session closed before that leaves it
			// waiting for the answer instead of exiting at the end of stdin.
			client := mcp.NewClient(&mcp.Implementation{Name: "testenv", Version: "v0.0.0"},
				&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			closed := false
			defer func() {
				if !closed {
					cs.Close()
				}
			}()
			if got := cs.InitializeResult().ProtocolVersion; got != tt.wantProtocol {
				t.Errorf("negotiated protocol %q, want %q", got, tt.wantProtocol)
			}

			// Setpgid makes the server the leader of its own group.
			pgid := cmd.Process.Pid
			procs, err := testenv.ProcsInGroup(pgid)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(procs, pgid) {
				t.Errorf("ProcsInGroup(%d) = %v, want it to contain the server", pgid, procs)
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatalf("CallTool(%s): %v", tt.tool, err)
			}
			var got []string
			for _, c := range res.Content {
				if text, ok := c.(*mcp.TextContent); ok {
					got = append(got, text.Text)
				}
			}
			if diff := cmp.Diff([]string{tt.wantText}, got); diff != "" || res.IsError {
				t.Errorf("CallTool(%s) text (-want +got):\n%s\nisError: %t", tt.tool, diff, res.IsError)
			}

			closed = true
			if err := cs.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			procs, err = testenv.ProcsInGroup(pgid)
			if err != nil {
				t.Fatal(err)
			}
			if len(procs) != 0 {
				t.Errorf("after Close, ProcsInGroup(%d) = %v, want none", pgid, procs)
			}
		})
	}
}

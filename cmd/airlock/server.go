package main

import (
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

// serveWorkspace serves the workspace server on stdin/stdout. Its log goes
// to stderr: stdout belongs to the protocol.
func (e *env) serveWorkspace(o *options, _ []string) error {
	root := o.root
	if root == "" {
		root = os.Getenv("AGENT_WORKSPACE_ROOT")
	}
	if root == "" {
		var err error
		if root, err = os.Getwd(); err != nil {
			return usageError("cannot determine the working directory: %v", err)
		}
		if err := checkImplicitRoot(root); err != nil {
			return err
		}
	}
	protect, err := protectedPaths(o.protect)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	srv, err := workspace.New(root, &workspace.Options{Logger: logger, Version: version(), AllowHardLinks: o.allowHardLinks, Protect: protect})
	if err != nil {
		return usageError("%v", err)
	}
	defer srv.Close()
	if err := srv.Run(e.ctx, &mcp.StdioTransport{}); err != nil && e.ctx.Err() == nil {
		return err
	}
	return nil
}

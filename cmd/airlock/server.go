package main

import (
	"flag"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/servers/workspace"
)

func (e *env) server(args []string) error {
	if len(args) == 0 {
		return usageError("server needs a name: airlock server workspace [--root DIR], or airlock server issues --issuer URL --resource URL")
	}
	switch args[0] {
	case "workspace":
		return e.serveWorkspace(args[1:])
	case "issues":
		return e.serveIssues(args[1:])
	default:
		return usageError("unknown server %q; the bundled servers are: workspace, issues", args[0])
	}
}

// serveWorkspace serves the workspace server on stdin/stdout. Its log goes
// to stderr: stdout belongs to the protocol.
func (e *env) serveWorkspace(args []string) error {
	var root string
	var allowHardLinks bool
	fs := flag.NewFlagSet("server workspace", flag.ContinueOnError)
	fs.StringVar(&root, "root", "", "the directory to serve (default: $AGENT_WORKSPACE_ROOT, else the working directory)")
	fs.BoolVar(&allowHardLinks, "allow-hard-links", false,
		"read, search and replace files with more than one hard link (another name for such a file may be outside the root)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return e.help(err, "airlock server workspace [--root DIR] [--allow-hard-links]")
	}
	if len(pos) > 0 {
		return usageError("server workspace takes no arguments, got %q", pos[0])
	}
	if root == "" {
		root = os.Getenv("AGENT_WORKSPACE_ROOT")
	}
	if root == "" {
		if root, err = os.Getwd(); err != nil {
			return usageError("cannot determine the working directory: %v", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	srv, err := workspace.New(root, &workspace.Options{Logger: logger, Version: version(), AllowHardLinks: allowHardLinks})
	if err != nil {
		return usageError("%v", err)
	}
	defer srv.Close()
	if err := srv.Run(e.ctx, &mcp.StdioTransport{}); err != nil && e.ctx.Err() == nil {
		return err
	}
	return nil
}
